/* qlookup: a byte per element through a 256-entry table (the quantize pass's
 * form of an elementwise chain of one quantized input). An i8 value q sits
 * at index q + 128, which is its byte with the sign bit flipped. */
#include "backends/cpu/libjit/elem.h"
#include "backends/cpu/libjit/kernels.h"

enum { LOOKUP_CHUNK = 1 << 15 };

LIBJIT_WORK libjit_qlookup_any_work(const int64_t *d) {
    int64_t n = lj_numel(d, 0);
    return n > 0 ? (n + LOOKUP_CHUNK - 1) / LOOKUP_CHUNK : 1;
}

LIBJIT_KERNEL libjit_qlookup_any(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                                 LjScratch *sc) {
    int64_t n = lj_numel(d, 0);
    uint8_t *y = ops[0];
    const uint8_t *x = ops[1], *table = ops[2];
    uint8_t flip = lj_elem(d, 1) == ELEM_I8 ? 0x80 : 0;
    int64_t end = hi * LOOKUP_CHUNK < n ? hi * LOOKUP_CHUNK : n;
    for (int64_t i = lo * LOOKUP_CHUNK; i < end; i++)
        y[i] = table[x[i] ^ flip];
}
