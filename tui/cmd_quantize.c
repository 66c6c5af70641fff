/* glowc quantize: a float ONNX model and its profile to a QDQ ONNX model
 * (QuantizeLinear/DequantizeLinear around the integer values, int8
 * per-channel weights, int32 biases) that ONNX Runtime runs with its own
 * int8 kernels. The quantization is the quantize pass's: the pipeline is
 * that pass alone, on the imported graph, whose names are the model's. */
#include <stdio.h>
#include <string.h>

#include "core/onnx/export.h"
#include "tui/args.h"
#include "tui/cli.h"

typedef struct QuantOpts {
    const char *out;
} QuantOpts;

static int quantize(CommonArgs *ca, const QuantOpts *qo, DiagList *d) {
    if (!qo->out) {
        diag_error(d, NULL, "quantize: -o MODEL.qdq.onnx is required");
        return 1;
    }
    if (!ca->quant.profile) {
        diag_error(d, NULL, "quantize: give the profile (--quantize=PROFILE.json, from glowc "
                   "profile)");
        return 1;
    }
    if (!cli_has_suffix(ca->model, ".onnx")) {
        diag_error(d, NULL, "quantize: '%s' is not an ONNX model (.onnx)", ca->model);
        return 1;
    }
    /* The QDQ model keeps the source's float operators and weights beside
     * the scales read off the quantized graph; equalisation rescales
     * weights and renames values the export would have to rewrite too, so
     * the export quantizes without it (the same graph as
     * --quant-equalize=off, which is what to compare it with). */
    ca->quant.equalize = QE_OFF;
    Session *s = args_open_session(ca, "-O0", NULL, d);
    bool ok = s && session_run(s);
    if (s && !ok)
        diag_append(d, &s->diags);
    ok = ok && onnx_write_qdq(ca->model, qo->out, s->work->main, d);
    if (ok)
        printf("wrote %s\n", qo->out);
    session_free(s);
    return ok ? 0 : 1;
}

static int quantize_option(OptionId id, const char *v, void *ctx, DiagList *d) {
    (void)d;
    if (id != OPT_OUTPUT)
        return 0;
    ((QuantOpts *)ctx)->out = v;
    return 1;
}

int cmd_quantize(int argc, char **argv) {
    DiagList d;
    diag_init(&d, NULL);
    CommonArgs ca = {0};
    QuantOpts qo = {0};
    int status = 1;
    if (args_parse(&ca, argc, argv, "quantize", quantize_option, &qo, &d))
        status = quantize(&ca, &qo, &d);
    cli_report(&d);
    args_free(&ca);
    diag_free(&d);
    return status;
}
