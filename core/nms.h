/* NonMaxSuppression: its geometry, its order and the selection itself. The
 * interpreter's nms and libjit's share this one source (static inline), so
 * that both keep the same boxes. */
#ifndef GLOWC_CORE_NMS_H
#define GLOWC_CORE_NMS_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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

/* nms_select's failures, which each caller words as its own error. */
enum { NMS_BEYOND_BOUND = -1, NMS_NO_MEMORY = -2 };

/* Per batch and class of scores [nb, nc, n] over boxes [nb, n, 4]: the
 * boxes above the score threshold by score, each kept unless it overlaps
 * one kept before it by more than the IoU threshold, until max_out are
 * kept. Writes the rows (batch, class, box) to out, at most `bound` of
 * them; returns their count, or NMS_BEYOND_BOUND when there would be more,
 * or NMS_NO_MEMORY. */
static inline int64_t nms_select(const float *bx, const float *sc, int64_t nb, int64_t nc,
                                 int64_t n, int64_t max_out, float iou, float thr, bool center,
                                 int64_t *out, int64_t bound) {
    NmsCand *cand = malloc((size_t)(n ? n : 1) * sizeof *cand);
    float *kept = malloc((size_t)(n ? n : 1) * 4 * sizeof *kept);
    int64_t rows = cand && kept ? 0 : NMS_NO_MEMORY;
    for (int64_t b = 0; b < nb && rows >= 0; b++) {
        for (int64_t c = 0; c < nc && rows >= 0; c++) {
            int64_t m = 0, nkept = 0;
            for (int64_t i = 0; i < n; i++) {
                float s = sc[(b * nc + c) * n + i];
                if (s > thr)
                    cand[m++] = (NmsCand){s, i};
            }
            qsort(cand, (size_t)m, sizeof *cand, nms_cand_cmp);
            for (int64_t i = 0; i < m && nkept < max_out; i++) {
                float corners[4];
                nms_box_corners(bx + (b * n + cand[i].box) * 4, center, corners);
                bool drop = false;
                for (int64_t j = 0; j < nkept && !drop; j++)
                    drop = nms_overlaps(kept + j * 4, corners, iou);
                if (drop)
                    continue;
                if (rows == bound) {
                    rows = NMS_BEYOND_BOUND;
                    break;
                }
                memcpy(kept + nkept++ * 4, corners, sizeof corners);
                out[rows * 3] = b, out[rows * 3 + 1] = c, out[rows * 3 + 2] = cand[i].box;
                rows++;
            }
        }
    }
    free(cand);
    free(kept);
    return rows;
}

#endif
