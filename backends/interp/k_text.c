/* Text kernels: tfidf_vectorizer (n-gram counts, core/tfidf.h) and
 * string_normalizer (core/str_ops.h). */
#include <stdlib.h>
#include <string.h>

#include "backends/interp/kernels.h"
#include "core/str_ops.h"
#include "core/tfidf.h"

typedef struct TokenRow {
    const Tensor *x;
    int64_t base;
} TokenRow;

static int64_t token_load(const void *ctx, int64_t i) {
    const TokenRow *r = ctx;
    return tensor_get_i64(r->x, r->base + i);
}

/* The pool and indexes are i64 tensors, read in place. */
bool k_tfidf_vectorizer(const KernelArgs *a) {
    const Tensor *X = a->in[0], *W = a->in[3];
    Tensor *Y = a->out[0];
    int k;
    const int64_t *levels = node_attr_ints(a->n, AK_ngram_counts, &k);
    TfIdf t = {node_attr_int(a->n, AK_min_gram_length, 1), node_attr_int(a->n, AK_max_gram_length, 1),
               node_attr_int(a->n, AK_max_skip_count, 0), k, levels,
               a->in[1]->data, a->in[2]->data, tensor_numel(a->in[1]), tensor_numel(a->in[2]),
               W->type.dims[0]};
    int mode = node_attr_enum(a->n, AK_mode, MODE_TF);
    int64_t rows = X->type.rank == 2 ? X->type.dims[0] : 1, len = X->type.dims[X->type.rank - 1];
    double *count = malloc((size_t)(t.width + 1) * sizeof *count);
    if (!count)
        return kernel_fail(a, "out of memory");
    for (int64_t r = 0; r < rows; r++) {
        TokenRow row = {X, r * len};
        tfidf_row(&t, token_load, &row, len, count);
        for (int64_t c = 0; c < t.width; c++)
            tensor_set_f64(Y, r * t.width + c,
                           tfidf_value(mode - MODE_TF, count[c], tensor_get_f64(W, c)));
    }
    free(count);
    return true;
}

/* The strings of x that are not stopwords, case changed; none left gives
 * one empty string. The result's length was declared from known values
 * (the importer): other values are refused, not written out of bounds. */
bool k_string_normalizer(const KernelArgs *a) {
    const Tensor *X = a->in[0], *S = a->in[1];
    Tensor *Y = a->out[0];
    bool sensitive = node_attr_int(a->n, AK_case_sensitive, 0) != 0;
    int mode = node_attr_enum(a->n, AK_case_change, CASE_NONE) - CASE_NONE;
    int64_t n = tensor_numel(X), ns = tensor_numel(S), cap = tensor_numel(Y), k = 0;
    const char *const *stop = S->data;
    for (int64_t i = 0; i < n; i++) {
        const char *s = tensor_get_str(X, i);
        if (str_is_stopword(s, stop, ns, sensitive))
            continue;
        if (k == cap)
            return kernel_fail(a, "keeps more than the %lld strings its result was declared "
                                  "with (the values differ from those it was compiled for)",
                               (long long)cap);
        size_t len = strlen(s);
        char *buf = malloc(len + 1);
        if (!buf)
            return kernel_fail(a, "out of memory");
        str_change_case(buf, s, mode);
        bool ok = kernel_set_str(a, Y, k++, buf, len);
        free(buf);
        if (!ok)
            return false;
    }
    if (k == 0 && cap == 1)
        return kernel_set_str(a, Y, 0, "", 0);
    if (k != cap)
        return kernel_fail(a, "keeps %lld strings, its result was declared with %lld (the "
                              "values differ from those it was compiled for)",
                           (long long)k, (long long)cap);
    return true;
}
