/* libFuzzer target: the high-level text parser (and the printer on what it
 * accepts). */
#include <stdint.h>

#include "core/parse.h"
#include "core/print.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    DiagList d;
    diag_init(&d, NULL);
    Module *m = parse_module_limited((const char *)data, size, "fuzz.hl", 64u << 20, &d);
    StrBuf out;
    sb_init(&out);
    if (m) {
        print_module(m, &PRINT_DEFAULTS, &out);
        module_destroy(m);
    }
    diag_render(&d, &out);
    sb_free(&out);
    diag_free(&d);
    return 0;
}
