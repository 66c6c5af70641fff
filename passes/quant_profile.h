/* Quantization profiles: per named value of a float graph, its range and a
 * histogram, over every calibration sample; written by `glowc profile`,
 * read by the quantize pass. JSON through jansson (the format is in
 * README.md, "Quantization"). */
#ifndef GLOWC_PASSES_QUANT_PROFILE_H
#define GLOWC_PASSES_QUANT_PROFILE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/diag.h"
#include "core/tensor.h"

/* Bins of every histogram. Even, so that two neighbours merge when the range
 * doubles; 2048 as Glow's profiles have (fine enough for KL calibration). */
enum { QPROF_BINS = 2048 };

typedef struct QProfValue {
    char *name;       /* ONNX node name ("NAME#k" for its result k > 0), or input name */
    double min, max;  /* over every element of every sample */
    double lo, hi;    /* the histogram's range; bins of (hi - lo) / QPROF_BINS */
    uint64_t count;   /* elements seen */
    uint64_t *bins;
    /* Per channel (axis 1 of a value of rank >= 2, NCHW's C), over every
     * sample: what cross-layer equalisation balances. nch 0: none recorded
     * (rank < 2, a channel count that changed between samples, or a profile
     * written before these were). */
    int64_t nch;
    double *cmin, *cmax;
} QProfValue;

typedef struct QProfile {
    uint64_t model_hash; /* FNV-1a 64 of the model file's bytes */
    int samples;
    int n, cap;
    QProfValue *v;
} QProfile;

/* FNV-1a, 64 bits, of the bytes: the model's identity in a profile. */
uint64_t qprof_hash_bytes(const void *data, size_t len);
void qprof_free(QProfile *p);
QProfValue *qprof_find(const QProfile *p, const char *name);
/* Adds t's finite elements to the value `name` (made on first use). A NaN
 * or infinity is refused: false, *bad set to it. */
bool qprof_add(QProfile *p, const char *name, const Tensor *t, double *bad);
/* Writes p as JSON to a malloc'd string. */
char *qprof_to_json(const QProfile *p);
/* Reads a profile; false with "PATH: error: ..." on malformed JSON or a
 * missing or ill-typed field. */
bool qprof_read(const char *path, QProfile *p, DiagList *d);

/* What the quantize pass is told (--quantize and its options). */
typedef enum { QS_ASYMMETRIC, QS_SYMMETRIC, QS_SYMMETRIC_UINT8, QS_SYMMETRIC_POW2 } QuantSchema;
typedef enum { QC_MINMAX, QC_KL, QC_PERCENTILE } QuantCalibration;

/* --quant-equalize: on (the default) where a table comes between or the
 * next conv is depthwise; dense also conv -> [relu ->] dense conv; off. */
typedef enum { QE_ON, QE_OFF, QE_DENSE } QuantEqualize;

typedef struct QuantConfig {
    const QProfile *profile;
    const char *profile_path; /* for messages */
    QuantSchema schema;
    QuantCalibration calibration;
    bool per_tensor_weights;  /* default: one scale per output channel */
    QuantEqualize equalize;   /* --quant-equalize */
    const char *keep_float;   /* "NAME|KIND,...": nodes left in float */
} QuantConfig;

/* "asymmetric" ... by name; false if unknown. */
bool quant_schema_by_name(const char *s, QuantSchema *out);
bool quant_calibration_by_name(const char *s, QuantCalibration *out);

#endif
