/* Quantization kernels: linear (de)quantization per tensor or per axis, the
 * dynamic u8 quantizer, and integer matrix products and convolutions with
 * zero points (plain, or requantized to a scale and zero point).
 *
 * Arithmetic follows the ONNX reference, which works in f32: divisions and
 * scale products are done in float before rounding half to even, so ties
 * land where the reference's land. Integer sums run in int64. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/interp/kernels.h"
#include "core/qpack.h"

/* ---- helpers -------------------------------------------------------------- */

static int64_t kind_min(ElemKind k) {
    switch (k) {
    case ELEM_I8: return INT8_MIN;
    case ELEM_I16: return INT16_MIN;
    case ELEM_I32: return INT32_MIN;
    default: return 0;
    }
}

static int64_t kind_max(ElemKind k) {
    switch (k) {
    case ELEM_I8: return INT8_MAX;
    case ELEM_I16: return INT16_MAX;
    case ELEM_I32: return INT32_MAX;
    case ELEM_U8: return UINT8_MAX;
    case ELEM_U16: return UINT16_MAX;
    default: return INT64_MAX;
    }
}

/* Rounds half to even, adds the zero point and clamps to the kind's range. */
static void store_quantized(Tensor *Y, int64_t i, double v, int64_t zp) {
    ElemKind k = Y->type.elem;
    double q = nearbyint(v) + (double)zp;
    double lo = (double)kind_min(k), hi = (double)kind_max(k);
    tensor_set_i64(Y, i, (int64_t)(isnan(q) ? lo : q < lo ? lo : q > hi ? hi : q));
}

/* Which scale/zero-point entry element i of x uses: per tensor (axis < 0)
 * or its coordinate along axis. */
static int64_t param_index(const Type *xt, int axis, int64_t i) {
    if (axis < 0)
        return 0;
    int64_t inner = 1;
    for (int d = axis + 1; d < xt->rank; d++)
        inner *= xt->dims[d];
    return (i / inner) % xt->dims[axis];
}

static int quant_axis(const KernelArgs *a) {
    int axis = -1;
    const Type *xt = &a->in[0]->type;
    if (tensor_numel(a->in[1]) > 1 || a->in[1]->type.rank > 1)
        axis_normalize(node_attr_int(a->n, AK_axis, 1), xt->rank, &axis);
    return axis;
}

/* ---- linear quantization ---------------------------------------------------- */

bool k_quantize_linear(const KernelArgs *a) {
    const Tensor *X = a->in[0], *S = a->in[1], *Z = a->in[2];
    int axis = quant_axis(a);
    bool single = X->type.elem == ELEM_F32;
    int64_t n = tensor_numel(X);
    for (int64_t i = 0; i < n; i++) {
        int64_t p = param_index(&X->type, axis, i);
        double x = tensor_get_f64(X, i), s = tensor_get_f64(S, p);
        double q = single ? (double)((float)x / (float)s) : x / s;
        store_quantized(a->out[0], i, q, tensor_get_i64(Z, p));
    }
    return true;
}

bool k_dequantize_linear(const KernelArgs *a) {
    const Tensor *X = a->in[0], *S = a->in[1], *Z = a->in[2];
    int axis = quant_axis(a);
    int64_t n = tensor_numel(X);
    for (int64_t i = 0; i < n; i++) {
        int64_t p = param_index(&X->type, axis, i);
        double v = (double)(tensor_get_i64(X, i) - tensor_get_i64(Z, p)) * tensor_get_f64(S, p);
        tensor_set_f64(a->out[0], i, v);
    }
    return true;
}

/* The range [min(x, 0), max(x, 0)] maps onto [0, 255]. */
bool k_dynamic_quantize_linear(const KernelArgs *a) {
    const Tensor *X = a->in[0];
    int64_t n = tensor_numel(X);
    float lo = 0, hi = 0;
    for (int64_t i = 0; i < n; i++) {
        float v = (float)tensor_get_f64(X, i);
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
    }
    float scale = (hi - lo) / 255.0f;
    float zpf = scale > 0 ? 0.0f - lo / scale : 0.0f;
    zpf = zpf < 0 ? 0 : zpf > 255 ? 255 : zpf;
    int64_t zp = (int64_t)nearbyintf(zpf);
    for (int64_t i = 0; i < n; i++) {
        float q = scale > 0 ? (float)tensor_get_f64(X, i) / scale : 0.0f;
        store_quantized(a->out[0], i, q, zp);
    }
    tensor_set_f64(a->out[1], 0, scale);
    tensor_set_i64(a->out[2], 0, zp);
    return true;
}

/* ---- integer matrix products -------------------------------------------------- */

typedef struct IntMatmul {
    int64_t m, n, k;
    int64_t *acc; /* one sum per result element */
} IntMatmul;

/* (a - za) x (b - zb) with numpy matmul shapes; za holds one value or one
 * per row of a, zb one or one per column of b. */
static bool int_matmul(const KernelArgs *a, const Tensor *A, const Tensor *ZA, const Tensor *B,
                       const Tensor *ZB, IntMatmul *r) {
    MatmulShape ms;
    matmul_shape(&ms, &A->type, &B->type);
    int64_t M = ms.m, K = ms.k, N = ms.n, nbatch = ms.nbatch;
    r->acc = calloc((size_t)(nbatch * M * N ? nbatch * M * N : 1), sizeof(int64_t));
    if (!r->acc)
        return kernel_fail(a, "out of memory");
    bool row_za = tensor_numel(ZA) > 1, col_zb = tensor_numel(ZB) > 1;
    for (int64_t b = 0; b < nbatch; b++, bcast_next(&ms.bc)) {
        int64_t oa = ms.bc.off[0] * M * K, ob = ms.bc.off[1] * K * N, *c = r->acc + b * M * N;
        for (int64_t i = 0; i < M; i++) {
            int64_t za = tensor_get_i64(ZA, row_za ? i : 0);
            for (int64_t j = 0; j < N; j++) {
                int64_t zb = tensor_get_i64(ZB, col_zb ? j : 0), s = 0;
                for (int64_t p = 0; p < K; p++)
                    s += (tensor_get_i64(A, oa + i * K + p) - za) *
                         (tensor_get_i64(B, ob + p * N + j) - zb);
                c[i * N + j] = s;
            }
        }
    }
    r->m = M;
    r->n = N;
    r->k = K;
    return true;
}

bool k_matmul_integer(const KernelArgs *a) {
    IntMatmul r;
    if (!int_matmul(a, a->in[0], a->in[2], a->in[1], a->in[3], &r))
        return false;
    int64_t n = tensor_numel(a->out[0]);
    for (int64_t i = 0; i < n; i++)
        tensor_set_i64(a->out[0], i, r.acc[i]);
    free(r.acc);
    return true;
}

/* y = (a_scale * b_scale / y_scale) * sum + y_zp, the scales per tensor or
 * per row of a / column of b. */
bool k_qlinear_matmul(const KernelArgs *a) {
    const Tensor *AS = a->in[1], *BS = a->in[4], *YS = a->in[6], *YZ = a->in[7];
    IntMatmul r;
    if (!int_matmul(a, a->in[0], a->in[2], a->in[3], a->in[5], &r))
        return false;
    bool row = tensor_numel(AS) > 1, col = tensor_numel(BS) > 1;
    float ys = (float)tensor_get_f64(YS, 0);
    int64_t yz = tensor_get_i64(YZ, 0), n = tensor_numel(a->out[0]);
    for (int64_t i = 0; i < n; i++) {
        int64_t j = i % r.n, m = (i / r.n) % r.m;
        float mult = (float)tensor_get_f64(AS, row ? m : 0) *
                     (float)tensor_get_f64(BS, col ? j : 0) / ys;
        store_quantized(a->out[0], i, (double)r.acc[i] * mult, yz);
    }
    free(r.acc);
    return true;
}

/* ---- integer convolutions ------------------------------------------------------ */

typedef struct IntConv {
    Window w;
    int ns;
    int64_t batch, cin, cout, cg, mg, out_size;
    int64_t *acc; /* [batch][cout][out_size] */
} IntConv;

/* Sum over the window of one output position; padding contributes zero
 * (the input minus its zero point is zero there). */
static int64_t conv_point(const IntConv *g, const Tensor *X, int64_t zx, const Tensor *W,
                          int64_t zw, int64_t nb, int64_t m, const int64_t *opos) {
    const Type *xt = &X->type, *wt = &W->type;
    int64_t ksize = type_numel(wt) / (wt->dims[0] * wt->dims[1]), s = 0;
    for (int64_t c = 0; c < g->cg; c++) {
        int64_t ci = (m / g->mg) * g->cg + c;
        for (int64_t kp = 0; kp < ksize; kp++) {
            int64_t r = kp, xoff = 0, stride = 1;
            bool inside = true;
            for (int i = g->ns - 1; i >= 0; i--) {
                int64_t kk = r % g->w.kernel[i];
                r /= g->w.kernel[i];
                int64_t ip = opos[i] * g->w.stride[i] - g->w.pad_begin[i] + kk * g->w.dilation[i];
                inside &= ip >= 0 && ip < xt->dims[2 + i];
                xoff += ip * stride;
                stride *= xt->dims[2 + i];
            }
            if (!inside)
                continue;
            int64_t x = tensor_get_i64(X, (nb * g->cin + ci) * stride + xoff);
            int64_t w = tensor_get_i64(W, (m * g->cg + c) * ksize + kp);
            s += (x - zx) * (w - zw);
        }
    }
    return s;
}

static bool int_conv(const KernelArgs *a, const Tensor *X, const Tensor *ZX, const Tensor *W,
                     const Tensor *ZW, IntConv *g) {
    const Type *xt = &X->type, *yt = &a->out[0]->type;
    g->ns = xt->rank - 2;
    window_from_node(a->n, g->ns, &W->type, &g->w);
    g->batch = xt->dims[0];
    g->cin = xt->dims[1];
    g->cout = yt->dims[1];
    g->cg = g->cin / g->w.group;
    g->mg = g->cout / g->w.group;
    g->out_size = 1;
    for (int i = 0; i < g->ns; i++)
        g->out_size *= yt->dims[2 + i];
    int64_t total = tensor_numel(a->out[0]);
    g->acc = malloc((size_t)(total ? total : 1) * sizeof(int64_t));
    if (!g->acc)
        return kernel_fail(a, "out of memory");
    bool per_m = tensor_numel(ZW) > 1;
    int64_t zx = tensor_get_i64(ZX, 0), i = 0;
    for (int64_t nb = 0; nb < g->batch; nb++) {
        for (int64_t m = 0; m < g->cout; m++) {
            int64_t zw = tensor_get_i64(ZW, per_m ? m : 0), opos[MAX_RANK] = {0};
            for (int64_t p = 0; p < g->out_size; p++) {
                g->acc[i++] = conv_point(g, X, zx, W, zw, nb, m, opos);
                for (int d = g->ns - 1; d >= 0; d--) {
                    if (++opos[d] < yt->dims[2 + d])
                        break;
                    opos[d] = 0;
                }
            }
        }
    }
    return true;
}

bool k_conv_integer(const KernelArgs *a) {
    IntConv g;
    if (!int_conv(a, a->in[0], a->in[2], a->in[1], a->in[3], &g))
        return false;
    int64_t n = tensor_numel(a->out[0]);
    for (int64_t i = 0; i < n; i++)
        tensor_set_i64(a->out[0], i, g.acc[i]);
    free(g.acc);
    return true;
}

/* The i32 bias joins the sum before requantizing (its scale is x_scale *
 * w_scale, its zero point 0). */
bool k_qlinear_conv(const KernelArgs *a) {
    const Tensor *XS = a->in[1], *WS = a->in[4], *YS = a->in[6], *YZ = a->in[7];
    const Tensor *B = a->n->nops == 9 ? a->in[8] : NULL;
    IntConv g;
    if (!int_conv(a, a->in[0], a->in[2], a->in[3], a->in[5], &g))
        return false;
    bool per_m = tensor_numel(WS) > 1;
    float xs = (float)tensor_get_f64(XS, 0), ys = (float)tensor_get_f64(YS, 0);
    int64_t yz = tensor_get_i64(YZ, 0), n = tensor_numel(a->out[0]);
    for (int64_t i = 0; i < n; i++) {
        int64_t m = (i / g.out_size) % g.cout;
        float mult = xs * (float)tensor_get_f64(WS, per_m ? m : 0) / ys;
        int64_t s = g.acc[i] + (B ? tensor_get_i64(B, m) : 0);
        store_quantized(a->out[0], i, (double)s * mult, yz);
    }
    free(g.acc);
    return true;
}

/* qconv_packed (core/nodes.def): the weights unpacked, and the definition's
 * sum over the whole window (padding x_zp) taken apart as qlinear_conv's
 * sum inside the image, of (x - x_zp) w, plus (x_zp + sh) times the row's
 * weight sum, exact in int64. */
bool k_qconv_packed(const KernelArgs *a) {
    const Tensor *X = a->in[0], *WP = a->in[3], *XS = a->in[1], *WS = a->in[4];
    const Tensor *YS = a->in[6], *YZ = a->in[7], *B = a->in[8];
    const Type *wt = &WP->type;
    int64_t M = wt->dims[0], Cp = wt->dims[1], T = wt->dims[2] * wt->dims[3];
    int64_t C = X->type.dims[1]; /* Cp: C rounded up to a multiple of 4, zero weights beyond */
    const Type *yt = &a->out[0]->type;
    int64_t G = qpack_rows(M, T, yt->dims[2] * yt->dims[3], Cp);
    Arena *ar = arena_new();
    Type ut = *wt;
    ut.quant = QUANT_NONE;
    ut.dims[1] = C;
    Tensor *W = ar ? tensor_new_big(ar, &ut) : NULL;
    Type zt = type_scalar(ELEM_I8);
    Tensor *ZW = ar ? tensor_new(ar, &zt) : NULL;
    int64_t *sw = calloc((size_t)M, sizeof *sw);
    if (!W || !ZW || !sw) {
        free(sw);
        if (ar)
            arena_destroy(ar);
        return kernel_fail(a, "out of memory");
    }
    tensor_set_i64(ZW, 0, 0);
    for (int64_t m = 0; m < M; m++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t t = 0; t < T; t++) {
                int64_t v = tensor_get_i64(WP, qpack_at(G, Cp, T, m, c, t));
                tensor_set_i64(W, (m * C + c) * T + t, v);
                sw[m] += v;
            }
    IntConv g;
    bool ok = int_conv(a, X, a->in[2], W, ZW, &g);
    if (ok) {
        int64_t zx = tensor_get_i64(a->in[2], 0), sh = X->type.elem == ELEM_I8 ? 128 : 0;
        bool per_m = tensor_numel(WS) > 1;
        float xs = (float)tensor_get_f64(XS, 0), ys = (float)tensor_get_f64(YS, 0);
        int64_t yz = tensor_get_i64(YZ, 0), n = tensor_numel(a->out[0]);
        for (int64_t i = 0; i < n; i++) {
            int64_t m = (i / g.out_size) % g.cout;
            float mult = xs * (float)tensor_get_f64(WS, per_m ? m : 0) / ys;
            int64_t s = g.acc[i] + tensor_get_i64(B, m) + (zx + sh) * sw[m];
            store_quantized(a->out[0], i, (double)s * mult, yz);
        }
        free(g.acc);
    }
    free(sw);
    arena_destroy(ar);
    return ok;
}

/* ---- integer forms on quantized types (the quantize pass) ---------------- */

/* real / scale, rounded half to even, plus the offset, saturated: the one
 * rounding of every integer form, in double: the definition native kernels
 * must reproduce. */
static void store_real(Tensor *y, int64_t i, double real) {
    store_quantized(y, i, real / (double)y->type.scale, y->type.offset);
}

static double real_of(const Tensor *t, int64_t i) {
    return (double)t->type.scale * (double)(tensor_get_i64(t, i) - t->type.offset);
}

bool k_rescale(const KernelArgs *a) {
    const Tensor *x = a->in[0];
    for (int64_t i = 0; i < tensor_numel(x); i++)
        store_real(a->out[0], i, real_of(x, i));
    return true;
}

bool k_gradient(const KernelArgs *a) {
    return kernel_fail(a, "a gradient node runs only once the gradients pass has replaced it");
}

/* A table [C, 256] has a row per channel (x's axis 1). */
bool k_qlookup(const KernelArgs *a) {
    const Tensor *x = a->in[0], *table = a->in[1];
    int64_t base = x->type.elem == ELEM_U8 ? 0 : -128;
    int64_t rows = table->type.rank == 2 ? table->type.dims[0] : 1, inner = 1;
    for (int d = 2; d < x->type.rank; d++)
        inner *= x->type.dims[d];
    for (int64_t i = 0; i < tensor_numel(x); i++) {
        int64_t row = rows > 1 ? i / inner % rows : 0;
        tensor_set_i64(a->out[0], i, tensor_get_i64(table, row * 256 + tensor_get_i64(x, i) - base));
    }
    return true;
}

static bool qbinary(const KernelArgs *a, bool mul) {
    Tensor *y = a->out[0];
    const Type *ops[2] = {&a->in[0]->type, &a->in[1]->type};
    Bcast b;
    bcast_init(&b, &y->type, ops, 2);
    for (int64_t i = 0; i < tensor_numel(y); i++, bcast_next(&b)) {
        double u = real_of(a->in[0], b.off[0]), v = real_of(a->in[1], b.off[1]);
        store_real(y, i, mul ? u * v : u + v);
    }
    return true;
}

bool k_qadd(const KernelArgs *a) {
    return qbinary(a, false);
}

bool k_qmul(const KernelArgs *a) {
    return qbinary(a, true);
}

/* The float pool kernel on the real values, each result then quantized:
 * one definition of windows and padding for both. */
static bool qpool(const KernelArgs *a, KernelFn float_pool) {
    const Tensor *x = a->in[0];
    Tensor *y = a->out[0];
    Arena *ar = arena_new();
    Type xt = x->type, yt = y->type;
    xt.elem = yt.elem = ELEM_F64;
    xt.quant = yt.quant = QUANT_NONE;
    Tensor *xf = tensor_new_big(ar, &xt), *yf = tensor_new_big(ar, &yt);
    bool ok = xf && yf;
    for (int64_t i = 0; ok && i < tensor_numel(x); i++)
        tensor_set_f64(xf, i, real_of(x, i));
    KernelArgs fa = {a->n, (Tensor *const[]){xf}, (Tensor *const[]){yf}, a->d, a->strs};
    ok = ok ? float_pool(&fa) : kernel_fail(a, "out of memory");
    for (int64_t i = 0; ok && i < tensor_numel(y); i++)
        store_real(y, i, tensor_get_f64(yf, i));
    arena_destroy(ar);
    return ok;
}

bool k_qavg_pool(const KernelArgs *a) {
    return qpool(a, k_avg_pool);
}

bool k_qglobal_avg_pool(const KernelArgs *a) {
    return qpool(a, k_global_avg_pool);
}
