/* The compile-time half of Winograd's algorithm (winograd.h): the filter
 * transform, and the transform's error amplification. */
#include "core/winograd.h"

#include <math.h>

/* A block of input channels at a time, channel innermost: the same double
 * arithmetic per filter as one filter at a time, but in loops the compiler
 * vectorises, writing each of the alpha^2 planes a run of channels long
 * (one filter at a time was 60 ms of ResNet-18's compile). */
enum { WINO_BLOCK = 64 };

void winograd_filter(const WinoTransform *t, const float *w, int64_t M, int64_t C, float *u) {
    int a = t->alpha;
    double gg[WINO_MAX_ALPHA][3][WINO_BLOCK]; /* G g, by channel */
    double g[9][WINO_BLOCK];
    for (int64_t m = 0; m < M; m++)
        for (int64_t c0 = 0; c0 < C; c0 += WINO_BLOCK) {
            int n = C - c0 < WINO_BLOCK ? (int)(C - c0) : WINO_BLOCK;
            const float *wm = w + (m * C + c0) * 9;
            for (int c = 0; c < n; c++)
                for (int k = 0; k < 9; k++)
                    g[k][c] = wm[c * 9 + k];
            for (int i = 0; i < a; i++)
                for (int k = 0; k < 3; k++)
                    for (int c = 0; c < n; c++)
                        gg[i][k][c] = t->g[i][0] * g[k][c] + t->g[i][1] * g[3 + k][c] +
                                      t->g[i][2] * g[6 + k][c];
            for (int i = 0; i < a; i++)
                for (int j = 0; j < a; j++) {
                    float *out = u + ((int64_t)(i * a + j) * M + m) * C + c0;
                    for (int c = 0; c < n; c++)
                        out[c] = (float)(gg[i][0][c] * t->g[j][0] + gg[i][1][c] * t->g[j][1] +
                                         gg[i][2][c] * t->g[j][2]);
                }
        }
}

double winograd_amplification(const WinoTransform *t) {
    int a = t->alpha;
    double gs[WINO_MAX_ALPHA] = {0}, bs[WINO_MAX_ALPHA] = {0};
    for (int i = 0; i < a; i++) {
        for (int k = 0; k < 3; k++)
            gs[i] += fabs(t->g[i][k]);
        for (int k = 0; k < a; k++)
            bs[i] += fabs(t->bt[i][k]);
    }
    double worst = 0;
    for (int p = 0; p < t->m; p++)
        for (int q = 0; q < t->m; q++) {
            double s = 0;
            for (int i = 0; i < a; i++)
                for (int j = 0; j < a; j++)
                    s += fabs(t->at[p][i]) * fabs(t->at[q][j]) * gs[i] * gs[j] * bs[i] * bs[j];
            worst = s > worst ? s : worst;
        }
    return worst;
}
