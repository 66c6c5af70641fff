/* Unique over slices along an axis (or over single elements): shared by the
 * importer, which folds known values, and the interpreter's kernel (the
 * order and grouping, core/unique_sort.h, with libjit's too). */
#ifndef GLOWC_CORE_UNIQUE_H
#define GLOWC_CORE_UNIQUE_H

#include "core/arena.h"
#include "core/tensor.h"

/* The input seen as `count` slices of `size` elements along the axis (single
 * elements without one): element e = o * inner + i of slice s sits at
 * (o * count + s) * inner + i. */
typedef struct UniqueSlices {
    const Tensor *x;
    int64_t count, size, inner;
} UniqueSlices;

typedef struct Uniques {
    int64_t n;
    int64_t *first;   /* per unique slice: its first occurrence */
    int64_t *counts;  /* per unique slice */
    int64_t *inverse; /* per input slice: its unique slice */
} Uniques;

/* axis -1: the flattened input's elements. */
void unique_slices(const Tensor *x, int axis, UniqueSlices *s);
/* Sorted ascending (lexicographically for slices, NaN last) or in order of
 * first occurrence; scratch and results from `a`. */
void unique_find(const UniqueSlices *s, bool sorted, Uniques *u, Arena *a);
/* y's type: x's with n slices (1-D of n without an axis). */
Type unique_type(const Tensor *x, int axis, int64_t n);
/* Copies the unique slices into y (of unique_type). */
void unique_gather(const UniqueSlices *s, const Uniques *u, Tensor *y);

#endif
