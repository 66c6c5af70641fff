/* Kernels of the forms the graph passes make: fully_connected, fused
 * activations, gelu, winograd_conv. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/interp/kernels.h"
#include "core/winograd.h"

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

/* A fused residual add (conv's operand 3, fuse-conv-add): the result plus
 * the summand, rounded to the result's kind as the add node would, before
 * the activation. */
void kernel_apply_summand(const KernelArgs *a, int op) {
    if (a->n->nops <= op)
        return;
    const Tensor *r = a->in[op];
    Tensor *t = a->out[0];
    int64_t count = tensor_numel(t);
    if (t->type.elem == ELEM_F32) {
        float *p = t->data;
        const float *q = r->data;
        for (int64_t i = 0; i < count; i++)
            p[i] += q[i];
        return;
    }
    for (int64_t i = 0; i < count; i++)
        tensor_set_f64(t, i, tensor_get_f64(t, i) + tensor_get_f64(r, i));
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

/* ---- winograd_conv ---------------------------------------------------------- */

/* Winograd's algorithm itself (core/winograd.h), in double: per image,
 * output channel and m x m tile, A^T [sum_c U_c . (B^T d_c B)] A, with d
 * read as 0 outside the input. Slow, and only the reference the libjit
 * kernel's tests compare with; rounding u's f32 entries is the pass's. */
static void wino_tile(const WinoTransform *t, const float *x, int64_t H, int64_t W, int64_t y0,
                      int64_t x0, double v[WINO_MAX_ALPHA][WINO_MAX_ALPHA]) {
    int a = t->alpha;
    double d[WINO_MAX_ALPHA][WINO_MAX_ALPHA], bd[WINO_MAX_ALPHA][WINO_MAX_ALPHA];
    for (int i = 0; i < a; i++)
        for (int j = 0; j < a; j++) {
            int64_t yy = y0 + i, xx = x0 + j;
            d[i][j] = yy >= 0 && yy < H && xx >= 0 && xx < W ? x[yy * W + xx] : 0;
        }
    for (int i = 0; i < a; i++)
        for (int j = 0; j < a; j++) {
            double s = 0;
            for (int k = 0; k < a; k++)
                s += t->bt[i][k] * d[k][j];
            bd[i][j] = s;
        }
    for (int i = 0; i < a; i++)
        for (int j = 0; j < a; j++) {
            double s = 0;
            for (int k = 0; k < a; k++)
                s += bd[i][k] * t->bt[j][k];
            v[i][j] = s;
        }
}

bool k_winograd_conv(const KernelArgs *a) {
    const Tensor *X = a->in[0], *U = a->in[1], *B = a->n->nops > 2 ? a->in[2] : NULL;
    Tensor *Y = a->out[0];
    const WinoTransform *t = wino_of_rows(U->type.dims[0]);
    if (!t || X->type.elem != ELEM_F32)
        return kernel_fail(a, "winograd_conv takes f32 and a 16- or 36-row transformed filter");
    int k;
    const int64_t *p = node_attr_ints(a->n, AK_pads, &k);
    int64_t N = X->type.dims[0], C = X->type.dims[1], H = X->type.dims[2], W = X->type.dims[3];
    int64_t M = Y->type.dims[1], OH = Y->type.dims[2], OW = Y->type.dims[3];
    int64_t pt = p ? p[0] : 0, pl = p ? p[1] : 0;
    int al = t->alpha, mt = t->m;
    const float *x = X->data, *u = U->data;
    float *y = Y->data;
    double *acc = malloc(sizeof(double) * (size_t)(M * al * al));
    if (!acc)
        return kernel_fail(a, "out of memory for the tile sums");
    for (int64_t n = 0; n < N; n++)
        for (int64_t ty = 0; ty < OH; ty += mt)
            for (int64_t tx = 0; tx < OW; tx += mt) {
                for (int64_t i = 0; i < M * al * al; i++)
                    acc[i] = 0;
                for (int64_t c = 0; c < C; c++) {
                    double v[WINO_MAX_ALPHA][WINO_MAX_ALPHA];
                    wino_tile(t, x + (n * C + c) * H * W, H, W, ty - pt, tx - pl, v);
                    for (int64_t m = 0; m < M; m++)
                        for (int xi = 0; xi < al * al; xi++)
                            acc[m * al * al + xi] += u[((int64_t)xi * M + m) * C + c] * v[xi / al][xi % al];
                }
                for (int64_t m = 0; m < M; m++) {
                    const double *mm = acc + m * al * al;
                    double bias = B ? tensor_get_f64(B, m) : 0;
                    for (int r = 0; r < mt && ty + r < OH; r++)
                        for (int q = 0; q < mt && tx + q < OW; q++) {
                            double s = 0;
                            for (int i = 0; i < al; i++)
                                for (int j = 0; j < al; j++)
                                    s += t->at[r][i] * mm[i * al + j] * t->at[q][j];
                            y[((n * M + m) * OH + ty + r) * OW + tx + q] = (float)(s + bias);
                        }
                }
            }
    free(acc);
    kernel_apply_summand(a, 3);
    kernel_apply_act(a->n, Y);
    return true;
}
