/* Kernels of the forms the graph passes make: fully_connected, fused
 * activations, gelu. */
#include <math.h>
#include <string.h>

#include "backends/interp/kernels.h"

static double sigmoid(double x) {
    return x >= 0 ? 1 / (1 + exp(-x)) : exp(x) / (1 + exp(x));
}

/* The names check_act (core/infer.c) accepts. */
static double act_value(const char *act, double x, double alpha, double beta) {
    if (!strcmp(act, "relu"))
        return x > 0 ? x : 0;
    if (!strcmp(act, "clip"))
        return x < alpha ? alpha : x > beta ? beta : x;
    if (!strcmp(act, "sigmoid"))
        return sigmoid(x);
    if (!strcmp(act, "tanh"))
        return tanh(x);
    if (!strcmp(act, "leaky_relu"))
        return x < 0 ? alpha * x : x;
    if (!strcmp(act, "silu"))
        return x * sigmoid(x);
    return x;
}

void kernel_apply_act(const Node *n, Tensor *t) {
    const char *act = node_attr_str(n, AK_act, NULL);
    if (!act)
        return;
    double alpha = node_attr_float(n, AK_act_alpha, 0), beta = node_attr_float(n, AK_act_beta, 0);
    int64_t count = tensor_numel(t);
    if (t->type.elem == ELEM_F32 && !strcmp(act, "relu")) {
        float *p = t->data;
        for (int64_t i = 0; i < count; i++)
            p[i] = p[i] > 0 ? p[i] : 0;
        return;
    }
    for (int64_t i = 0; i < count; i++)
        tensor_set_f64(t, i, act_value(act, tensor_get_f64(t, i), alpha, beta));
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
