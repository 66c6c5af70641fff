/* qlookup: a byte per element through a 256-entry table (the quantize pass's
 * form of an elementwise chain of one quantized input), or through row c of
 * a [C, 256] table for the elements of channel c (x's axis 1). An i8 value q
 * sits at index q + 128, which is its byte with the sign bit flipped. */
#include "backends/cpu/libjit/elem.h"
#include "backends/cpu/libjit/kernels.h"

enum { LOOKUP_CHUNK = 1 << 15 };

LIBJIT_WORK libjit_qlookup_any_work(const int64_t *d) {
    int64_t n = lj_numel(d, 0);
    return n > 0 ? (n + LOOKUP_CHUNK - 1) / LOOKUP_CHUNK : 1;
}

/* One table over n bytes: a loop clang vectorises (the pointers restrict). */
static void lookup_run(uint8_t *restrict y, const uint8_t *restrict x,
                       const uint8_t *restrict table, int64_t n, uint8_t flip) {
    for (int64_t i = 0; i < n; i++)
        y[i] = table[x[i] ^ flip];
}

LIBJIT_KERNEL libjit_qlookup_any(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                                 LjScratch *sc) {
    int64_t n = lj_numel(d, 0);
    uint8_t *y = ops[0];
    const uint8_t *x = ops[1], *table = ops[2];
    uint8_t flip = lj_elem(d, 1) == ELEM_I8 ? 0x80 : 0;
    int64_t end = hi * LOOKUP_CHUNK < n ? hi * LOOKUP_CHUNK : n;
    int64_t rows = lj_rank(d, 2) == 2 ? lj_dim(d, 2, 0) : 1, inner = 1;
    for (int k = 2; k < lj_rank(d, 1); k++)
        inner *= lj_dim(d, 1, k);
    /* A run of one channel's elements at a time, through its row. */
    for (int64_t i = lo * LOOKUP_CHUNK; i < end;) {
        int64_t plane = i / inner, stop = rows > 1 ? (plane + 1) * inner : end;
        stop = stop < end ? stop : end;
        lookup_run(y + i, x + i, table + (rows > 1 ? plane % rows * 256 : 0), stop - i, flip);
        i = stop;
    }
}
