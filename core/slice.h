/* ONNX Slice's clamping along one axis: the interpreter's shape rule
 * (slice_params) and libjit's kernels at run-time sizes share this one
 * source (static inline), so that their counts never disagree. */
#ifndef GLOWC_CORE_SLICE_H
#define GLOWC_CORE_SLICE_H

#include <stdbool.h>
#include <stdint.h>

/* Along an axis of `dim`: the first index, the step and the count, from
 * the start, end and step given (has_*: given at all; a step of 0 is 1). */
static inline void slice_axis(int64_t dim, bool has_b, int64_t b, bool has_e, int64_t en,
                              int64_t st, int64_t *start, int64_t *step, int64_t *count) {
    st = st ? st : 1;
    if (!has_b)
        b = st > 0 ? 0 : INT64_MAX;
    if (!has_e)
        en = st > 0 ? INT64_MAX : INT64_MIN;
    if (b < 0)
        b = b < -dim ? 0 : b + dim;
    if (en < 0)
        en = en < -dim ? (st > 0 ? 0 : -1) : en + dim;
    if (st > 0) {
        b = b > dim ? dim : b;
        en = en > dim ? dim : en;
    } else {
        b = b > dim - 1 ? dim - 1 : b;
        en = en > dim - 1 ? dim - 1 : en;
    }
    /* ceil(distance / |step|), written so that no step overflows it */
    int64_t dist = st > 0 ? en - b : b - en;
    *count = dist <= 0 ? 0 : st > 0 ? (dist - 1) / st + 1 : -((dist - 1) / st) + 1;
    *start = b;
    *step = st;
}

#endif
