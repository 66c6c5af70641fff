/* Import of text operators: StringNormalizer, and TfIdfVectorizer over
 * integer tokens. Its pool,
 * n-gram columns and weights become constant operands (they can be long,
 * and kernels read them as tensors); string pools are not supported. */
#include <stdlib.h>
#include <string.h>

#include "core/onnx/import.h"
#include "core/str_ops.h"

enum { TFIDF_MAX_POOL = 1 << 16 };

/* Attribute `name`'s integers as an i64 constant [n]; NULL after an error. */
static Value *ints_const(OnnxNode *on, const char *name, int64_t *buf, int64_t *count) {
    int n = on_attr_ints(on, name, buf, TFIDF_MAX_POOL);
    if (n < 0 || n >= TFIDF_MAX_POOL) {
        on_error(on, n < 0 ? "missing attribute '%s'" : "attribute '%s' is too long", name);
        return NULL;
    }
    Type t = type_make(ELEM_I64, 1, (int64_t[]){n});
    Tensor *c = on_tensor(on, &t);
    if (!c)
        return NULL;
    for (int i = 0; i < n; i++)
        tensor_set_i64(c, i, buf[i]);
    *count = n;
    return on_const(on, c);
}

bool import_tfidf_vectorizer(OnnxNode *on) {
    if (!on_need_inputs(on, 1, 1))
        return false;
    if (on_has_attr(on, "pool_strings")) {
        on_unsupported(on, "string pools (pool_strings) are not supported");
        return false;
    }
    int64_t *buf = malloc(TFIDF_MAX_POOL * sizeof *buf), npool = 0, nidx = 0, levels[16];
    if (!buf) {
        on_error(on, "out of memory");
        return false;
    }
    Value *pool = ints_const(on, "pool_int64s", buf, &npool);
    Value *idx = pool ? ints_const(on, "ngram_indexes", buf, &nidx) : NULL;
    int64_t width = 0;
    for (int64_t i = 0; idx && i < nidx; i++)
        width = buf[i] + 1 > width ? buf[i] + 1 : width;
    free(buf);
    int nlevels = on_attr_ints(on, "ngram_counts", levels, 16);
    if (!idx)
        return false;
    if (nlevels < 1) {
        on_error(on, "missing attribute 'ngram_counts'");
        return false;
    }
    float *wv = malloc((size_t)(width + 1) * sizeof *wv);
    int nw = wv ? on_attr_floats(on, "weights", wv, (int)width) : -1;
    Type wt = type_make(ELEM_F32, 1, (int64_t[]){width});
    Tensor *w = wv ? on_tensor(on, &wt) : NULL;
    for (int64_t c = 0; w && c < width; c++)
        tensor_set_f64(w, c, c < nw ? wv[c] : 1.0);
    free(wv);
    if (!w)
        return false;
    Node *n = on_node(on, NK_TFIDF_VECTORIZER, 4,
                      (Value *[]){on_in(on, 0), pool, idx, on_const(on, w)}, 1);
    if (!on_set_enum(on, n, AK_mode, on_attr_str(on, "mode", "TF")))
        return false;
    node_set_int(n, AK_min_gram_length, on_attr_int(on, "min_gram_length", 1));
    node_set_int(n, AK_max_gram_length, on_attr_int(on, "max_gram_length", 1));
    node_set_int(n, AK_max_skip_count, on_attr_int(on, "max_skip_count", 0));
    node_set_ints(n, AK_ngram_counts, nlevels, levels);
    return on_done(on, n);
}

enum { STOPWORDS_MAX = 1 << 16 };

/* The stopwords attribute as a str constant [S] (the kernels read it as a
 * tensor, and a list of strings is no attribute kind of ours). */
static Value *stopwords_const(OnnxNode *on, int64_t *count) {
    const char **words = malloc(STOPWORDS_MAX * sizeof *words);
    int n = words ? on_attr_strs(on, "stopwords", words, STOPWORDS_MAX) : 0;
    if (n < 0)
        n = 0;
    Type t = type_make(ELEM_STR, 1, (int64_t[]){n});
    Tensor *c = words ? on_tensor(on, &t) : NULL;
    for (int i = 0; c && i < n; i++) {
        if (!utf8_valid(words[i], strlen(words[i]))) {
            on_error(on, "stopword %d is not valid UTF-8", i);
            c = NULL;
        } else if (!tensor_set_str(on->f->module->arena, c, i, words[i], strlen(words[i]))) {
            c = NULL;
        }
    }
    free(words);
    if (!c)
        return NULL;
    *count = n;
    return on_const(on, c);
}

/* Case change and stopword removal. Without stopwords the result has x's
 * shape; with them its length depends on x's values, which must be known
 * at compile time (a test's input): the model is specialised to them. */
bool import_string_normalizer(OnnxNode *on) {
    if (!on_need_inputs(on, 1, 1))
        return false;
    Value *x = on_in(on, 0);
    if (x->type.elem != ELEM_STR) {
        on_error(on, "input must be a string tensor, got %s", elem_name(x->type.elem));
        return false;
    }
    const char *locale = on_attr_str(on, "locale", "");
    if (*locale && strcmp(locale, "en_US") && strcmp(locale, "en_US.UTF-8")) {
        on_unsupported(on, "locale '%s' is not supported (only en_US)", locale);
        return false;
    }
    int64_t nstop = 0;
    Value *stop = stopwords_const(on, &nstop);
    if (!stop)
        return false;
    Node *n = on_node(on, NK_STRING_NORMALIZER, 2, (Value *[]){x, stop}, 1);
    if (!on_set_enum(on, n, AK_case_change, on_attr_str(on, "case_change_action", "NONE")))
        return false;
    bool sensitive = on_attr_int(on, "is_case_sensitive", 0) != 0;
    node_set_int(n, AK_case_sensitive, sensitive);
    if (nstop > 0) {
        Tensor *xv = on_try_const(on, x);
        if (!xv) {
            on_unsupported(on, "with stopwords the result's length depends on the input's "
                               "values, which are not known at compile time");
            return false;
        }
        Tensor *sv = on_try_const(on, stop);
        int64_t keep = 0, nx = tensor_numel(xv);
        for (int64_t i = 0; i < nx; i++)
            keep += !str_is_stopword(tensor_get_str(xv, i), sv->data, nstop, sensitive);
        Type r = x->type;
        r.dims[r.rank - 1] = keep ? keep : 1;
        n->res[0].type = r;
    }
    return on_done(on, n);
}
