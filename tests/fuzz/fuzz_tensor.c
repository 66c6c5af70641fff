/* libFuzzer target: the TensorProto reader (the .pb files of the ONNX test
 * data). */
#include <stdint.h>

#include "core/onnx/onnx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    DiagList d;
    diag_init(&d, NULL);
    Arena *a = arena_new();
    const char *name = NULL;
    Tensor *t = onnx_read_tensor(data, size, "fuzz.pb", a, &name, &d);
    StrBuf out;
    sb_init(&out);
    (void)t;
    diag_render(&d, &out);
    sb_free(&out);
    arena_destroy(a);
    diag_free(&d);
    return 0;
}
