/* Where quantization loses accuracy: the model run once in float (the
 * imported graph) and once quantized, on the interpreter, every named value
 * of both matched by ONNX name, with its max error and its SQNR (signal to
 * quantization noise, dB). `compare --quantize` prints it, the explorer's
 * quant view shows it, and --keep-float=auto uses it to choose the nodes
 * left in float. */
#ifndef GLOWC_TUI_QUANT_REPORT_H
#define GLOWC_TUI_QUANT_REPORT_H

#include "core/strbuf.h"
#include "tui/args.h"
#include "tui/values.h"

typedef struct QuantRow {
    const char *name;
    int result;
    double max_err, sqnr; /* sqnr in dB; INFINITY when equal */
    bool integer;         /* the quantized graph computes it in integers */
    const Tensor *ref;    /* the float value */
} QuantRow;

typedef struct QuantReport {
    Session *base; /* the model imported once; each run works on a copy */
    ValueSet vf, vq;
    QuantRow *rows; /* in the float run's execution order */
    int n;
} QuantReport;

/* --keep-float=auto: nodes whose value falls below --min-sqnr stay float. */
#define QUANT_MIN_SQNR_DEFAULT 25.0

/* Runs both (inputs from ca's --input values, or the fixed-seed generator,
 * announced on stderr when `announce`); the quantized run with ca's
 * quantization options. */
bool quant_report_run(CommonArgs *ca, bool announce, QuantReport *r, DiagList *d);
/* The table, worst first. */
void quant_report_print(const QuantReport *r, const char *profile, StrBuf *out);
void quant_report_free(QuantReport *r);

/* --keep-float=auto: quantizes, measures, and keeps in float the first node
 * (in execution order) computed in integers whose value is below
 * ca->min_sqnr dB, until none is (at most QUANT_AUTO_ROUNDS rounds); then
 * ca->quant.keep_float is that list (owned by ca). */
enum { QUANT_AUTO_ROUNDS = 64 };
bool quant_resolve_auto(CommonArgs *ca, DiagList *d);

#endif
