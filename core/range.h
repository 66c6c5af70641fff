/* ONNX Range's length: the importer's bound, the interpreter's kernel and
 * libjit's run-time rule share this one source (static inline), so that
 * their counts never disagree. */
#ifndef GLOWC_CORE_RANGE_H
#define GLOWC_CORE_RANGE_H

#include <math.h>
#include <stdint.h>

/* max(ceil((limit - start) / delta), 0) for integers, without overflow
 * (the distance is taken in unsigned arithmetic); -1 when delta is 0. */
static inline int64_t range_count_int(int64_t start, int64_t limit, int64_t delta) {
    if (delta == 0)
        return -1;
    if (delta > 0 ? limit <= start : limit >= start)
        return 0;
    uint64_t dist = delta > 0 ? (uint64_t)limit - (uint64_t)start
                              : (uint64_t)start - (uint64_t)limit;
    uint64_t step = delta > 0 ? (uint64_t)delta : 0 - (uint64_t)delta;
    uint64_t n = (dist - 1) / step + 1;
    return n > INT64_MAX ? -1 : (int64_t)n;
}

/* The same for floats; -1 when delta is 0 or the length is not a finite
 * count (NaN or infinite operands, or more than 2^62). */
static inline int64_t range_count_float(double start, double limit, double delta) {
    if (delta == 0)
        return -1;
    double n = ceil((limit - start) / delta);
    if (n != n || n > 4611686018427387904.0)
        return -1;
    return n < 0 ? 0 : (int64_t)n;
}

#endif
