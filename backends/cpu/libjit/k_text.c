/* tfidf_vectorizer as libjit_tfidf_vectorizer_any: the interpreter's
 * counting (core/tfidf.h, one source for both), a row of tokens per unit
 * of work, the counts in the unit's scratch. */
#include "backends/cpu/libjit/elem.h"
#include "backends/cpu/libjit/kernels.h"
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
