/* Kernels of the forms the graph passes make: fully_connected, fused
 * activations, gelu. */
#include <math.h>
#include <string.h>

#include "backends/interp/kernels.h"

/* The fused activation computes what its node would (act_scalar is the
 * unfused kernels' formula too), so fusing never changes a result. */
void kernel_apply_act(const Node *n, Tensor *t) {
    ActKind act = node_attr_act(n, AK_act);
    if (act == ACT_NONE)
        return;
    double alpha = node_attr_float(n, AK_act_alpha, 0), beta = node_attr_float(n, AK_act_beta, 0);
    int64_t count = tensor_numel(t);
    if (t->type.elem == ELEM_F32) {
        /* Unfused, silu is two f32 nodes: the sigmoid is rounded to f32 before
         * the product, so it is here too. */
        float *p = t->data;
        for (int64_t i = 0; i < count; i++)
            p[i] = act == ACT_SILU
                       ? (float)(p[i] * (double)(float)act_scalar(ACT_SIGMOID, p[i], 0, 0))
                       : (float)act_scalar(act, p[i], alpha, beta);
        return;
    }
    for (int64_t i = 0; i < count; i++)
        tensor_set_f64(t, i, act_scalar(act, tensor_get_f64(t, i), alpha, beta));
}

/* y[m][n] = sum_k x[m][k] w[k][n] + b[n], accumulated in double. */
bool k_fully_connected(const KernelArgs *a) {
    const Tensor *X = a->in[0], *W = a->in[1], *B = a->in[2];
    Tensor *Y = a->out[0];
    int64_t M = X->type.dims[0], K = X->type.dims[1], N = W->type.dims[1];
    if (X->type.elem == ELEM_F32) {
        const float *x = X->data, *w = W->data, *b = B->data;
        float *y = Y->data;
        for (int64_t m = 0; m < M; m++) {
            for (int64_t n = 0; n < N; n++)
                y[m * N + n] = b[n];
            for (int64_t k = 0; k < K; k++) {
                float xv = x[m * K + k];
                const float *wr = w + k * N;
                for (int64_t n = 0; n < N; n++)
                    y[m * N + n] += xv * wr[n];
            }
        }
    } else {
        for (int64_t m = 0; m < M; m++)
            for (int64_t n = 0; n < N; n++) {
                double acc = tensor_get_f64(B, n);
                for (int64_t k = 0; k < K; k++)
                    acc += tensor_get_f64(X, m * K + k) * tensor_get_f64(W, k * N + n);
                tensor_set_f64(Y, m * N + n, acc);
            }
    }
    kernel_apply_act(a->n, Y);
    return true;
}

bool k_gelu(const KernelArgs *a) {
    int64_t n = tensor_numel(a->in[0]);
    for (int64_t i = 0; i < n; i++) {
        double x = tensor_get_f64(a->in[0], i);
        tensor_set_f64(a->out[0], i, 0.5 * x * (1 + erf(x / sqrt(2.0))));
    }
    return true;
}
