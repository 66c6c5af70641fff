/* Text kernels: tfidf_vectorizer (n-gram counts, core/tfidf.h). */
#include <stdlib.h>

#include "backends/interp/kernels.h"
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
