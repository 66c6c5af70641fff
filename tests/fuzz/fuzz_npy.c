/* libFuzzer target: the .npy reader. What it accepts must write back to the
 * same data. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    DiagList d;
    diag_init(&d, NULL);
    Arena *a = arena_new();
    Tensor *t = npy_read(data, size, "fuzz.npy", a, &d);
    StrBuf out;
    sb_init(&out);
    if (t) {
        StrBuf img;
        sb_init(&img);
        if (npy_write(t, &img)) {
            Tensor *back = npy_read(img.data, img.len, "back.npy", a, &d);
            if (!back || !tensor_equal(t, back))
                abort(); /* npy_write wrote what npy_read does not read back */
        }
        sb_free(&img);
    }
    diag_render(&d, &out);
    sb_free(&out);
    arena_destroy(a);
    diag_free(&d);
    return 0;
}
