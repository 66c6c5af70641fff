/* Vector forms of the int8 kernels that are not convolutions: rescale,
 * qadd and qmul on i8/u8 operands of one shape, clip of i8/u8, and the
 * 2-D max pool of i8/u8 (k_qint.c calls lj_qmax_pool_2d). The typed names
 * (libjit_qadd_i8 ...) are found before libjit_qadd_any by code generation;
 * the shapes and kinds they do not cover go to the scalar kernels.
 *
 * Results stay identical to the interpreter: the requantization is the
 * same double operations lane by lane (the scale times the integer less the
 * zero point, the sum or product, the division by the result's scale,
 * rounding half to even, the zero point, saturation). IEEE operations on
 * doubles give the same bits in a vector lane as in a scalar register, and
 * roundeven is nearbyint in the default rounding mode. */
#include "backends/cpu/libjit/k_qint.h"
#include "backends/cpu/libjit/vec.h"

#pragma STDC FP_CONTRACT OFF

enum { QB = LJ_VL * 4 /* bytes in one vector register */ };

typedef double vq64 __attribute__((vector_size(LJ_VL * 8)));
typedef int64_t vqm64 __attribute__((vector_size(LJ_VL * 8)));
typedef int8_t vqs8 __attribute__((vector_size(LJ_VL)));
typedef uint8_t vqu8 __attribute__((vector_size(LJ_VL)));
typedef int8_t vbs8 __attribute__((vector_size(QB)));
typedef uint8_t vbu8 __attribute__((vector_size(QB)));

/* Each kernel here has its scalar kernel's work units, so that the shapes
 * it hands over can be run unit by unit; its own units are the elements
 * [n lo / work, n hi / work). */
LJ_INLINE void qv_range(const int64_t *d, int64_t work, int64_t lo, int64_t hi, int64_t *i,
                        int64_t *end) {
    int64_t n = lj_numel(d, 0);
    work = work > 0 ? work : 1;
    *i = n * lo / work;
    *end = n * hi / work;
}

LJ_INLINE bool qv_byte_kind(int e) {
    return e == ELEM_I8 || e == ELEM_U8;
}

/* LJ_VL bytes of kind e (i8 or u8) from p + i, widened. */
LJ_INLINE vi32 qv_load(int e, const void *p, int64_t i) {
    if (e == ELEM_I8) {
        vqs8 v;
        __builtin_memcpy(&v, (const int8_t *)p + i, sizeof v);
        return __builtin_convertvector(v, vi32);
    }
    vqu8 v;
    __builtin_memcpy(&v, (const uint8_t *)p + i, sizeof v);
    return __builtin_convertvector(v, vi32);
}

LJ_INLINE void qv_store(int e, void *p, int64_t i, vi32 v) {
    if (e == ELEM_I8) {
        vqs8 b = __builtin_convertvector(v, vqs8);
        __builtin_memcpy((int8_t *)p + i, &b, sizeof b);
        return;
    }
    vqu8 b = __builtin_convertvector(v, vqu8);
    __builtin_memcpy((uint8_t *)p + i, &b, sizeof b);
}

LJ_INLINE vq64 qv_sel(vqm64 m, vq64 a, vq64 b) {
    return (vq64)(((vqm64)a & m) | ((vqm64)b & ~m));
}

/* lj_store_q's steps on a vector of reals already divided by the scale. */
LJ_INLINE vi32 qv_saturate(int e, vq64 v, double zp) {
    double lo = e == ELEM_I8 ? -128.0 : 0.0, hi = e == ELEM_I8 ? 127.0 : 255.0;
    vq64 q = __builtin_elementwise_roundeven(v) + zp;
    vq64 c = qv_sel(q > hi, (vq64){0} + hi, q);
    c = qv_sel(q < lo, (vq64){0} + lo, c);
    c = qv_sel(q != q, (vq64){0} + lo, c);
    return __builtin_convertvector(c, vi32);
}

/* ---- rescale, qadd, qmul ------------------------------------------------------ */

/* One operand: its data, kind, scale and zero point. */
typedef struct QvSide {
    const void *p;
    int e;
    int32_t zp;
    double scale;
} QvSide;

enum { QV_RESCALE, QV_ADD, QV_MUL };

LJ_INLINE vq64 qv_real(const QvSide *s, int e, int64_t i) {
    return __builtin_convertvector(qv_load(e, s->p, i) - s->zp, vq64) * s->scale;
}

/* The fixed-point form of a sum (or a rescale) for lanes whose result it
 * decides: w = ka a + kb b + c in i32, ka = sa / sy, kb = sb / sy with s
 * fraction bits, c the zero points' share plus one half. Its error is at
 * most 255 (|ka - sa / sy 2^s| + |kb - ...|) + 1 < 2^9 units of 2^-s, the
 * interpreter's roundings (u = sa a', v = sb b', u + v, / sy) at most
 * 2^-20 of one: so where w's fraction is at least QV_NEAR from 0 and 1,
 * the real (a' sa + b' sb) / sy + 1/2 is not within 2^-20 of an integer,
 * the interpreter's quotient is no tie, and its rounding is w >> s. Lanes
 * near a tie (rare, and every lane when the scales make exact ties: the
 * vector goes through the double path) are left to the exact path. */
enum { QV_NEAR = 1 << 10 };

typedef struct QvFixed {
    int32_t ka, kb, c, zy;
    int s; /* 0: no fixed-point form (the double path for every lane) */
} QvFixed;

LJ_INLINE QvFixed qv_fixed(int op, const QvSide *a, const QvSide *b, double sy, double zy) {
    QvFixed f = {0};
    double ra = a->scale / sy, rb = op == QV_ADD ? b->scale / sy : 0;
    double zb = op == QV_ADD ? b->zp : 0;
    /* the largest |w| / 2^s: 256 |ra| + 256 |rb| + |ra za| + |rb zb| + 1 */
    double most = 256 * (fabs(ra) + fabs(rb)) + fabs(ra * a->zp) + fabs(rb * zb) + 2;
    if (op == QV_MUL || !(most < 0x1p14) || !(fabs(zy) < 0x1p14))
        return f;
    int s = 24;
    while (s > 16 && most * (double)(1 << s) >= 0x1p30)
        s--;
    if (most * (double)(1 << s) >= 0x1p30)
        return f;
    f.s = s;
    f.ka = (int32_t)nearbyint(ra * (double)(1 << s));
    f.kb = (int32_t)nearbyint(rb * (double)(1 << s));
    f.c = (int32_t)nearbyint((-ra * a->zp - rb * zb) * (double)(1 << s)) + (1 << (s - 1));
    f.zy = (int32_t)zy;
    return f;
}

/* One vector by the fixed-point form; false (nothing stored) when a lane
 * is near a tie. */
LJ_INLINE bool qv_fixed_vec(int op, int ea, int eb, int ey, const QvFixed *f, const QvSide *a,
                            const QvSide *b, void *y, int64_t i) {
    vi32 w = qv_load(ea, a->p, i) * f->ka + f->c;
    if (op == QV_ADD)
        w += qv_load(eb, b->p, i) * f->kb;
    vi32 frac = w & ((1 << f->s) - 1);
    typedef uint32_t vu32 __attribute__((vector_size(LJ_VL * 4)));
    vu32 near = (vu32)(frac - QV_NEAR) > (vu32)((vi32){0} + ((1 << f->s) - 2 * QV_NEAR));
    if (__builtin_reduce_or(near))
        return false;
    int32_t lo = ey == ELEM_I8 ? -128 : 0, hi = ey == ELEM_I8 ? 127 : 255;
    vi32 q = (w >> f->s) + f->zy;
    q = __builtin_elementwise_min(__builtin_elementwise_max(q, (vi32){0} + lo), (vi32){0} + hi);
    qv_store(ey, y, i, q);
    return true;
}

/* Elements [i, end) in whole vectors; returns where it stopped. The kinds
 * are constants at each call, so each combination is a loop of its own. */
LJ_INLINE int64_t qv_binary_body(int op, int ea, int eb, int ey, const QvSide *a, const QvSide *b,
                                 void *y, double sy, double zy, int64_t i, int64_t end) {
    QvFixed f = qv_fixed(op, a, b, sy, zy);
    for (; i + LJ_VL <= end; i += LJ_VL) {
        if (f.s && qv_fixed_vec(op, ea, eb, ey, &f, a, b, y, i))
            continue;
        vq64 u = qv_real(a, ea, i), r = u;
        if (op != QV_RESCALE) {
            vq64 v = qv_real(b, eb, i);
            r = op == QV_MUL ? u * v : u + v;
        }
        qv_store(ey, y, i, qv_saturate(ey, r / sy, zy));
    }
    return i;
}

#define QV_KINDS(op, ea, eb)                                                                       \
    (ey == ELEM_I8 ? qv_binary_body(op, ea, eb, ELEM_I8, a, b, y, sy, zy, i, end)                  \
                   : qv_binary_body(op, ea, eb, ELEM_U8, a, b, y, sy, zy, i, end))
#define QV_OPS(ea, eb)                                                                             \
    (op == QV_RESCALE ? QV_KINDS(QV_RESCALE, ea, eb)                                               \
     : op == QV_ADD   ? QV_KINDS(QV_ADD, ea, eb)                                                   \
                      : QV_KINDS(QV_MUL, ea, eb))

LJ_VECTOR_FN static int64_t qv_binary_span(int op, int ey, const QvSide *a, const QvSide *b,
                                           void *y, double sy, double zy, int64_t i, int64_t end) {
    bool as = a->e == ELEM_I8, bs = b->e == ELEM_I8;
    if (as && bs)
        return QV_OPS(ELEM_I8, ELEM_I8);
    if (as)
        return QV_OPS(ELEM_I8, ELEM_U8);
    if (bs)
        return QV_OPS(ELEM_U8, ELEM_I8);
    return QV_OPS(ELEM_U8, ELEM_U8);
}

LJ_INLINE bool qv_zp_fits(int64_t zp) {
    return zp > -(1 << 30) && zp < (1 << 30);
}

LJ_INLINE QvSide qv_side(const int64_t *d, void *const *ops, int k) {
    QvSide s = {.p = ops[k], .e = lj_elem(d, k), .zp = (int32_t)lj_qoffset(d, k),
                .scale = lj_qscale(d, k)};
    return s;
}

/* The tail of fewer than LJ_VL elements through the same vector code, on
 * copies padded with zeros (y may be one of the operands, in place). */
LJ_INLINE void qv_binary_tail(int op, int ey, const QvSide *a, const QvSide *b, void *y, double sy,
                              double zy, int64_t i, int64_t end) {
    uint8_t ta[LJ_VL] = {0}, tb[LJ_VL] = {0}, ty[LJ_VL];
    int64_t n = end - i;
    __builtin_memcpy(ta, (const uint8_t *)a->p + i, (size_t)n);
    __builtin_memcpy(tb, (const uint8_t *)b->p + i, (size_t)n);
    QvSide ca = *a, cb = *b;
    ca.p = ta;
    cb.p = tb;
    qv_binary_span(op, ey, &ca, &cb, ty, sy, zy, 0, LJ_VL);
    __builtin_memcpy((uint8_t *)y + i, ty, (size_t)n);
}

/* Operands of the result's shape (no broadcasting) and kinds i8/u8 take
 * the vector loop; the rest, the scalar kernel. */
LJ_INLINE void qv_binary(const int64_t *d, void *const *ops, int64_t lo, int64_t hi, int op,
                         void (*scalar)(const int64_t *, void *const *, int64_t, int64_t, LjScratch *),
                         int64_t work, LjScratch *sc) {
    int64_t n = lj_numel(d, 0), i, end;
    qv_range(d, work, lo, hi, &i, &end);
    int nin = op == QV_RESCALE ? 1 : 2;
    bool fits = qv_byte_kind(lj_elem(d, 0)) && qv_zp_fits(lj_qoffset(d, 0));
    for (int k = 1; k <= nin; k++)
        fits &= lj_numel(d, k) == n && qv_byte_kind(lj_elem(d, k)) && qv_zp_fits(lj_qoffset(d, k));
    if (!fits) {
        scalar(d, ops, lo, hi, sc);
        return;
    }
    QvSide a = qv_side(d, ops, 1), b = nin == 2 ? qv_side(d, ops, 2) : a;
    int ey = lj_elem(d, 0);
    double sy = lj_qscale(d, 0), zy = (double)lj_qoffset(d, 0);
    i = qv_binary_span(op, ey, &a, &b, ops[0], sy, zy, i, end);
    if (i < end)
        qv_binary_tail(op, ey, &a, &b, ops[0], sy, zy, i, end);
}

#define QV_BINARY_KERNEL(name, OP, E)                                                             \
    LIBJIT_WORK libjit_##name##_##E##_work(const int64_t *d) {                                    \
        return libjit_##name##_any_work(d);                                                       \
    }                                                                                             \
    LIBJIT_KERNEL libjit_##name##_##E(const int64_t *d, void *const *ops, int64_t lo, int64_t hi, \
                                      LjScratch *sc) {                                            \
        qv_binary(d, ops, lo, hi, OP, libjit_##name##_any, libjit_##name##_any_work(d), sc);     \
    }
QV_BINARY_KERNEL(rescale, QV_RESCALE, i8)
QV_BINARY_KERNEL(rescale, QV_RESCALE, u8)
QV_BINARY_KERNEL(qadd, QV_ADD, i8)
QV_BINARY_KERNEL(qadd, QV_ADD, u8)
QV_BINARY_KERNEL(qmul, QV_MUL, i8)
QV_BINARY_KERNEL(qmul, QV_MUL, u8)

/* ---- clip ------------------------------------------------------------------------ */

/* The bounds as the table kernel reads them (k_table.c, un_args): the
 * attributes, or the operands min and max when both are given. */
LJ_INLINE void qv_clip_bounds(const int64_t *d, void *const *ops, double *lo, double *hi) {
    *lo = lj_attr_float(d, AK_min, -INFINITY);
    *hi = lj_attr_float(d, AK_max, INFINITY);
    if (lj_nops(d) == 4) {
        *lo = lj_ld_f64(lj_elem(d, 2), ops[2], 0);
        *hi = lj_ld_f64(lj_elem(d, 3), ops[3], 0);
    }
}

/* The table kernel's clip of one integer (k_table.c, clip_i), stored as a
 * byte of kind e. */
LJ_INLINE int64_t qv_clip1(int e, int64_t x, double lo, double hi) {
    x = (double)x < lo ? lj_f64_to_i64(lo) : x;
    x = (double)x > hi ? lj_f64_to_i64(hi) : x;
    return e == ELEM_I8 ? (int8_t)(uint64_t)x : (uint8_t)(uint64_t)x;
}

/* Over the 256 values of a byte the clip is a clamp to [c_lo, c_hi] in
 * the kind's order whenever the bounds fall inside its range; checking
 * that on all 256 (rather than reasoning about rounding of the bounds)
 * keeps the vector form exact, and the odd cases take the scalar kernel. */
LJ_INLINE bool qv_clip_is_clamp(int e, double lo, double hi, int *c_lo, int *c_hi) {
    int base = e == ELEM_I8 ? -128 : 0;
    *c_lo = (int)qv_clip1(e, base, lo, hi);
    *c_hi = (int)qv_clip1(e, base + 255, lo, hi);
    if (*c_lo > *c_hi)
        return false;
    for (int v = base; v < base + 256; v++) {
        int c = v < *c_lo ? *c_lo : v > *c_hi ? *c_hi : v;
        if (qv_clip1(e, v, lo, hi) != c)
            return false;
    }
    return true;
}

#define QV_CLAMP_SPAN(T, VT)                                                                       \
    LJ_VECTOR_FN static void qv_clamp_##T(const T *x, T *y, int64_t n, T lo, T hi) {               \
        int64_t i = 0;                                                                             \
        VT vlo = (VT){0} + lo, vhi = (VT){0} + hi;                                                 \
        for (; i + QB <= n; i += QB) {                                                             \
            VT v;                                                                                  \
            __builtin_memcpy(&v, x + i, QB);                                                       \
            v = __builtin_elementwise_min(__builtin_elementwise_max(v, vlo), vhi);                 \
            __builtin_memcpy(y + i, &v, QB);                                                       \
        }                                                                                          \
        for (; i < n; i++)                                                                         \
            y[i] = x[i] < lo ? lo : x[i] > hi ? hi : x[i];                                         \
    }
QV_CLAMP_SPAN(int8_t, vbs8)
QV_CLAMP_SPAN(uint8_t, vbu8)

LJ_INLINE void qv_clip(const int64_t *d, void *const *ops, int64_t lo, int64_t hi, LjScratch *sc) {
    int e = lj_elem(d, 0);
    int64_t i, end;
    qv_range(d, libjit_clip_any_work(d), lo, hi, &i, &end);
    double blo, bhi;
    qv_clip_bounds(d, ops, &blo, &bhi);
    int c_lo, c_hi;
    if (lj_elem(d, 1) != e || !qv_byte_kind(e) || !qv_clip_is_clamp(e, blo, bhi, &c_lo, &c_hi)) {
        libjit_clip_any(d, ops, lo, hi, sc);
        return;
    }
    if (e == ELEM_I8)
        qv_clamp_int8_t((const int8_t *)ops[1] + i, (int8_t *)ops[0] + i, end - i, (int8_t)c_lo,
                        (int8_t)c_hi);
    else
        qv_clamp_uint8_t((const uint8_t *)ops[1] + i, (uint8_t *)ops[0] + i, end - i,
                         (uint8_t)c_lo, (uint8_t)c_hi);
}

#define QV_CLIP_KERNEL(E)                                                                          \
    LIBJIT_WORK libjit_clip_##E##_work(const int64_t *d) {                                         \
        return libjit_clip_any_work(d);                                                            \
    }                                                                                              \
    LIBJIT_KERNEL libjit_clip_##E(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,      \
                                  LjScratch *sc) {                                                 \
        qv_clip(d, ops, lo, hi, sc);                                                               \
    }
QV_CLIP_KERNEL(i8)
QV_CLIP_KERNEL(u8)

/* ---- 2-D max pool ---------------------------------------------------------------- */

/* input columns per block of one output row; bytes per vector (the
 * horizontal pass); bytes per vector of the vertical one */
enum { QV_ROW = 512, QV_V = 16, QV_WIDE = 64 };

/* col[c] = the largest of rows[r][c0 + c] over the nr rows, c < n (at
 * least W), in vectors of W bytes, the last one overlapping. */
#define QV_COL_MAX(T, W, rows, nr, c0, n, col)                                                     \
    for (int64_t c = 0; c < (n); c += (W)) {                                                        \
        typedef T VW __attribute__((vector_size(W)));                                               \
        c = c + (W) <= (n) ? c : (n) - (W);                                                         \
        VW m;                                                                                       \
        __builtin_memcpy(&m, (rows)[0] + (c0) + c, (W));                                            \
        for (int r = 1; r < (nr); r++) {                                                            \
            VW v;                                                                                   \
            __builtin_memcpy(&v, (rows)[r] + (c0) + c, (W));                                        \
            m = __builtin_elementwise_max(m, v);                                                    \
        }                                                                                           \
        __builtin_memcpy((col) + c, &m, (W));                                                       \
    }

/* Output row oy of one plane, columns [x0, x1): the largest of the valid
 * rows column by column (QV_COL_MAX: vectors of 64 bytes, or 16 under 64
 * columns), into a row padded with the kind's least value (which never
 * wins: every window has a valid column, lj_qmax_pool_2d checks; only the
 * padding is filled, the bitcode's loops being scalar -- with the wide
 * vectors, resnet50's int8 stem pool 0.075-0.076 -> 0.066-0.073 ms, per-node
 * minima of alternated runs), then of each window's columns -- vectors of
 * sixteen outputs for strides 1 and 2 (the even bytes of two loads), the
 * last one overlapping.
 * Only the value matters, so which of equal values is first does not. */
#define QV_MAX_POOL(T, VT, LEAST)                                                                   \
    LJ_VECTOR_FN static void qv_max_row_##T(const LjQWin *w, const T *plane, int64_t ih,            \
                                            int64_t iw, int64_t oy, T *out, int64_t x0,             \
                                            int64_t x1) {                                           \
        typedef T V16 __attribute__((vector_size(QV_V)));                                           \
        const T *rows[64];                                                                          \
        int nr = 0;                                                                                 \
        for (int64_t i = 0; i < w->kernel[0]; i++) {                                                \
            int64_t yy = oy * w->stride[0] - w->pad_begin[0] + i * w->dilation[0];                  \
            if (yy >= 0 && yy < ih)                                                                 \
                rows[nr++] = plane + yy * iw;                                                       \
        }                                                                                           \
        int64_t s = w->stride[1], dl = w->dilation[1], k = w->kernel[1];                            \
        /* tmp[i]: input column b0 + i, for i < len (QV_ROW at most) */                             \
        int64_t b0 = x0 * s - w->pad_begin[1], len = (x1 - x0 - 1) * s + (k - 1) * dl + 1;          \
        int64_t c0 = b0 > 0 ? b0 : 0, c1 = b0 + len < iw ? b0 + len : iw, n = c1 - c0;              \
        T tmp[QV_ROW + 2 * QV_V];                                                                   \
        for (int64_t i = 0; i < c0 - b0; i++) /* the padding only: the rest is written below */     \
            tmp[i] = LEAST;                                                                         \
        for (int64_t i = c0 - b0 + n; i < len + 2 * QV_V; i++)                                      \
            tmp[i] = LEAST;                                                                         \
        T *col = tmp + (c0 - b0);                                                                   \
        if (n >= QV_WIDE) {                                                                         \
            QV_COL_MAX(T, QV_WIDE, rows, nr, c0, n, col)                                            \
        } else if (n >= QV_V) {                                                                     \
            QV_COL_MAX(T, QV_V, rows, nr, c0, n, col)                                               \
        }                                                                                           \
        for (int64_t c = 0; n < QV_V && c < n; c++) {                                               \
            T m = rows[0][c0 + c];                                                                  \
            for (int r = 1; r < nr; r++)                                                            \
                m = rows[r][c0 + c] > m ? rows[r][c0 + c] : m;                                      \
            col[c] = m;                                                                             \
        }                                                                                           \
        int64_t no = x1 - x0;                                                                       \
        for (int64_t x = 0; (s == 1 || s == 2) && no >= QV_V && x < no; x += QV_V) {                \
            x = x + QV_V <= no ? x : no - QV_V;                                                     \
            V16 m = (V16){0} + (T)LEAST;                                                            \
            for (int64_t j = 0; j < k; j++) {                                                       \
                const T *p = tmp + x * s + j * dl;                                                  \
                V16 lo, hi;                                                                         \
                __builtin_memcpy(&lo, p, QV_V);                                                     \
                __builtin_memcpy(&hi, p + (s == 1 ? 0 : QV_V - 1), QV_V);                           \
                m = __builtin_elementwise_max(                                                      \
                    m, s == 1 ? lo : __builtin_shufflevector(lo, hi, WORDS_EVEN_16));               \
            }                                                                                       \
            __builtin_memcpy(out + x0 + x, &m, QV_V);                                               \
        }                                                                                           \
        for (int64_t x = 0; !((s == 1 || s == 2) && no >= QV_V) && x < no; x++) {                   \
            T m = LEAST;                                                                            \
            for (int64_t j = 0; j < k; j++)                                                         \
                m = tmp[x * s + j * dl] > m ? tmp[x * s + j * dl] : m;                              \
            out[x0 + x] = m;                                                                        \
        }                                                                                           \
    }
/* Two 16-byte loads from p and p + 15: their even bytes are p[0], p[2] ... p[30]. */
#define WORDS_EVEN_16 0, 2, 4, 6, 8, 10, 12, 14, 17, 19, 21, 23, 25, 27, 29, 31
QV_MAX_POOL(int8_t, vbs8, -128)
QV_MAX_POOL(uint8_t, vbu8, 0)

LJ_INLINE bool qv_windows_inside(int64_t in, int64_t out, int64_t k, int64_t s, int64_t p,
                                 int64_t dl) {
    for (int64_t o = 0; o < out; o++) {
        bool any = false;
        for (int64_t j = 0; j < k && !any; j++)
            any = o * s - p + j * dl >= 0 && o * s - p + j * dl < in;
        if (!any)
            return false;
    }
    return true;
}

bool lj_qmax_pool_2d(const int64_t *d, const LjQWin *w, void *const *ops, int64_t lo, int64_t hi) {
    int e = lj_elem(d, 0);
    int64_t ih = lj_dim(d, 1, 2), iw = lj_dim(d, 1, 3), oh = lj_dim(d, 0, 2), ow = lj_dim(d, 0, 3);
    int64_t span = (w->kernel[1] - 1) * w->dilation[1] + 1;
    /* outputs per block: their input columns fit in QV_ROW */
    int64_t per = w->stride[1] > 0 && span < QV_ROW / 2 ? (QV_ROW - span) / w->stride[1] + 1 : 0;
    if (!qv_byte_kind(e) || lj_elem(d, 1) != e || w->kernel[0] > 64 || per <= 0)
        return false;
    /* every window has a valid row and column (windows all padding are 0:
     * the scalar loop's) */
    for (int a = 0; a < 2; a++)
        if (!qv_windows_inside(lj_dim(d, 1, 2 + a), lj_dim(d, 0, 2 + a), w->kernel[a], w->stride[a],
                               w->pad_begin[a], w->dilation[a]))
            return false;
    for (int64_t pl = lo; pl < hi; pl++)
        for (int64_t y = 0; y < oh; y++)
            for (int64_t x0 = 0; x0 < ow; x0 += per) {
                int64_t x1 = x0 + per < ow ? x0 + per : ow;
                if (e == ELEM_I8)
                    qv_max_row_int8_t(w, (const int8_t *)ops[1] + pl * ih * iw, ih, iw, y,
                                      (int8_t *)ops[0] + (pl * oh + y) * ow, x0, x1);
                else
                    qv_max_row_uint8_t(w, (const uint8_t *)ops[1] + pl * ih * iw, ih, iw, y,
                                       (uint8_t *)ops[0] + (pl * oh + y) * ow, x0, x1);
            }
    return true;
}

/* ---- the convolutions' requantizing store ------------------------------------- */

/* The sums are exact integers below 2^53 in double, so (double)acc + base
 * - zsx sx is the scalar's integer a, and a * mult the same product. */
LJ_INLINE void qv_requant_body(int ey, void *y, const int32_t *acc, const int32_t *sx, int64_t zsx,
                               int64_t base, double mult, double yz, int64_t n) {
    int64_t t = 0;
    for (; t + LJ_VL <= n; t += LJ_VL) {
        vi32 a;
        __builtin_memcpy(&a, acc + t, sizeof a);
        vq64 v = __builtin_convertvector(a, vq64) + (double)base;
        if (zsx) {
            vi32 s;
            __builtin_memcpy(&s, sx + t, sizeof s);
            v = v - __builtin_convertvector(s, vq64) * (double)zsx;
        }
        qv_store(ey, y, t, qv_saturate(ey, v * mult, yz));
    }
    for (; t < n; t++) {
        int64_t a = (int64_t)acc[t] + base - (zsx ? zsx * sx[t] : 0);
        lj_store_q(ey, y, t, (double)a * mult, (int64_t)yz);
    }
}

/* With no sx term, an f32 multiplier in [2^-15, 1/4) and |base| < 2^24,
 * one f32 fma gives the double product's integers (k_qconvp.c's pq_requant
 * says why): a sum clamped to +-2^25 before base is added cannot overflow
 * i32, and one beyond +-(2^24 - 1) saturates either way, as the exact one
 * does. The last partial vector goes through a copy, not lj_store_q. */
enum { QV_MAGIC_BITS = 0x4B400000 }; /* 1.5 * 2^23 */

LJ_INLINE bool qv_requant_f32_fits(int64_t zsx, int64_t base, double mult) {
    return !zsx && (double)(float)mult == mult && mult >= 0x1p-15 && mult < 0.25 &&
           base > -(1 << 24) && base < (1 << 24);
}

LJ_INLINE vi32 qv_requant_f32(vi32 a, int32_t base, float mult, int32_t zadj, int32_t lo,
                              int32_t hi) {
    a = __builtin_elementwise_min(__builtin_elementwise_max(a, (vi32){0} - (1 << 25)),
                                  (vi32){0} + (1 << 25)) +
        base;
    a = __builtin_elementwise_min(__builtin_elementwise_max(a, (vi32){0} - ((1 << 24) - 1)),
                                  (vi32){0} + ((1 << 24) - 1));
    vf32 f = __builtin_elementwise_fma(__builtin_convertvector(a, vf32), lj_splat(mult),
                                       lj_splat(12582912.0f));
    vi32 q = (vi32)f - zadj;
    return __builtin_elementwise_min(__builtin_elementwise_max(q, (vi32){0} + lo), (vi32){0} + hi);
}

LJ_INLINE void qv_requant_f32_body(int ey, void *y, const int32_t *acc, int64_t base, double mult,
                                   double yz, int64_t n) {
    int32_t lo = ey == ELEM_I8 ? -128 : 0, hi = ey == ELEM_I8 ? 127 : 255;
    int32_t zadj = QV_MAGIC_BITS - (int32_t)yz;
    int64_t t = 0;
    for (; t + LJ_VL <= n; t += LJ_VL) {
        vi32 a;
        __builtin_memcpy(&a, acc + t, sizeof a);
        qv_store(ey, y, t, qv_requant_f32(a, (int32_t)base, (float)mult, zadj, lo, hi));
    }
    if (t < n) {
        int32_t part[LJ_VL] = {0};
        uint8_t out[LJ_VL];
        vi32 a;
        __builtin_memcpy(part, acc + t, (size_t)(n - t) * 4);
        __builtin_memcpy(&a, part, sizeof a);
        qv_store(ey, out, 0, qv_requant_f32(a, (int32_t)base, (float)mult, zadj, lo, hi));
        __builtin_memcpy((uint8_t *)y + t, out, (size_t)(n - t));
    }
}

LJ_VECTOR_FN void lj_qrequant_row(int ey, void *y, const int32_t *acc, const int32_t *sx,
                                  int64_t zsx, int64_t base, double mult, double yz, int64_t n) {
    if (qv_requant_f32_fits(zsx, base, mult) && ey == ELEM_I8)
        qv_requant_f32_body(ELEM_I8, y, acc, base, mult, yz, n);
    else if (qv_requant_f32_fits(zsx, base, mult))
        qv_requant_f32_body(ELEM_U8, y, acc, base, mult, yz, n);
    else if (ey == ELEM_I8)
        qv_requant_body(ELEM_I8, y, acc, sx, zsx, base, mult, yz, n);
    else
        qv_requant_body(ELEM_U8, y, acc, sx, zsx, base, mult, yz, n);
}

/* ---- quantize_linear of f32 by one scale --------------------------------------- */

/* The interpreter divides f32 by f32 and rounds the f32 quotient half to
 * even, then adds the zero point in double and saturates. The rounded
 * quotient plus the zero point is exact in f32 below 2^24 and saturates
 * either way above, so f32 lanes give the same bytes. */
LJ_INLINE void qv_quantize_body(int ey, const float *x, void *y, float s, float zp, int64_t n) {
    float lo = ey == ELEM_I8 ? -128.0f : 0.0f, hi = ey == ELEM_I8 ? 127.0f : 255.0f;
    int64_t t = 0;
    for (; t + LJ_VL <= n; t += LJ_VL) {
        vf32 q = __builtin_elementwise_roundeven(lj_load(x + t) / s) + zp;
        vf32 c = lj_select(q > hi, lj_splat(hi), q);
        c = lj_select(q < lo, lj_splat(lo), c);
        c = lj_select(q != q, lj_splat(lo), c);
        qv_store(ey, y, t, __builtin_convertvector(c, vi32));
    }
    for (; t < n; t++)
        lj_store_q(ey, y, t, (double)(x[t] / s), (int64_t)zp);
}

LJ_VECTOR_FN static void qv_quantize_span(int ey, const float *x, void *y, float s, float zp,
                                          int64_t n) {
    if (ey == ELEM_I8)
        qv_quantize_body(ELEM_I8, x, y, s, zp, n);
    else
        qv_quantize_body(ELEM_U8, x, y, s, zp, n);
}

LJ_INLINE void qv_quantize(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                           LjScratch *sc) {
    int64_t i, end, w = libjit_quantize_linear_any_work(d);
    qv_range(d, w, lo, hi, &i, &end);
    bool one = lj_numel(d, 2) <= 1 && lj_rank(d, 2) <= 1;
    if (!one || lj_elem(d, 1) != ELEM_F32 || lj_elem(d, 2) != ELEM_F32 ||
        !qv_byte_kind(lj_elem(d, 0)) || lj_elem(d, 3) != lj_elem(d, 0)) {
        libjit_quantize_linear_any(d, ops, lo, hi, sc);
        return;
    }
    int ey = lj_elem(d, 0);
    float zp = ey == ELEM_I8 ? (float)*(const int8_t *)ops[3] : (float)*(const uint8_t *)ops[3];
    qv_quantize_span(ey, (const float *)ops[1] + i, (uint8_t *)ops[0] + i, *(const float *)ops[2], zp,
                     end - i);
}

#define QV_QUANTIZE_KERNEL(E)                                                                      \
    LIBJIT_WORK libjit_quantize_linear_##E##_work(const int64_t *d) {                              \
        return libjit_quantize_linear_any_work(d);                                                 \
    }                                                                                              \
    LIBJIT_KERNEL libjit_quantize_linear_##E(const int64_t *d, void *const *ops, int64_t lo,       \
                                             int64_t hi, LjScratch *sc) {                          \
        qv_quantize(d, ops, lo, hi, sc);                                                           \
    }
QV_QUANTIZE_KERNEL(i8)
QV_QUANTIZE_KERNEL(u8)
