/* Sliding windows over NCHW planes: pooling and depthwise convolution, and
 * the phase planes that convolution's product reads its column rows from.
 *
 * Phase planes: the plane, padded, is split by the residues
 * of its coordinates modulo the strides, so that the input of window tap
 * (i, j) for every output is one contiguous run,
 *     out[oy][ox] <- Q[(i*dh) % sh][(j*dw) % sw][oy + (i*dh)/sh][ox + (j*dw)/sw],
 * and over a flattened output of width wq (the phase planes' width), whose
 * columns past ow are computed and dropped. Every tap is then one vector
 * load per LJ_VL outputs, with no edge tests and no strided access, for any
 * stride, pad and dilation. Pooling and the stack-only depthwise kernel
 * (window.c) build them one plane at a time; the faster depthwise kernel
 * (depthwise.c) puts channels in the lanes instead. */
#ifndef GLOWC_LIBJIT_WINDOW_H
#define GLOWC_LIBJIT_WINDOW_H

#include "backends/cpu/libjit/vec.h"

typedef struct LjWindow {
    int64_t h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw;
    int64_t ph_end, pw_end; /* pooling's count_include_pad only */
} LjWindow;

/* The phase planes of one input plane: sh*sw planes of `size` floats
 * (rp*sw + cp first), each hq rows of wq; outputs computed over the
 * flattened oh x wq grid, npos of them (rounded up to the caller's step),
 * and the planes long enough for the last step's reads. */
typedef struct LjPhases {
    int64_t hq, wq, npos, size;
} LjPhases;

LjPhases lj_phases(const LjWindow *g, int64_t step);
/* Fills the phases some tap reads (the others are left as they are), `fill`
 * where the window is outside the input. */
void lj_build_phases(const LjWindow *g, const LjPhases *q, const float *x, float fill,
                     float *buf);
/* The same for rows [r0, r1) of each phase plane alone, stored as planes of
 * (r1 - r0) rows (a convolution thread's band of output rows). */
void lj_build_phase_rows(const LjWindow *g, const LjPhases *q, const float *x, float fill,
                         float *buf, int64_t r0, int64_t r1);
/* Where tap (i, j)'s input run starts in the planes. */
int64_t lj_tap_offset(const LjWindow *g, const LjPhases *q, int64_t i, int64_t j);

/* Whether the phase planes of one plane fit the kernels' stack buffers. */
bool lj_window_fits(const LjWindow *g);

/* Depthwise convolution of channel planes [lo, hi) (image-major: plane p is
 * channel p % c), w [c][1][kh][kw], bias [c] or NULL. Stack buffers only:
 * the fallback of lj_depthwise_lanes. */
void lj_depthwise(const LjWindow *g, int64_t c, const float *x, const float *w, const float *bias,
                  float *y, LjAct act, int64_t lo, int64_t hi);

/* depthwise.c: the same with LJ_VL channels in the vector lanes (transposed
 * in and out), no padding built; units are (image, block of LJ_VL channels),
 * [lo, hi) of n * lj_depthwise_blocks(c). False if its buffers (the size of
 * one block's input and output) cannot be allocated. */
int64_t lj_depthwise_blocks(int64_t c);
bool lj_depthwise_lanes(const LjWindow *g, int64_t c, const float *x, const float *w,
                        const float *bias, float *y, LjAct act, int64_t lo, int64_t hi,
                        LjScratch *sc);

/* depthwise.c: the same over a zero-padded block of LJ_VL channels, one
 * output position per vector (planes [lo, hi) as lj_depthwise's), for the
 * maps lj_dwconv_lanes_fits accepts; bit for bit lj_dwconv's outputs.
 * False if its buffer (lj_dwconv_lanes_scratch bytes) cannot be had. */
bool lj_dwconv_lanes_fits(const LjWindow *g);
size_t lj_dwconv_lanes_scratch(const LjWindow *g);
bool lj_dwconv_lanes(const LjWindow *g, int64_t c, const float *x, const float *w,
                     const float *bias, float *y, LjAct act, int64_t lo, int64_t hi,
                     LjScratch *sc);

/* dwconv.c: the same, vectors along the output rows of each plane over its
 * phase rows; planes [lo, hi) as lj_depthwise's. False if its buffer (the
 * size of one padded plane, lj_dwconv_scratch) cannot be allocated, or the
 * window has more than 64 taps. */
size_t lj_dwconv_scratch(const LjWindow *g);
/* The scratch lj_pool_lanes asks for, in bytes. */
size_t lj_pool_lanes_scratch(const LjWindow *g);
bool lj_dwconv(const LjWindow *g, int64_t c, const float *x, const float *w, const float *bias,
               float *y, LjAct act, int64_t lo, int64_t hi, LjScratch *sc);

typedef enum { LJ_POOL_MAX, LJ_POOL_AVG } LjPool;

/* Pooling with channels in lanes, units as lj_depthwise_lanes' (padding
 * never read: windows are clipped, and averages divide by ONNX's count).
 * False if its buffers cannot be allocated. */
/* Max pooling of planes [p0, p1) from their rows (pool_rows.c), for the
 * windows lj_max_pool_rows_fits accepts. */
bool lj_max_pool_rows_fits(const LjWindow *g);
void lj_max_pool_rows(const LjWindow *g, const float *x, float *y, int64_t p0, int64_t p1);
bool lj_pool_lanes(const LjWindow *g, LjPool kind, bool count_include_pad, int64_t c,
                   const float *x, float *y, int64_t lo, int64_t hi, LjScratch *sc);

/* Max or average pooling of planes [lo, hi). count_include_pad as ONNX. */
void lj_pool(const LjWindow *g, LjPool kind, bool count_include_pad, const float *x, float *y,
             int64_t lo, int64_t hi);

#endif
