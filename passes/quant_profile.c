/* Quantization profiles: ranges and histograms of named values, and their
 * JSON form (jansson). A histogram's range grows as Glow's does: it starts
 * at the first sample's [min, max] and doubles toward whichever side a later
 * value falls beyond, merging neighbouring bins, so one pass over the
 * samples suffices and the bins stay exact counts. */
#include "passes/quant_profile.h"

#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint64_t qprof_hash_bytes(const void *data, size_t len) {
    const unsigned char *p = data;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    return h;
}

void qprof_free(QProfile *p) {
    for (int i = 0; i < p->n; i++) {
        free(p->v[i].name);
        free(p->v[i].bins);
        free(p->v[i].cmin);
        free(p->v[i].cmax);
    }
    free(p->v);
    *p = (QProfile){0};
}

QProfValue *qprof_find(const QProfile *p, const char *name) {
    for (int i = 0; i < p->n; i++)
        if (!strcmp(p->v[i].name, name))
            return &p->v[i];
    return NULL;
}

static QProfValue *qprof_new(QProfile *p, const char *name) {
    if (p->n == p->cap) {
        p->cap = p->cap ? 2 * p->cap : 64;
        p->v = realloc(p->v, (size_t)p->cap * sizeof *p->v);
    }
    QProfValue *v = &p->v[p->n++];
    *v = (QProfValue){.name = strdup(name), .min = INFINITY, .max = -INFINITY};
    v->bins = calloc(QPROF_BINS, sizeof *v->bins);
    return v;
}

/* Doubles the range downward (the old range becomes the upper half) or
 * upward, two old bins making one new. */
static void grow(QProfValue *v, bool down) {
    uint64_t merged[QPROF_BINS] = {0};
    int base = down ? QPROF_BINS / 2 : 0;
    for (int i = 0; i < QPROF_BINS; i++)
        merged[base + i / 2] += v->bins[i];
    memcpy(v->bins, merged, sizeof merged);
    double w = v->hi - v->lo;
    if (down)
        v->lo -= w;
    else
        v->hi += w;
}

/* Channels beyond this are not recorded (no NCHW value has more; it bounds
 * the JSON of a [1, T, D] sequence whose axis 1 is time). */
enum { QPROF_MAX_CHANNELS = 1 << 16 };

/* Folds t's per-channel ranges (axis 1) into v's. A channel count that
 * differs from an earlier sample's (a dynamic dimension) drops them. */
static void add_channels(QProfValue *v, const Tensor *t, bool first) {
    const Type *ty = &t->type;
    int64_t nch = ty->rank >= 2 ? ty->dims[1] : 0;
    if (first && nch > 0 && nch <= QPROF_MAX_CHANNELS) {
        v->nch = nch;
        v->cmin = malloc((size_t)nch * sizeof *v->cmin);
        v->cmax = malloc((size_t)nch * sizeof *v->cmax);
        for (int64_t c = 0; c < nch; c++) {
            v->cmin[c] = INFINITY;
            v->cmax[c] = -INFINITY;
        }
    }
    if (v->nch == 0)
        return;
    if (nch != v->nch) {
        free(v->cmin);
        free(v->cmax);
        v->cmin = v->cmax = NULL;
        v->nch = 0;
        return;
    }
    int64_t inner = 1, n = tensor_numel(t);
    for (int d = 2; d < ty->rank; d++)
        inner *= ty->dims[d];
    for (int64_t i = 0; i < n; i++) {
        int64_t c = i / inner % nch;
        double x = tensor_get_f64(t, i);
        v->cmin[c] = x < v->cmin[c] ? x : v->cmin[c];
        v->cmax[c] = x > v->cmax[c] ? x : v->cmax[c];
    }
}

bool qprof_add(QProfile *p, const char *name, const Tensor *t, double *bad) {
    if (!elem_is_float(t->type.elem))
        return true;
    int64_t n = tensor_numel(t);
    double mn = INFINITY, mx = -INFINITY;
    for (int64_t i = 0; i < n; i++) {
        double x = tensor_get_f64(t, i);
        if (!isfinite(x)) {
            *bad = x;
            return false;
        }
        mn = x < mn ? x : mn;
        mx = x > mx ? x : mx;
    }
    if (n == 0)
        return true;
    QProfValue *v = qprof_find(p, name);
    if (!v)
        v = qprof_new(p, name);
    if (v->count == 0) {
        /* A single point still needs a width: a small one around it. */
        double w = mx - mn > 0 ? mx - mn : (fabs(mn) > 0 ? fabs(mn) * 0x1p-20 : 0x1p-20);
        v->lo = mn;
        v->hi = mn + w;
    }
    while (mn < v->lo)
        grow(v, true);
    while (mx > v->hi)
        grow(v, false);
    double scale = QPROF_BINS / (v->hi - v->lo);
    for (int64_t i = 0; i < n; i++) {
        int b = (int)((tensor_get_f64(t, i) - v->lo) * scale);
        v->bins[b < 0 ? 0 : b >= QPROF_BINS ? QPROF_BINS - 1 : b]++;
    }
    add_channels(v, t, v->count == 0);
    v->min = mn < v->min ? mn : v->min;
    v->max = mx > v->max ? mx : v->max;
    v->count += (uint64_t)n;
    return true;
}

char *qprof_to_json(const QProfile *p) {
    json_t *root = json_object();
    char hash[32];
    snprintf(hash, sizeof hash, "fnv1a64:%016" PRIx64, p->model_hash);
    json_object_set_new(root, "model_hash", json_string(hash));
    json_object_set_new(root, "samples", json_integer(p->samples));
    json_object_set_new(root, "bins", json_integer(QPROF_BINS));
    json_t *vals = json_array();
    for (int i = 0; i < p->n; i++) {
        const QProfValue *v = &p->v[i];
        json_t *o = json_object();
        json_object_set_new(o, "name", json_string(v->name));
        json_object_set_new(o, "min", json_real(v->min));
        json_object_set_new(o, "max", json_real(v->max));
        json_object_set_new(o, "count", json_integer((json_int_t)v->count));
        json_t *h = json_array();
        json_array_append_new(h, json_real(v->lo));
        json_array_append_new(h, json_real(v->hi));
        json_object_set_new(o, "range", h);
        json_t *bins = json_array();
        for (int b = 0; b < QPROF_BINS; b++)
            json_array_append_new(bins, json_integer((json_int_t)v->bins[b]));
        json_object_set_new(o, "histogram", bins);
        if (v->nch > 0) {
            json_t *cmin = json_array(), *cmax = json_array();
            for (int64_t c = 0; c < v->nch; c++) {
                json_array_append_new(cmin, json_real(v->cmin[c]));
                json_array_append_new(cmax, json_real(v->cmax[c]));
            }
            json_object_set_new(o, "channel_min", cmin);
            json_object_set_new(o, "channel_max", cmax);
        }
        json_array_append_new(vals, o);
    }
    json_object_set_new(root, "values", vals);
    char *s = json_dumps(root, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
    json_decref(root);
    return s;
}

static bool field_error(const char *path, int i, const char *what, DiagList *d) {
    if (i < 0)
        diag_error(d, path, "%s", what);
    else
        diag_error(d, path, "values[%d]: %s", i, what);
    return false;
}

/* channel_min and channel_max: optional (profiles before them load), but
 * both or neither, of one length, each channel's min <= max. */
static bool read_channels(const char *path, int i, json_t *o, QProfValue *v, DiagList *d) {
    json_t *cmin = json_object_get(o, "channel_min"), *cmax = json_object_get(o, "channel_max");
    if (!cmin && !cmax)
        return true;
    size_t n = json_array_size(cmin);
    if (!json_is_array(cmin) || !json_is_array(cmax) || n == 0 || n != json_array_size(cmax) ||
        n > QPROF_MAX_CHANNELS)
        return field_error(path, i, "channel_min and channel_max must be arrays of one length", d);
    v->nch = (int64_t)n;
    v->cmin = malloc(n * sizeof *v->cmin);
    v->cmax = malloc(n * sizeof *v->cmax);
    for (size_t c = 0; c < n; c++) {
        json_t *a = json_array_get(cmin, c), *b = json_array_get(cmax, c);
        v->cmin[c] = json_is_number(a) ? json_number_value(a) : NAN;
        v->cmax[c] = json_is_number(b) ? json_number_value(b) : NAN;
        if (!(v->cmin[c] <= v->cmax[c]) || !isfinite(v->cmin[c]) || !isfinite(v->cmax[c]))
            return field_error(path, i, "a channel's range is not finite with min <= max", d);
    }
    return true;
}

static bool read_value(const char *path, int i, json_t *o, QProfile *p, DiagList *d) {
    json_t *name = json_object_get(o, "name"), *mn = json_object_get(o, "min"),
           *mx = json_object_get(o, "max"), *range = json_object_get(o, "range"),
           *bins = json_object_get(o, "histogram"), *count = json_object_get(o, "count");
    if (!json_is_string(name) || !json_is_number(mn) || !json_is_number(mx) ||
        !json_is_array(range) || json_array_size(range) != 2 || !json_is_array(bins) ||
        json_array_size(bins) != QPROF_BINS || !json_is_integer(count))
        return field_error(path, i, "needs name, min, max, count, range [lo, hi] and a "
                           "histogram of 'bins' counts", d);
    QProfValue *v = qprof_new(p, json_string_value(name));
    v->min = json_number_value(mn);
    v->max = json_number_value(mx);
    v->lo = json_number_value(json_array_get(range, 0));
    v->hi = json_number_value(json_array_get(range, 1));
    v->count = (uint64_t)json_integer_value(count);
    if (!(v->min <= v->max) || !isfinite(v->min) || !isfinite(v->max) || !(v->lo < v->hi))
        return field_error(path, i, "min <= max and lo < hi must hold", d);
    for (int b = 0; b < QPROF_BINS; b++) {
        json_t *c = json_array_get(bins, (size_t)b);
        if (!json_is_integer(c) || json_integer_value(c) < 0)
            return field_error(path, i, "a histogram count is not a whole number", d);
        v->bins[b] = (uint64_t)json_integer_value(c);
    }
    return read_channels(path, i, o, v, d);
}

bool qprof_read(const char *path, QProfile *p, DiagList *d) {
    *p = (QProfile){0};
    json_error_t err;
    json_t *root = json_load_file(path, 0, &err);
    if (!root) {
        if (err.line > 0)
            diag_error(d, path, "line %d, column %d: %s", err.line, err.column, err.text);
        else
            diag_error(d, path, "%s", err.text);
        return false;
    }
    json_t *hash = json_object_get(root, "model_hash"), *vals = json_object_get(root, "values");
    json_t *bins = json_object_get(root, "bins"), *samples = json_object_get(root, "samples");
    bool ok = true;
    if (!json_is_string(hash) || strncmp(json_string_value(hash), "fnv1a64:", 8) ||
        !json_is_array(vals) || !json_is_integer(bins) || !json_is_integer(samples))
        ok = field_error(path, -1, "not a glowc profile (model_hash \"fnv1a64:...\", samples, "
                         "bins and values expected)", d);
    else if (json_integer_value(bins) != QPROF_BINS)
        ok = field_error(path, -1, "histograms of a bin count this glowc does not use", d);
    if (ok) {
        p->model_hash = strtoull(json_string_value(hash) + 8, NULL, 16);
        p->samples = (int)json_integer_value(samples);
        for (size_t i = 0; ok && i < json_array_size(vals); i++)
            ok = read_value(path, (int)i, json_array_get(vals, i), p, d);
    }
    json_decref(root);
    if (!ok)
        qprof_free(p);
    return ok;
}

bool quant_schema_by_name(const char *s, QuantSchema *out) {
    static const char *const names[] = {"asymmetric", "symmetric", "symmetric-uint8",
                                        "symmetric-pow2"};
    for (int i = 0; i < 4; i++)
        if (!strcmp(s, names[i]))
            return *out = (QuantSchema)i, true;
    return false;
}

bool quant_calibration_by_name(const char *s, QuantCalibration *out) {
    static const char *const names[] = {"minmax", "kl", "percentile"};
    for (int i = 0; i < 3; i++)
        if (!strcmp(s, names[i]))
            return *out = (QuantCalibration)i, true;
    return false;
}
