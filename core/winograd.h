/* Winograd's minimal filtering for 3x3 convolutions, F(m x m, 3 x 3) (Lavin
 * and Gray, "Fast Algorithms for Convolutional Neural Networks", 2016): an
 * m x m output tile is
 *     Y = A^T [ (G g G^T) . (B^T d B) ] A
 * for the 3x3 filter g and the alpha x alpha input tile d (alpha = m + 2),
 * "." elementwise. Summed over input channels, the elementwise products
 * become alpha^2 independent matrix products -- 36 of M x C by C x tiles
 * for F(4x4): 2.25 times fewer multiplications than direct convolution
 * (4 for F(2x2)'s 16 of 2x2 outputs), for more rounding (winograd_bound).
 *
 * The tables are shared by the winograd pass (which transforms the filter),
 * the interpreter's kernel and libjit's (which transform input and output),
 * so header-only: libjit includes it into bitcode. The points are 0, +-1,
 * +-2 and infinity for F(4x4) -- Lavin's choice, whose constants are the
 * smallest such a transform has. */
#ifndef GLOWC_CORE_WINOGRAD_H
#define GLOWC_CORE_WINOGRAD_H

#include <stdint.h>

enum { WINO_MAX_ALPHA = 6, WINO_MAX_M = 4 };

typedef struct WinoTransform {
    int m, alpha;
    double bt[WINO_MAX_ALPHA][WINO_MAX_ALPHA]; /* B^T: alpha x alpha */
    double g[WINO_MAX_ALPHA][3];               /* G: alpha x 3 */
    double at[WINO_MAX_M][WINO_MAX_ALPHA];     /* A^T: m x alpha */
} WinoTransform;

static const WinoTransform wino_f2 = {
    2, 4,
    {{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}},
    {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}},
    {{1, 1, 1, 0}, {0, 1, -1, -1}},
};

static const WinoTransform wino_f4 = {
    4, 6,
    {{4, 0, -5, 0, 1, 0},
     {0, -4, -4, 1, 1, 0},
     {0, 4, -4, -1, 1, 0},
     {0, -2, -1, 2, 1, 0},
     {0, 2, -1, -2, 1, 0},
     {0, 4, 0, -5, 0, 1}},
    {{1.0 / 4, 0, 0},
     {-1.0 / 6, -1.0 / 6, -1.0 / 6},
     {-1.0 / 6, 1.0 / 6, -1.0 / 6},
     {1.0 / 24, 1.0 / 12, 1.0 / 6},
     {1.0 / 24, -1.0 / 12, 1.0 / 6},
     {0, 0, 1}},
    {{1, 1, 1, 1, 1, 0}, {0, 1, -1, 2, -2, 0}, {0, 1, 1, 4, 4, 0}, {0, 1, -1, 8, -8, 1}},
};

/* The transform whose filter operand has alpha^2 rows (16 or 36), or NULL. */
static inline const WinoTransform *wino_of_rows(int64_t rows) {
    return rows == 16 ? &wino_f2 : rows == 36 ? &wino_f4 : 0;
}

/* u[(i*alpha + j)][m][c] = (G w[m][c] G^T)[i][j] for w [M][C][3][3], in
 * double, rounded once. */
void winograd_filter(const WinoTransform *t, const float *w, int64_t M, int64_t C, float *u);

/* The amplification of the transform: the largest, over output positions
 * (p, q), of sum_{i,j} |A^T|[p][i] |A^T|[q][j] (sum_ab |G|[i][a] |G|[j][b])
 * (sum_kl |B^T|[i][k] |B^T|[j][l]). The computation on |values| with
 * |matrices| is at most this times C max|w| max|x|, where direct
 * convolution's is 9 C max|w| max|x|; rounding errors scale with it
 * (tests/kernels/test_kernels.c: the bound). */
double winograd_amplification(const WinoTransform *t);

#endif
