/* TfIdfVectorizer's counting (onnxruntime's semantics, which the ONNX test
 * data comes from), shared by the interpreter's kernel and libjit's:
 * static inline over a loader of the input's tokens.
 *
 * The pool holds the n-grams of each length n back to back, those of
 * length n from ngram_counts[n - 1] to the next length's start (or the
 * pool's end); the j-th n-gram of the pool, counted over all lengths,
 * lands in output column indexes[j]. An n-gram of length n >= 2 is taken
 * at each position with every skip s in [0, max_skip] (tokens i, i + s + 1,
 * ...); unigrams once per position. TF counts, IDF gives the column's
 * weight where the count is not zero, TFIDF the count times the weight. */
#ifndef GLOWC_CORE_TFIDF_H
#define GLOWC_CORE_TFIDF_H

#include <stdbool.h>
#include <stdint.h>

/* Token i of the row being read; ctx is the caller's. */
typedef int64_t (*TfIdfLoad)(const void *ctx, int64_t i);

typedef struct TfIdf {
    int64_t min_gram, max_gram, max_skip;
    int nlevels;                /* entries of ngram_counts */
    const int64_t *level_start; /* ngram_counts */
    const int64_t *pool, *indexes;
    int64_t pool_size, nindexes, width;
} TfIdf;

/* The n-grams of length n: pool[*first, *end); their first ordinal. */
static inline int64_t tfidf_level(const TfIdf *t, int64_t n, int64_t *first, int64_t *end) {
    int64_t ordinal = 0;
    for (int64_t k = 1; k <= t->nlevels; k++) {
        int64_t s = t->level_start[k - 1];
        int64_t e = k < t->nlevels ? t->level_start[k] : t->pool_size;
        s = s < 0 ? 0 : s > t->pool_size ? t->pool_size : s;
        e = e < s ? s : e > t->pool_size ? t->pool_size : e;
        if (k == n) {
            *first = s;
            *end = s + (e - s) / n * n;
            return ordinal;
        }
        ordinal += (e - s) / k;
    }
    *first = *end = 0;
    return ordinal;
}

/* Adds the n-gram starting at token i with step `step`, if in the pool,
 * to its column's count. */
static inline void tfidf_match(const TfIdf *t, TfIdfLoad load, const void *ctx, int64_t i,
                               int64_t step, int64_t n, double *count) {
    int64_t first, end, ordinal = tfidf_level(t, n, &first, &end);
    for (int64_t p = first; p < end; p += n, ordinal++) {
        bool same = true;
        for (int64_t k = 0; k < n && same; k++)
            same = load(ctx, i + k * step) == t->pool[p + k];
        if (same && ordinal < t->nindexes && t->indexes[ordinal] >= 0 &&
            t->indexes[ordinal] < t->width)
            count[t->indexes[ordinal]] += 1;
    }
}

/* The counts of one row of len tokens into count[width] (zeroed here). */
static inline void tfidf_row(const TfIdf *t, TfIdfLoad load, const void *ctx, int64_t len,
                             double *count) {
    for (int64_t c = 0; c < t->width; c++)
        count[c] = 0;
    for (int64_t i = 0; i < len; i++)
        for (int64_t n = t->min_gram < 1 ? 1 : t->min_gram; n <= t->max_gram; n++)
            for (int64_t s = 0; s <= (n == 1 ? 0 : t->max_skip); s++)
                if (i + (n - 1) * (s + 1) < len)
                    tfidf_match(t, load, ctx, i, s + 1, n, count);
}

/* The output value of a column's count under mode (TF 0, IDF 1, TFIDF 2). */
static inline double tfidf_value(int mode, double count, double weight) {
    return mode == 0 ? count : mode == 1 ? (count > 0 ? weight : 0) : count * weight;
}

#endif
