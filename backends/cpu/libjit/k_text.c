/* Text kernels. tfidf_vectorizer as libjit_tfidf_vectorizer_any: the
 * interpreter's counting (core/tfidf.h, one source for both), a row of
 * tokens per unit of work, the counts in the unit's scratch. Strings (kind
 * str): casts to and from numbers (lj_cast_strings, called by
 * libjit_cast_any) and string_normalizer, over core/str_ops.h as the
 * interpreter's are, the characters in the thread's string arena. */
#include "backends/cpu/libjit/elem.h"
#include "backends/cpu/libjit/kernels.h"
#include "core/str_ops.h"
#include "core/tfidf.h"

typedef struct TxRow {
    int elem;
    const void *p;
    int64_t base;
} TxRow;

static int64_t tx_load(const void *ctx, int64_t i) {
    const TxRow *r = ctx;
    return lj_ld_i64(r->elem, r->p, r->base + i);
}

LJ_INLINE int64_t tx_rows(const int64_t *d) {
    return lj_rank(d, 1) == 2 ? lj_dim(d, 1, 0) : 1;
}

LIBJIT_WORK libjit_tfidf_vectorizer_any_work(const int64_t *d) {
    return tx_rows(d) > 0 ? tx_rows(d) : 1;
}

LIBJIT_SCRATCH libjit_tfidf_vectorizer_any_scratch(const int64_t *d, int slot) {
    return slot == LJ_SCRATCH_PLANES ? (lj_dim(d, 4, 0) + 1) * (int64_t)sizeof(double) : 0;
}

/* Rows [lo, hi). Operands: y, tokens, pool, indexes, weights. */
LIBJIT_KERNEL libjit_tfidf_vectorizer_any(const int64_t *d, void *const *ops, int64_t lo,
                                          int64_t hi, LjScratch *sc) {
    int k;
    const int64_t *levels = lj_attr(d, AK_ngram_counts, &k);
    TfIdf t = {lj_attr_int(d, AK_min_gram_length, 1), lj_attr_int(d, AK_max_gram_length, 1),
               lj_attr_int(d, AK_max_skip_count, 0), levels ? k : 0, levels,
               ops[2], ops[3], lj_numel(d, 2), lj_numel(d, 3), lj_dim(d, 4, 0)};
    int mode = (int)lj_attr_int(d, AK_mode, MODE_TF) - MODE_TF;
    int64_t len = lj_dim(d, 1, lj_rank(d, 1) - 1);
    double *count = lj_scratch_get(sc, LJ_SCRATCH_PLANES,
                                   (size_t)libjit_tfidf_vectorizer_any_scratch(d, LJ_SCRATCH_PLANES));
    if (!count)
        return;
    const float *w = ops[4];
    float *y = ops[0];
    for (int64_t r = lo; r < hi && r < tx_rows(d); r++) {
        TxRow row = {lj_elem(d, 1), ops[1], r * len};
        tfidf_row(&t, tx_load, &row, len, count);
        for (int64_t c = 0; c < t.width; c++)
            y[r * t.width + c] = (float)tfidf_value(mode, count[c], (double)w[c]);
    }
    lj_scratch_put(sc, count);
}

/* ---- strings ------------------------------------------------------------ */

static bool lj_same_f32(double v, double parsed) {
    return (float)parsed == (float)v;
}

static bool lj_same_f64(double v, double parsed) {
    return parsed == v;
}

static bool lj_same_f16(double v, double parsed) {
    return lj_f32_to_f16((float)parsed) == lj_f32_to_f16((float)v);
}

static bool lj_same_bf16(double v, double parsed) {
    return lj_f32_to_bf16((float)parsed) == lj_f32_to_bf16((float)v);
}

/* s, copied into the thread's string arena, as the slot's pointer bits
 * (NULL, read as "", only when out of memory: a kernel cannot fail). */
static uint64_t lj_str_keep(LjScratch *sc, const char *s, size_t len) {
    char *p = lj_str_alloc(sc, len + 1);
    if (!p)
        return 0;
    memcpy(p, s, len);
    p[len] = 0;
    return (uint64_t)(uintptr_t)p;
}

/* Elements [e0, e1) from kind `from` to kind `to`, one of them str: the
 * interpreter's rules (k_elementwise.c); a string that is no number is
 * recorded as the kernel's failure (lj_fail; the element is NaN, 0 for
 * integers, but the run fails). */
void lj_cast_strings(int to, void *y, int from, const void *x, int64_t e0, int64_t e1,
                     LjScratch *sc) {
    for (int64_t i = e0; i < e1; i++) {
        if (to != ELEM_STR) {
            const char *s = lj_str_at(x, i);
            int64_t iv;
            bool exact;
            double v;
            if (!lj_is_float(to) && to != ELEM_BOOL && str_parse_i64(s, &iv, &exact)) {
                lj_st_i64(to, y, i, iv);
                continue;
            }
            if (!str_parse_f64(s, &v))
                lj_fail(sc, i, s);
            if (to == ELEM_BOOL)
                ((uint8_t *)y)[i] = v != 0;
            else
                lj_st_f64(to, y, i, v);
            continue;
        }
        char buf[STR_NUM_MAX];
        double v = lj_ld_f64(from, x, i);
        switch (from) {
        case ELEM_F32: str_format_float(buf, v, 9, lj_same_f32); break;
        case ELEM_F64: str_format_float(buf, v, 17, lj_same_f64); break;
        case ELEM_F16: str_format_float(buf, v, 5, lj_same_f16); break;
        case ELEM_BF16: str_format_float(buf, v, 4, lj_same_bf16); break;
        case ELEM_BOOL: {
            const char *word = v != 0 ? "True" : "False";
            memcpy(buf, word, (size_t)str_len(word) + 1);
            break;
        }
        default:
            str_format_int(buf, lj_ld_i64(from, x, i),
                           from == ELEM_U8 || from == ELEM_U16 || from == ELEM_U32 ||
                               from == ELEM_U64);
        }
        ((uint64_t *)y)[i] = lj_str_keep(sc, buf, (size_t)str_len(buf));
    }
}

/* One unit: the kept strings' positions depend on all before them. */
LIBJIT_WORK libjit_string_normalizer_str_work(const int64_t *d) {
    return 1;
}

/* Operands: y, x, stopwords. The result's length was declared from the
 * values known at compile time; other values fill it up to its length
 * (and pad with empty strings), as a kernel cannot fail. */
LIBJIT_KERNEL libjit_string_normalizer_str(const int64_t *d, void *const *ops, int64_t lo,
                                           int64_t hi, LjScratch *sc) {
    bool sensitive = lj_attr_int(d, AK_case_sensitive, 0) != 0;
    int mode = (int)(lj_attr_int(d, AK_case_change, CASE_NONE) - CASE_NONE);
    int64_t n = lj_numel(d, 1), ns = lj_numel(d, 2), cap = lj_numel(d, 0), k = 0;
    uint64_t *y = ops[0];
    const char *const *stop = ops[2];
    for (int64_t i = 0; i < n && k < cap; i++) {
        const char *s = lj_str_at(ops[1], i);
        if (str_is_stopword(s, stop, ns, sensitive))
            continue;
        int64_t len = str_len(s);
        char *p = lj_str_alloc(sc, (size_t)len + 1);
        if (p)
            str_change_case(p, s, mode);
        y[k++] = (uint64_t)(uintptr_t)p;
    }
    for (; k < cap; k++)
        y[k] = 0;
}
