/* NonMaxSuppression's geometry and order: the interpreter's nms and
 * libjit's share this one source (static inline), so that both keep the
 * same boxes. */
#ifndef GLOWC_CORE_NMS_H
#define GLOWC_CORE_NMS_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct NmsCand {
    float score;
    int64_t box;
} NmsCand;

/* Higher scores first, lower box indices first among equal scores (ONNX
 * Runtime's order). */
static inline int nms_cand_cmp(const void *pa, const void *pb) {
    const NmsCand *x = pa, *y = pb;
    if (x->score != y->score)
        return x->score > y->score ? -1 : 1;
    return (x->box > y->box) - (x->box < y->box);
}

/* A box as [ymin, xmin, ymax, xmax], from corners in either order or from
 * a centre and a size. */
static inline void nms_box_corners(const float *b, bool center, float *c) {
    if (center) {
        c[0] = b[1] - b[3] / 2, c[2] = b[1] + b[3] / 2;
        c[1] = b[0] - b[2] / 2, c[3] = b[0] + b[2] / 2;
        return;
    }
    c[0] = fminf(b[0], b[2]), c[2] = fmaxf(b[0], b[2]);
    c[1] = fminf(b[1], b[3]), c[3] = fmaxf(b[1], b[3]);
}

static inline bool nms_overlaps(const float *p, const float *q, float iou_threshold) {
    float h = fminf(p[2], q[2]) - fmaxf(p[0], q[0]), w = fminf(p[3], q[3]) - fmaxf(p[1], q[1]);
    if (h <= 0 || w <= 0)
        return false;
    float inter = h * w, ap = (p[2] - p[0]) * (p[3] - p[1]), aq = (q[2] - q[0]) * (q[3] - q[1]);
    float uni = ap + aq - inter;
    if (ap <= 0 || aq <= 0 || uni <= 0)
        return false;
    return inter / uni > iou_threshold;
}

#endif
