/* libFuzzer target: the ONNX importer, with the reference interpreter doing
 * the import-time folding as it does in glowc. A model that imports must
 * also print and verify. */
#include <stdint.h>
#include <stdlib.h>

#include "backends/interp/interp.h"
#include "core/onnx/onnx.h"
#include "core/print.h"
#include "core/verify.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    DiagList d;
    diag_init(&d, NULL);
    /* A folder that does not exist: external data cannot reach real files. */
    ImportOptions opt = {
        .fold = interp_fold,
        .max_memory = 64u << 20,
        .dims = (DimBinding[]){{"N", 2}, {"seq", 3}},
        .ndims = 2,
    };
    Module *m = onnx_import_buffer(data, size, "/nonexistent-glowc-fuzz/model.onnx", &opt, &d);
    StrBuf out;
    sb_init(&out);
    if (m) {
        print_module(m, &PRINT_DEFAULTS, &out);
        if (!verify_function(m->main, &d))
            abort(); /* the importer produced a graph that does not verify */
        module_destroy(m);
    }
    diag_render(&d, &out);
    sb_free(&out);
    diag_free(&d);
    return 0;
}
