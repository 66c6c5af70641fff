/* Neural-network kernels: matrix products, einsum and determinants,
 * convolution and its transpose, pooling, normalisations, the softmax
 * family and cumulative sums.
 *
 * Convolution is im2col followed by a blocked f32 matrix product (skipped
 * for 1x1 stride-1 unpadded windows, where the input already is the column
 * matrix); transposed convolution is the same product the other way round,
 * W' * X followed by col2im. Other element kinds take a plain
 * double-precision path. This is the reference, so the blocking only aims
 * at "seconds for a ResNet-50". */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/interp/kernels.h"
#include "core/det.h"

/* ---- matrix products ------------------------------------------------------ */

/* C[m][n] += A[m][k] * B[k][n], all row-major with leading dimensions. Four
 * rows of C at a time over a block of columns, so each row of B feeds four
 * accumulating rows that stay in L1. */
static void sgemm_acc(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda,
                      const float *B, int64_t ldb, float *C, int64_t ldc) {
    enum { NB = 256 };
    for (int64_t j0 = 0; j0 < N; j0 += NB) {
        int64_t nb = N - j0 < NB ? N - j0 : NB;
        int64_t m = 0;
        for (; m + 4 <= M; m += 4) {
            float *c0 = C + m * ldc + j0, *c1 = c0 + ldc, *c2 = c1 + ldc, *c3 = c2 + ldc;
            for (int64_t k = 0; k < K; k++) {
                const float *b = B + k * ldb + j0;
                float a0 = A[m * lda + k], a1 = A[(m + 1) * lda + k];
                float a2 = A[(m + 2) * lda + k], a3 = A[(m + 3) * lda + k];
                for (int64_t j = 0; j < nb; j++) {
                    float bj = b[j];
                    c0[j] += a0 * bj;
                    c1[j] += a1 * bj;
                    c2[j] += a2 * bj;
                    c3[j] += a3 * bj;
                }
            }
        }
        for (; m < M; m++) {
            float *c = C + m * ldc + j0;
            for (int64_t k = 0; k < K; k++) {
                const float *b = B + k * ldb + j0;
                float av = A[m * lda + k];
                for (int64_t j = 0; j < nb; j++)
                    c[j] += av * b[j];
            }
        }
    }
}

/* Generic C = A * B on element offsets of any kind (accumulates in double
 * for floats, wrapping int64 for integers). */
static void gemm_generic(int64_t M, int64_t N, int64_t K, const Tensor *A, int64_t a0,
                         int64_t sam, int64_t sak, const Tensor *B, int64_t b0, int64_t sbk,
                         int64_t sbn, Tensor *C, int64_t c0) {
    bool flt = elem_is_float(C->type.elem);
    for (int64_t m = 0; m < M; m++) {
        for (int64_t n = 0; n < N; n++) {
            double acc = 0;
            uint64_t iacc = 0;
            for (int64_t k = 0; k < K; k++) {
                int64_t ia = a0 + m * sam + k * sak, ib = b0 + k * sbk + n * sbn;
                if (flt)
                    acc += tensor_get_f64(A, ia) * tensor_get_f64(B, ib);
                else
                    iacc += (uint64_t)tensor_get_i64(A, ia) * (uint64_t)tensor_get_i64(B, ib);
            }
            if (flt)
                tensor_set_f64(C, c0 + m * N + n, acc);
            else
                tensor_set_i64(C, c0 + m * N + n, (int64_t)iacc);
        }
    }
}

/* numpy matmul: 1-D operands are promoted, batch dimensions broadcast. */
bool k_matmul(const KernelArgs *a) {
    const Tensor *A = a->in[0], *B = a->in[1];
    Tensor *C = a->out[0];
    MatmulShape ms;
    matmul_shape(&ms, &A->type, &B->type);
    int64_t M = ms.m, K = ms.k, N = ms.n;
    bool f32 = A->type.elem == ELEM_F32;
    if (f32)
        memset(C->data, 0, tensor_bytes(C));
    for (int64_t b = 0; b < ms.nbatch; b++, bcast_next(&ms.bc)) {
        int64_t offa = ms.bc.off[0] * M * K, offb = ms.bc.off[1] * K * N, offc = b * M * N;
        if (f32)
            sgemm_acc(M, N, K, (const float *)A->data + offa, K, (const float *)B->data + offb,
                      N, (float *)C->data + offc, N);
        else
            gemm_generic(M, N, K, A, offa, K, 1, B, offb, N, 1, C, offc);
    }
    return true;
}

/* alpha * A' * B' + beta * C, with transposes read through strides. */
bool k_gemm(const KernelArgs *a) {
    const Node *n = a->n;
    const Tensor *A = a->in[0], *B = a->in[1], *Cin = n->nops == 3 ? a->in[2] : NULL;
    Tensor *Y = a->out[0];
    bool ta = node_attr_int(n, AK_trans_a, 0), tb = node_attr_int(n, AK_trans_b, 0);
    double alpha = node_attr_float(n, AK_alpha, 1.0f), beta = node_attr_float(n, AK_beta, 1.0f);
    int64_t M = Y->type.dims[0], N = Y->type.dims[1];
    int64_t K = ta ? A->type.dims[0] : A->type.dims[1];
    int64_t sam = ta ? 1 : K, sak = ta ? M : 1, sbk = tb ? 1 : N, sbn = tb ? K : 1;
    if (Y->type.elem == ELEM_F32 && !ta && !tb) {
        memset(Y->data, 0, tensor_bytes(Y));
        sgemm_acc(M, N, K, A->data, K, B->data, N, Y->data, N);
    } else if (Y->type.elem == ELEM_F32 && !ta && tb) {
        /* B is [N][K]: transpose it once so the product streams rows. */
        float *bt = malloc((size_t)(K * N ? K * N : 1) * sizeof(float));
        if (!bt)
            return kernel_fail(a, "out of memory");
        const float *b = B->data;
        for (int64_t k = 0; k < K; k++)
            for (int64_t j = 0; j < N; j++)
                bt[k * N + j] = b[j * K + k];
        memset(Y->data, 0, tensor_bytes(Y));
        sgemm_acc(M, N, K, A->data, K, bt, N, Y->data, N);
        free(bt);
    } else {
        gemm_generic(M, N, K, A, 0, sam, sak, B, 0, sbk, sbn, Y, 0);
    }
    Bcast bc;
    const Type *ct[1] = {Cin ? &Cin->type : &Y->type};
    bcast_init(&bc, &Y->type, ct, 1);
    for (int64_t i = 0; i < M * N; i++, bcast_next(&bc)) {
        double v = tensor_get_f64(Y, i) * alpha;
        if (Cin)
            v += beta * tensor_get_f64(Cin, bc.off[0]);
        tensor_set_f64(Y, i, v); /* integers: truncated, out-of-range defined */
    }
    return true;
}

/* ---- einsum and determinants ------------------------------------------------ */

/* Einsum by brute force (core/einsum.h). */
bool k_einsum(const KernelArgs *a) {
    const Node *n = a->n;
    const Type *ops[16];
    for (int i = 0; i < n->nops; i++)
        ops[i] = &a->in[i]->type;
    EinsumSpec s;
    char err[256];
    if (!einsum_parse(node_attr_str(n, AK_equation, ""), n->nops, ops, &s, err, sizeof err))
        return kernel_fail(a, "%s", err);
    const int64_t *dims[16];
    for (int i = 0; i < n->nops; i++)
        dims[i] = a->in[i]->type.dims;
    EinsumLoop l;
    einsum_loop_plan(&s, dims, &l);
    bool flt = elem_is_float(a->out[0]->type.elem);
    int64_t idx[64] = {0}, off[16] = {0};
    for (int64_t o = 0; o < l.out_count; o++) {
        double acc = 0;
        uint64_t iacc = 0;
        for (int64_t r = 0; r < l.red_count; r++) {
            double prod = 1;
            uint64_t iprod = 1;
            for (int k = 0; k < l.nops; k++) {
                if (flt)
                    prod *= tensor_get_f64(a->in[k], off[k]);
                else
                    iprod *= (uint64_t)tensor_get_i64(a->in[k], off[k]);
            }
            acc += prod;
            iacc += iprod;
            einsum_step(&l, 0, idx, off);
        }
        if (flt)
            tensor_set_f64(a->out[0], o, acc);
        else
            tensor_set_i64(a->out[0], o, (int64_t)iacc);
    }
    return true;
}

/* det_lu: core/det.h. */

bool k_det(const KernelArgs *a) {
    const Tensor *X = a->in[0];
    int64_t n = X->type.dims[X->type.rank - 1], nmat = tensor_numel(a->out[0]);
    double *m = malloc((size_t)(n * n + 1) * sizeof(double));
    if (!m)
        return kernel_fail(a, "out of memory");
    for (int64_t b = 0; b < nmat; b++) {
        for (int64_t i = 0; i < n * n; i++)
            m[i] = tensor_get_f64(X, b * n * n + i);
        tensor_set_f64(a->out[0], b, det_lu(m, n));
    }
    free(m);
    return true;
}

/* ---- convolution ---------------------------------------------------------- */

typedef struct ConvGeom {
    Window w;
    int ns;
    int64_t n, c, m, group, cg, mg;
    int64_t in_sp[MAX_RANK], out_sp[MAX_RANK];
    int64_t in_size, out_size, ksize; /* spatial element counts */
} ConvGeom;

static void conv_geom(const KernelArgs *a, ConvGeom *g) {
    const Type *x = &a->in[0]->type, *w = &a->in[1]->type, *y = &a->out[0]->type;
    g->ns = x->rank - 2;
    window_from_node(a->n, g->ns, w, &g->w);
    g->n = x->dims[0];
    g->c = x->dims[1];
    g->m = y->dims[1];
    g->group = g->w.group;
    g->cg = g->c / g->group;
    g->mg = g->m / g->group;
    g->in_size = g->out_size = g->ksize = 1;
    for (int i = 0; i < g->ns; i++) {
        g->in_sp[i] = x->dims[2 + i];
        g->out_sp[i] = y->dims[2 + i];
        g->in_size *= g->in_sp[i];
        g->out_size *= g->out_sp[i];
        g->ksize *= g->w.kernel[i];
    }
}

/* col[(c*ksize + kpos) * out_size + opos] = x[c][input position], 0 in pads. */
static void im2col(const ConvGeom *g, const float *x, float *col) {
    int64_t kidx[MAX_RANK], oidx[MAX_RANK];
    for (int64_t c = 0; c < g->cg; c++) {
        for (int64_t kp = 0; kp < g->ksize; kp++) {
            int64_t r = kp;
            for (int i = g->ns - 1; i >= 0; i--) {
                kidx[i] = r % g->w.kernel[i];
                r /= g->w.kernel[i];
            }
            float *dst = col + (c * g->ksize + kp) * g->out_size;
            memset(oidx, 0, sizeof oidx);
            for (int64_t op = 0; op < g->out_size; op++) {
                int64_t off = 0;
                bool inside = true;
                for (int i = 0; i < g->ns; i++) {
                    int64_t p = oidx[i] * g->w.stride[i] - g->w.pad_begin[i] +
                                kidx[i] * g->w.dilation[i];
                    if (p < 0 || p >= g->in_sp[i]) {
                        inside = false;
                        break;
                    }
                    off = off * g->in_sp[i] + p;
                }
                dst[op] = inside ? x[c * g->in_size + off] : 0.0f;
                for (int i = g->ns - 1; i >= 0; i--) {
                    if (++oidx[i] < g->out_sp[i])
                        break;
                    oidx[i] = 0;
                }
            }
        }
    }
}

static bool pointwise(const ConvGeom *g) {
    for (int i = 0; i < g->ns; i++)
        if (g->w.kernel[i] != 1 || g->w.stride[i] != 1 || g->w.pad_begin[i] ||
            g->w.pad_end[i])
            return false;
    return true;
}

static bool conv_f32(const KernelArgs *a, const ConvGeom *g) {
    const float *x = a->in[0]->data, *w = a->in[1]->data;
    const float *bias = a->n->nops >= 3 ? a->in[2]->data : NULL;
    float *y = a->out[0]->data;
    bool direct = pointwise(g);
    float *col = NULL;
    if (!direct) {
        int64_t n;
        if (__builtin_mul_overflow(g->cg * g->ksize, g->out_size, &n) ||
            (uint64_t)n >= SIZE_MAX / sizeof(float) ||
            !(col = malloc((size_t)(n + 1) * sizeof(float))))
            return kernel_fail(a, "out of memory for the column buffer");
    }
    int64_t kdim = g->cg * g->ksize;
    for (int64_t b = 0; b < g->n; b++) {
        for (int64_t gr = 0; gr < g->group; gr++) {
            const float *xg = x + (b * g->c + gr * g->cg) * g->in_size;
            float *yg = y + (b * g->m + gr * g->mg) * g->out_size;
            for (int64_t m = 0; m < g->mg; m++) {
                float bv = bias ? bias[gr * g->mg + m] : 0.0f;
                for (int64_t p = 0; p < g->out_size; p++)
                    yg[m * g->out_size + p] = bv;
            }
            if (!direct)
                im2col(g, xg, col);
            sgemm_acc(g->mg, g->out_size, kdim, w + gr * g->mg * kdim, kdim, direct ? xg : col,
                      g->out_size, yg, g->out_size);
        }
    }
    free(col);
    return true;
}

/* Any float kind: direct loops in double. */
static bool conv_generic(const KernelArgs *a, const ConvGeom *g) {
    const Tensor *X = a->in[0], *W = a->in[1], *B = a->n->nops >= 3 ? a->in[2] : NULL;
    Tensor *Y = a->out[0];
    int64_t oidx[MAX_RANK], kidx[MAX_RANK];
    for (int64_t b = 0; b < g->n; b++)
        for (int64_t m = 0; m < g->m; m++) {
            int64_t gr = m / g->mg;
            memset(oidx, 0, sizeof oidx);
            for (int64_t op = 0; op < g->out_size; op++) {
                double acc = B ? tensor_get_f64(B, m) : 0;
                for (int64_t c = 0; c < g->cg; c++) {
                    memset(kidx, 0, sizeof kidx);
                    for (int64_t kp = 0; kp < g->ksize; kp++) {
                        int64_t off = 0;
                        bool inside = true;
                        for (int i = 0; i < g->ns && inside; i++) {
                            int64_t p = oidx[i] * g->w.stride[i] - g->w.pad_begin[i] +
                                        kidx[i] * g->w.dilation[i];
                            inside = p >= 0 && p < g->in_sp[i];
                            if (inside)
                                off = off * g->in_sp[i] + p;
                        }
                        if (inside)
                            acc += tensor_get_f64(X, (b * g->c + gr * g->cg + c) * g->in_size +
                                                         off) *
                                   tensor_get_f64(W, (m * g->cg + c) * g->ksize + kp);
                        for (int i = g->ns - 1; i >= 0; i--) {
                            if (++kidx[i] < g->w.kernel[i])
                                break;
                            kidx[i] = 0;
                        }
                    }
                }
                tensor_set_f64(Y, (b * g->m + m) * g->out_size + op, acc);
                for (int i = g->ns - 1; i >= 0; i--) {
                    if (++oidx[i] < g->out_sp[i])
                        break;
                    oidx[i] = 0;
                }
            }
        }
    return true;
}

bool k_conv(const KernelArgs *a) {
    ConvGeom g;
    conv_geom(a, &g);
    bool ok = a->in[0]->type.elem == ELEM_F32 ? conv_f32(a, &g) : conv_generic(a, &g);
    if (ok) {
        kernel_apply_summand(a, 3);
        kernel_apply_act(a->n, a->out[0]);
    }
    return ok;
}

/* ---- transposed convolution ------------------------------------------------ */

/* tgt[kp * in_size + ip]: the output offset that input position ip feeds
 * through kernel tap kp, or -1 when it lands in the cropped padding. The
 * same table serves every batch, group and channel. */
static int64_t *convt_targets(const ConvGeom *g) {
    int64_t *tgt = malloc((size_t)(g->ksize * g->in_size + 1) * sizeof(int64_t));
    if (!tgt)
        return NULL;
    int64_t kidx[MAX_RANK] = {0};
    for (int64_t kp = 0; kp < g->ksize; kp++) {
        int64_t iidx[MAX_RANK] = {0};
        for (int64_t ip = 0; ip < g->in_size; ip++) {
            int64_t off = 0;
            for (int i = 0; i < g->ns && off >= 0; i++) {
                int64_t p = iidx[i] * g->w.stride[i] - g->w.pad_begin[i] +
                            kidx[i] * g->w.dilation[i];
                off = p < 0 || p >= g->out_sp[i] ? -1 : off * g->out_sp[i] + p;
            }
            tgt[kp * g->in_size + ip] = off;
            for (int i = g->ns - 1; i >= 0; i--) {
                if (++iidx[i] < g->in_sp[i])
                    break;
                iidx[i] = 0;
            }
        }
        for (int i = g->ns - 1; i >= 0; i--) {
            if (++kidx[i] < g->w.kernel[i])
                break;
            kidx[i] = 0;
        }
    }
    return tgt;
}

/* Per group: col = W_g' * X_g (one matrix product, W_g transposed once up
 * front), then col2im scatters each column entry to its output position. */
static bool conv_transpose_f32(const KernelArgs *a, const ConvGeom *g, const int64_t *tgt) {
    const float *x = a->in[0]->data, *w = a->in[1]->data;
    const float *bias = a->n->nops >= 3 ? a->in[2]->data : NULL;
    float *y = a->out[0]->data;
    int64_t rows = g->mg * g->ksize; /* of col: (m, kernel tap) */
    float *wt = malloc((size_t)(g->c * rows + 1) * sizeof(float));
    float *col = malloc((size_t)(rows * g->in_size + 1) * sizeof(float));
    if (!wt || !col) {
        free(wt);
        free(col);
        return kernel_fail(a, "out of memory for the column buffer");
    }
    for (int64_t gr = 0; gr < g->group; gr++)
        for (int64_t c = 0; c < g->cg; c++)
            for (int64_t r = 0; r < rows; r++)
                wt[gr * rows * g->cg + r * g->cg + c] = w[(gr * g->cg + c) * rows + r];
    for (int64_t b = 0; b < g->n; b++) {
        for (int64_t gr = 0; gr < g->group; gr++) {
            const float *xg = x + (b * g->c + gr * g->cg) * g->in_size;
            float *yg = y + (b * g->m + gr * g->mg) * g->out_size;
            for (int64_t m = 0; m < g->mg; m++) {
                float bv = bias ? bias[gr * g->mg + m] : 0.0f;
                for (int64_t p = 0; p < g->out_size; p++)
                    yg[m * g->out_size + p] = bv;
            }
            memset(col, 0, (size_t)(rows * g->in_size) * sizeof(float));
            sgemm_acc(rows, g->in_size, g->cg, wt + gr * rows * g->cg, g->cg, xg, g->in_size,
                      col, g->in_size);
            for (int64_t r = 0; r < rows; r++) {
                const int64_t *t = tgt + (r % g->ksize) * g->in_size;
                float *ym = yg + (r / g->ksize) * g->out_size;
                const float *cr = col + r * g->in_size;
                for (int64_t ip = 0; ip < g->in_size; ip++)
                    if (t[ip] >= 0)
                        ym[t[ip]] += cr[ip];
            }
        }
    }
    free(wt);
    free(col);
    return true;
}

/* Any float kind: scatter in double into one accumulator per output plane. */
static bool conv_transpose_generic(const KernelArgs *a, const ConvGeom *g, const int64_t *tgt) {
    const Tensor *X = a->in[0], *W = a->in[1], *B = a->n->nops >= 3 ? a->in[2] : NULL;
    Tensor *Y = a->out[0];
    double *acc = malloc((size_t)(g->out_size + 1) * sizeof(double));
    if (!acc)
        return kernel_fail(a, "out of memory");
    for (int64_t b = 0; b < g->n; b++)
        for (int64_t m = 0; m < g->m; m++) {
            int64_t gr = m / g->mg, mi = m % g->mg;
            double bv = B ? tensor_get_f64(B, m) : 0;
            for (int64_t p = 0; p < g->out_size; p++)
                acc[p] = bv;
            for (int64_t c = gr * g->cg; c < (gr + 1) * g->cg; c++)
                for (int64_t kp = 0; kp < g->ksize; kp++) {
                    double wv = tensor_get_f64(W, (c * g->mg + mi) * g->ksize + kp);
                    const int64_t *t = tgt + kp * g->in_size;
                    for (int64_t ip = 0; ip < g->in_size; ip++)
                        if (t[ip] >= 0)
                            acc[t[ip]] += wv * tensor_get_f64(X, (b * g->c + c) * g->in_size + ip);
                }
            for (int64_t p = 0; p < g->out_size; p++)
                tensor_set_f64(Y, (b * g->m + m) * g->out_size + p, acc[p]);
        }
    free(acc);
    return true;
}

bool k_conv_transpose(const KernelArgs *a) {
    ConvGeom g;
    conv_geom(a, &g);
    int64_t *tgt = convt_targets(&g);
    if (!tgt)
        return kernel_fail(a, "out of memory");
    bool ok = a->in[0]->type.elem == ELEM_F32 ? conv_transpose_f32(a, &g, tgt)
                                              : conv_transpose_generic(a, &g, tgt);
    free(tgt);
    return ok;
}

/* ---- convolution weight gradient ------------------------------------------ */

/* dW[m][c*taps + tap] = sum over images and output positions p of dy *
 * x at the position the tap reads from p (none in the padding), in double,
 * rounded once: the reference the native kernel is held to. Every float
 * kind. */
bool k_conv_weight_grad(const KernelArgs *a) {
    const Tensor *X = a->in[0], *DY = a->in[1];
    Tensor *DW = a->out[0];
    ConvGeom g = {.ns = X->type.rank - 2};
    window_from_node(a->n, g.ns, NULL, &g.w);
    g.n = X->type.dims[0];
    g.c = X->type.dims[1];
    g.m = DY->type.dims[1];
    g.group = g.w.group;
    g.cg = g.c / g.group;
    g.mg = g.m / g.group;
    g.in_size = g.out_size = g.ksize = 1;
    for (int i = 0; i < g.ns; i++) {
        g.in_sp[i] = X->type.dims[2 + i];
        g.out_sp[i] = DY->type.dims[2 + i];
        g.in_size *= g.in_sp[i];
        g.out_size *= g.out_sp[i];
        g.ksize *= g.w.kernel[i];
    }
    int64_t kdim = g.cg * g.ksize, npos;
    int64_t *pos = NULL;
    double *xg = NULL, *dy = NULL, *acc = NULL;
    if (__builtin_mul_overflow(g.ksize, g.out_size, &npos) ||
        (uint64_t)npos >= SIZE_MAX / sizeof(int64_t) ||
        !(pos = malloc((size_t)(npos + 1) * sizeof(int64_t))) ||
        !(xg = malloc((size_t)(g.cg * g.in_size + 1) * sizeof(double))) ||
        !(dy = malloc((size_t)(g.mg * g.out_size + 1) * sizeof(double))) ||
        !(acc = calloc((size_t)(g.m * kdim + 1), sizeof(double)))) {
        free(pos);
        free(xg);
        free(dy);
        return kernel_fail(a, "out of memory for the gradient's buffers");
    }
    /* pos[tap][p]: the input offset tap reads at output position p, or -1. */
    int64_t kidx[MAX_RANK] = {0};
    for (int64_t kp = 0; kp < g.ksize; kp++) {
        int64_t oidx[MAX_RANK] = {0};
        for (int64_t p = 0; p < g.out_size; p++) {
            int64_t off = 0;
            for (int i = 0; i < g.ns && off >= 0; i++) {
                int64_t q = oidx[i] * g.w.stride[i] - g.w.pad_begin[i] + kidx[i] * g.w.dilation[i];
                off = q < 0 || q >= g.in_sp[i] ? -1 : off * g.in_sp[i] + q;
            }
            pos[kp * g.out_size + p] = off;
            for (int i = g.ns - 1; i >= 0 && ++oidx[i] == g.out_sp[i]; i--)
                oidx[i] = 0;
        }
        for (int i = g.ns - 1; i >= 0 && ++kidx[i] == g.w.kernel[i]; i--)
            kidx[i] = 0;
    }
    for (int64_t b = 0; b < g.n; b++)
        for (int64_t gr = 0; gr < g.group; gr++) {
            for (int64_t i = 0; i < g.cg * g.in_size; i++)
                xg[i] = tensor_get_f64(X, (b * g.c + gr * g.cg) * g.in_size + i);
            for (int64_t i = 0; i < g.mg * g.out_size; i++)
                dy[i] = tensor_get_f64(DY, (b * g.m + gr * g.mg) * g.out_size + i);
            for (int64_t m = 0; m < g.mg; m++) {
                double *row = acc + (gr * g.mg + m) * kdim;
                for (int64_t r = 0; r < kdim; r++) {
                    const double *xc = xg + r / g.ksize * g.in_size;
                    const int64_t *pr = pos + r % g.ksize * g.out_size;
                    double s = 0;
                    for (int64_t p = 0; p < g.out_size; p++)
                        if (pr[p] >= 0)
                            s += xc[pr[p]] * dy[m * g.out_size + p];
                    row[r] += s;
                }
            }
        }
    for (int64_t i = 0; i < g.m * kdim; i++)
        tensor_set_f64(DW, i, acc[i]);
    free(pos);
    free(xg);
    free(dy);
    free(acc);
    return true;
}

/* ---- pooling -------------------------------------------------------------- */

typedef enum { POOL_MAX, POOL_AVG, POOL_LP } PoolKind;

/* One output element's window: calls back for every input position inside
 * it; returns the number of positions counted for the average. */
static bool pool_kernel(const KernelArgs *a, PoolKind kind) {
    const Tensor *X = a->in[0];
    Tensor *Y = a->out[0], *I = a->n->nres == 2 ? a->out[1] : NULL;
    const Type *xt = &X->type, *yt = &Y->type;
    int ns = xt->rank - 2;
    Window w;
    window_from_node(a->n, ns, NULL, &w);
    int64_t p = node_attr_int(a->n, AK_p, 2);
    int64_t in_size = 1, out_size = 1, ksize = 1;
    for (int i = 0; i < ns; i++) {
        in_size *= xt->dims[2 + i];
        out_size *= yt->dims[2 + i];
        ksize *= w.kernel[i];
    }
    int64_t planes = xt->dims[0] * xt->dims[1];
    bool f32 = xt->elem == ELEM_F32;
    bool col_major = node_attr_int(a->n, AK_storage_order, 0) != 0;
    for (int64_t pl = 0; pl < planes; pl++) {
        int64_t oidx[MAX_RANK] = {0};
        for (int64_t op = 0; op < out_size; op++) {
            /* A max pool window wholly inside the padding is -inf: the
             * maximum of no values, as ONNX's ReduceMax over an empty set
             * (ONNX Runtime gives -FLT_MAX; README, "Pooling"). libjit
             * agrees. */
            double acc = kind == POOL_MAX ? -INFINITY : 0;
            int64_t arg = -1, arg_index = -1, count = 0, padded_count = 0;
            int64_t kidx[MAX_RANK] = {0};
            for (int64_t kp = 0; kp < ksize; kp++) {
                int64_t off = 0, off_cm = 0;
                bool inside = true, in_padded = true;
                for (int i = 0; i < ns; i++) {
                    int64_t q = oidx[i] * w.stride[i] - w.pad_begin[i] + kidx[i] * w.dilation[i];
                    if (q < 0 || q >= xt->dims[2 + i])
                        inside = false;
                    if (q >= xt->dims[2 + i] + w.pad_end[i])
                        in_padded = false;
                    if (inside) /* q may be far into the padding otherwise */
                        off = off * xt->dims[2 + i] + q;
                }
                for (int j = ns - 1; inside && col_major && j >= 0; j--) { /* last axis slowest */
                    int64_t qj = oidx[j] * w.stride[j] - w.pad_begin[j] + kidx[j] * w.dilation[j];
                    off_cm = off_cm * xt->dims[2 + j] + qj;
                }
                padded_count += in_padded;
                if (inside) {
                    int64_t at = pl * in_size + off;
                    double v = f32 ? ((const float *)X->data)[at] : tensor_get_f64(X, at);
                    count++;
                    if (kind == POOL_MAX) {
                        if (arg < 0 || v > acc) {
                            acc = v;
                            arg = at;
                            arg_index = col_major ? pl * in_size + off_cm : at;
                        }
                    } else if (kind == POOL_AVG) {
                        acc += v;
                    } else {
                        acc += pow(fabs(v), (double)p);
                    }
                }
                for (int i = ns - 1; i >= 0; i--) {
                    if (++kidx[i] < w.kernel[i])
                        break;
                    kidx[i] = 0;
                }
            }
            if (kind == POOL_AVG)
                acc /= (double)(w.count_include_pad ? padded_count : count ? count : 1);
            else if (kind == POOL_LP)
                acc = pow(acc, 1.0 / (double)p);
            int64_t yo = pl * out_size + op;
            if (f32)
                ((float *)Y->data)[yo] = (float)acc;
            else if (elem_is_float(yt->elem))
                tensor_set_f64(Y, yo, acc);
            else
                tensor_set_i64(Y, yo, arg >= 0 ? tensor_get_i64(X, arg) : 0);
            if (I) /* ONNX's index: over N, C and the input's spatial axes */
                ((int64_t *)I->data)[yo] = arg_index;
            for (int i = ns - 1; i >= 0; i--) {
                if (++oidx[i] < yt->dims[2 + i])
                    break;
                oidx[i] = 0;
            }
        }
    }
    return true;
}

bool k_max_pool(const KernelArgs *a) {
    return pool_kernel(a, POOL_MAX);
}

bool k_avg_pool(const KernelArgs *a) {
    return pool_kernel(a, POOL_AVG);
}

bool k_lp_pool(const KernelArgs *a) {
    return pool_kernel(a, POOL_LP);
}

static bool global_pool(const KernelArgs *a, PoolKind kind) {
    const Tensor *X = a->in[0];
    Tensor *Y = a->out[0];
    int64_t planes = X->type.dims[0] * X->type.dims[1];
    int64_t size = tensor_numel(X) / (planes ? planes : 1);
    double p = (double)node_attr_int(a->n, AK_p, 2);
    for (int64_t pl = 0; pl < planes; pl++) {
        double acc = kind == POOL_MAX ? -INFINITY : 0;
        for (int64_t i = 0; i < size; i++) {
            double v = tensor_get_f64(X, pl * size + i);
            if (kind == POOL_MAX)
                acc = v > acc || isnan(v) ? v : acc;
            else if (kind == POOL_AVG)
                acc += v;
            else
                acc += pow(fabs(v), p);
        }
        if (kind == POOL_AVG)
            acc /= (double)(size ? size : 1);
        else if (kind == POOL_LP)
            acc = pow(acc, 1.0 / p);
        tensor_set_f64(Y, pl, acc);
    }
    return true;
}

bool k_global_avg_pool(const KernelArgs *a) {
    return global_pool(a, POOL_AVG);
}

bool k_global_max_pool(const KernelArgs *a) {
    return global_pool(a, POOL_MAX);
}

bool k_global_lp_pool(const KernelArgs *a) {
    return global_pool(a, POOL_LP);
}

/* ---- normalisation -------------------------------------------------------- */

bool k_batch_norm(const KernelArgs *a) {
    const Tensor *X = a->in[0];
    Tensor *Y = a->out[0];
    double eps = node_attr_float(a->n, AK_epsilon, 1e-5f);
    int64_t nb = X->type.dims[0], c = X->type.dims[1];
    int64_t size = c ? tensor_numel(X) / (nb * c ? nb * c : 1) : 0;
    for (int64_t ch = 0; ch < c; ch++) {
        double scale = tensor_get_f64(a->in[1], ch), bias = tensor_get_f64(a->in[2], ch);
        double mean = tensor_get_f64(a->in[3], ch), var = tensor_get_f64(a->in[4], ch);
        double mul = scale / sqrt(var + eps), add = bias - mean * mul;
        for (int64_t b = 0; b < nb; b++) {
            int64_t base = (b * c + ch) * size;
            if (X->type.elem == ELEM_F32) {
                const float *x = (const float *)X->data + base;
                float *y = (float *)Y->data + base;
                for (int64_t i = 0; i < size; i++)
                    y[i] = (float)(x[i] * mul + add);
            } else {
                for (int64_t i = 0; i < size; i++)
                    tensor_set_f64(Y, base + i, tensor_get_f64(X, base + i) * mul + add);
            }
        }
    }
    return true;
}

bool k_instance_norm(const KernelArgs *a) {
    const Tensor *X = a->in[0];
    Tensor *Y = a->out[0];
    double eps = node_attr_float(a->n, AK_epsilon, 1e-5f);
    int64_t nb = X->type.dims[0], c = X->type.dims[1];
    int64_t size = nb * c ? tensor_numel(X) / (nb * c) : 0;
    for (int64_t b = 0; b < nb; b++)
        for (int64_t ch = 0; ch < c; ch++) {
            int64_t base = (b * c + ch) * size;
            double mean = 0, var = 0;
            for (int64_t i = 0; i < size; i++)
                mean += tensor_get_f64(X, base + i);
            mean /= (double)(size ? size : 1);
            for (int64_t i = 0; i < size; i++) {
                double dv = tensor_get_f64(X, base + i) - mean;
                var += dv * dv;
            }
            var /= (double)(size ? size : 1);
            double mul = tensor_get_f64(a->in[1], ch) / sqrt(var + eps);
            double add = tensor_get_f64(a->in[2], ch);
            for (int64_t i = 0; i < size; i++)
                tensor_set_f64(Y, base + i, (tensor_get_f64(X, base + i) - mean) * mul + add);
        }
    return true;
}

/* Normalises over the axes from `axis` on; scale and bias broadcast to them. */
bool k_layer_norm(const KernelArgs *a) {
    const Tensor *X = a->in[0];
    const Type *xt = &X->type;
    int axis;
    axis_normalize(node_attr_int(a->n, AK_axis, -1), xt->rank, &axis);
    double eps = node_attr_float(a->n, AK_epsilon, 1e-5f);
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < xt->rank; i++)
        *(i < axis ? &outer : &inner) *= xt->dims[i];
    Type norm = {.elem = xt->elem, .rank = xt->rank - axis};
    for (int i = axis; i < xt->rank; i++)
        norm.dims[i - axis] = xt->dims[i];
    Bcast bs, bb;
    const Type *st[1] = {&a->in[1]->type};
    const Type *bt[1] = {a->n->nops == 3 ? &a->in[2]->type : &a->in[1]->type};
    for (int64_t o = 0; o < outer; o++) {
        double mean = 0, var = 0;
        for (int64_t i = 0; i < inner; i++)
            mean += tensor_get_f64(X, o * inner + i);
        mean /= (double)(inner ? inner : 1);
        for (int64_t i = 0; i < inner; i++) {
            double dv = tensor_get_f64(X, o * inner + i) - mean;
            var += dv * dv;
        }
        var /= (double)(inner ? inner : 1);
        double inv = 1 / sqrt(var + eps);
        bcast_init(&bs, &norm, st, 1);
        bcast_init(&bb, &norm, bt, 1);
        for (int64_t i = 0; i < inner; i++, bcast_next(&bs), bcast_next(&bb)) {
            double v = (tensor_get_f64(X, o * inner + i) - mean) * inv;
            v *= tensor_get_f64(a->in[1], bs.off[0]);
            if (a->n->nops == 3)
                v += tensor_get_f64(a->in[2], bb.off[0]);
            tensor_set_f64(a->out[0], o * inner + i, v);
        }
        if (a->n->nres > 1)
            tensor_set_f64(a->out[1], o, mean);
        if (a->n->nres > 2)
            tensor_set_f64(a->out[2], o, inv);
    }
    return true;
}

/* Across channels: y = x / (bias + alpha / size * sum of x^2 over the
 * channel window)^beta. The window around c reaches floor((size-1)/2)
 * channels down and ceil((size-1)/2) up, as ONNX defines it. */
bool k_lrn(const KernelArgs *a) {
    const Tensor *X = a->in[0];
    Tensor *Y = a->out[0];
    double alpha = node_attr_float(a->n, AK_alpha, 1e-4f);
    double beta = node_attr_float(a->n, AK_beta, 0.75f);
    double bias = node_attr_float(a->n, AK_bias, 1.0f);
    int64_t size = node_attr_int(a->n, AK_size, 1);
    int64_t nb = X->type.dims[0], c = X->type.dims[1];
    int64_t inner = nb * c ? tensor_numel(X) / (nb * c) : 0;
    int64_t down = (size - 1) / 2, up = size / 2;
    for (int64_t b = 0; b < nb; b++)
        for (int64_t ch = 0; ch < c; ch++) {
            int64_t lo = ch - down < 0 ? 0 : ch - down, hi = ch + up >= c ? c - 1 : ch + up;
            for (int64_t i = 0; i < inner; i++) {
                double sq = 0;
                for (int64_t k = lo; k <= hi; k++) {
                    double v = tensor_get_f64(X, (b * c + k) * inner + i);
                    sq += v * v;
                }
                int64_t at = (b * c + ch) * inner + i;
                double scale = pow(bias + alpha / (double)size * sq, beta);
                tensor_set_f64(Y, at, tensor_get_f64(X, at) / scale);
            }
        }
    return true;
}

/* (x - mean) / (stddev + 1e-9) over `axes`, with the variance taken as
 * E[x^2] - E[x]^2 like ONNX's function body. */
bool k_mean_variance_norm(const KernelArgs *a) {
    const Tensor *X = a->in[0];
    Tensor *Y = a->out[0];
    const Type *xt = &X->type;
    uint32_t mask = reduce_axes_mask(a->n, xt->rank);
    /* Row-major strides of the kept (not normalised) axes give each
     * element's group. */
    int64_t gst[MAX_RANK], ngroups = 1;
    for (int i = xt->rank - 1; i >= 0; i--) {
        gst[i] = (mask & (1u << i)) ? 0 : ngroups;
        if (!(mask & (1u << i)))
            ngroups *= xt->dims[i];
    }
    int64_t n = tensor_numel(X), count = ngroups ? n / ngroups : 0;
    double *sum = calloc((size_t)(2 * ngroups + 1), sizeof(double));
    int64_t *grp = malloc((size_t)(n + 1) * sizeof(int64_t));
    if (!sum || !grp) {
        free(sum);
        free(grp);
        return kernel_fail(a, "out of memory");
    }
    double *sumsq = sum + ngroups;
    int64_t idx[MAX_RANK] = {0}, g = 0;
    for (int64_t i = 0; i < n; i++) {
        grp[i] = g;
        double v = tensor_get_f64(X, i);
        sum[g] += v;
        sumsq[g] += v * v;
        for (int d = xt->rank - 1; d >= 0; d--) {
            g += gst[d];
            if (++idx[d] < xt->dims[d])
                break;
            g -= gst[d] * xt->dims[d];
            idx[d] = 0;
        }
    }
    for (int64_t k = 0; k < ngroups; k++) {
        double mean = sum[k] / (double)count, var = sumsq[k] / (double)count - mean * mean;
        sum[k] = mean;
        sumsq[k] = sqrt(var > 0 ? var : 0) + 1e-9;
    }
    for (int64_t i = 0; i < n; i++)
        tensor_set_f64(Y, i, (tensor_get_f64(X, i) - sum[grp[i]]) / sumsq[grp[i]]);
    free(sum);
    free(grp);
    return true;
}

/* x / ||x||_p along one axis (p is 1 or 2). */
bool k_lp_norm(const KernelArgs *a) {
    const Tensor *X = a->in[0];
    Tensor *Y = a->out[0];
    const Type *t = &X->type;
    int axis;
    axis_normalize(node_attr_int(a->n, AK_axis, -1), t->rank, &axis);
    int64_t p = node_attr_int(a->n, AK_p, 2);
    int64_t outer = 1, len = t->dims[axis], inner = 1;
    for (int i = 0; i < axis; i++)
        outer *= t->dims[i];
    for (int i = axis + 1; i < t->rank; i++)
        inner *= t->dims[i];
    for (int64_t o = 0; o < outer; o++)
        for (int64_t in = 0; in < inner; in++) {
            int64_t base = o * len * inner + in;
            double norm = 0;
            for (int64_t k = 0; k < len; k++) {
                double v = tensor_get_f64(X, base + k * inner);
                norm += p == 1 ? fabs(v) : v * v;
            }
            if (p == 2)
                norm = sqrt(norm);
            for (int64_t k = 0; k < len; k++)
                tensor_set_f64(Y, base + k * inner, tensor_get_f64(X, base + k * inner) / norm);
        }
    return true;
}

/* ---- along one axis ------------------------------------------------------- */

typedef enum { SM_SOFTMAX, SM_LOG_SOFTMAX, SM_HARDMAX } SoftmaxKind;

static bool softmax_like(const KernelArgs *a, SoftmaxKind kind) {
    const Tensor *X = a->in[0];
    Tensor *Y = a->out[0];
    const Type *t = &X->type;
    int axis;
    if (!axis_normalize(node_attr_int(a->n, AK_axis, -1), t->rank ? t->rank : 1, &axis))
        return kernel_fail(a, "axis out of range");
    int64_t outer = 1, len = t->rank ? t->dims[axis] : 1, inner = 1;
    for (int i = 0; i < axis; i++)
        outer *= t->dims[i];
    for (int i = axis + 1; i < t->rank; i++)
        inner *= t->dims[i];
    for (int64_t o = 0; o < outer; o++)
        for (int64_t in = 0; in < inner; in++) {
            int64_t base = o * len * inner + in;
            double mx = -INFINITY;
            int64_t arg = 0;
            for (int64_t k = 0; k < len; k++) {
                double v = tensor_get_f64(X, base + k * inner);
                if (v > mx) {
                    mx = v;
                    arg = k;
                }
            }
            double sum = 0;
            if (kind != SM_HARDMAX)
                for (int64_t k = 0; k < len; k++)
                    sum += exp(tensor_get_f64(X, base + k * inner) - mx);
            for (int64_t k = 0; k < len; k++) {
                double v = tensor_get_f64(X, base + k * inner), r;
                if (kind == SM_SOFTMAX)
                    r = exp(v - mx) / sum;
                else if (kind == SM_LOG_SOFTMAX)
                    r = v - mx - log(sum);
                else
                    r = k == arg;
                tensor_set_f64(Y, base + k * inner, r);
            }
        }
    return true;
}

bool k_softmax(const KernelArgs *a) {
    return softmax_like(a, SM_SOFTMAX);
}

bool k_log_softmax(const KernelArgs *a) {
    return softmax_like(a, SM_LOG_SOFTMAX);
}

bool k_hardmax(const KernelArgs *a) {
    return softmax_like(a, SM_HARDMAX);
}

/* Running sums along the axis: exclusive sums leave the current element out,
 * reverse ones run from the end. Floats sum in double, integers in wrapping
 * 64-bit arithmetic. */
bool k_cumsum(const KernelArgs *a) {
    const Tensor *X = a->in[0];
    Tensor *Y = a->out[0];
    const Type *t = &X->type;
    int axis;
    if (!axis_normalize(node_attr_int(a->n, AK_axis, 0), t->rank ? t->rank : 1, &axis))
        return kernel_fail(a, "axis out of range");
    bool exclusive = node_attr_int(a->n, AK_exclusive, 0) != 0;
    bool reverse = node_attr_int(a->n, AK_reverse, 0) != 0;
    bool flt = elem_is_float(t->elem);
    int64_t outer = 1, len = t->rank ? t->dims[axis] : 1, inner = 1;
    for (int i = 0; i < axis; i++)
        outer *= t->dims[i];
    for (int i = axis + 1; i < t->rank; i++)
        inner *= t->dims[i];
    for (int64_t o = 0; o < outer; o++)
        for (int64_t in = 0; in < inner; in++) {
            double acc = 0;
            uint64_t iacc = 0;
            for (int64_t j = 0; j < len; j++) {
                int64_t at = o * len * inner + (reverse ? len - 1 - j : j) * inner + in;
                double v = flt ? tensor_get_f64(X, at) : 0;
                uint64_t iv = flt ? 0 : (uint64_t)tensor_get_i64(X, at);
                if (!exclusive) {
                    acc += v;
                    iacc += iv;
                }
                if (flt)
                    tensor_set_f64(Y, at, acc);
                else
                    tensor_set_i64(Y, at, (int64_t)iacc);
                if (exclusive) {
                    acc += v;
                    iacc += iv;
                }
            }
        }
    return true;
}
