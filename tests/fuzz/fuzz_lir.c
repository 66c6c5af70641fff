/* libFuzzer target: the low-level text parser and verifier (and the printer
 * on what they accept). */
#include <stdint.h>

#include "core/lir_print.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    DiagList d;
    diag_init(&d, NULL);
    LirProgram *p = lir_parse_limited((const char *)data, size, "fuzz.lir", 64u << 20, &d);
    StrBuf out;
    sb_init(&out);
    if (p) {
        lir_print(p, &PRINT_DEFAULTS, &out);
        lir_destroy(p);
    }
    diag_render(&d, &out);
    sb_free(&out);
    diag_free(&d);
    return 0;
}
