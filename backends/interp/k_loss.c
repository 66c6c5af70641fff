/* Loss kernels. nll_loss picks, at every position, minus the log-probability
 * of the target class (times the class weight), then keeps the per-position
 * losses or sums them, or averages them by the weights of the targets that
 * counted. Sums run in double. */
#include <string.h>

#include "backends/interp/kernels.h"

bool k_nll_loss(const KernelArgs *a) {
    const Tensor *X = a->in[0], *T = a->in[1], *W = a->n->nops == 3 ? a->in[2] : NULL;
    Tensor *Y = a->out[0];
    const Type *xt = &X->type;
    int64_t batch = xt->dims[0], classes = xt->dims[1], inner = 1;
    for (int i = 2; i < xt->rank; i++)
        inner *= xt->dims[i];
    bool has_ignore = node_has_attr(a->n, AK_ignore_index);
    int64_t ignore = node_attr_int(a->n, AK_ignore_index, 0);
    int red = node_attr_enum(a->n, AK_reduction, RED_MEAN);
    bool none = red == RED_NONE, mean = red == RED_MEAN;
    double sum = 0, weights = 0;
    for (int64_t j = 0; j < batch * inner; j++) {
        int64_t t = tensor_get_i64(T, j), n = j / inner, in = j % inner;
        double loss = 0, w = 0;
        if (!has_ignore || t != ignore) {
            if (t < 0 || t >= classes)
                return kernel_fail(a, "target %lld out of range [0, %lld)", (long long)t,
                                   (long long)classes);
            w = W ? tensor_get_f64(W, t) : 1;
            loss = -w * tensor_get_f64(X, (n * classes + t) * inner + in);
        }
        if (none)
            tensor_set_f64(Y, j, loss);
        sum += loss;
        weights += w;
    }
    if (!none)
        tensor_set_f64(Y, 0, mean ? sum / weights : sum);
    return true;
}
