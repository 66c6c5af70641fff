/* The compile-time half of Winograd's algorithm (winograd.h): the filter
 * transform, and the transform's error amplification. */
#include "core/winograd.h"

#include <math.h>

void winograd_filter(const WinoTransform *t, const float *w, int64_t M, int64_t C, float *u) {
    int a = t->alpha;
    for (int64_t m = 0; m < M; m++)
        for (int64_t c = 0; c < C; c++) {
            const float *g = w + (m * C + c) * 9;
            double gg[WINO_MAX_ALPHA][3]; /* G g */
            for (int i = 0; i < a; i++)
                for (int k = 0; k < 3; k++)
                    gg[i][k] = t->g[i][0] * g[k] + t->g[i][1] * g[3 + k] + t->g[i][2] * g[6 + k];
            for (int i = 0; i < a; i++)
                for (int j = 0; j < a; j++) {
                    double v = gg[i][0] * t->g[j][0] + gg[i][1] * t->g[j][1] + gg[i][2] * t->g[j][2];
                    u[((int64_t)(i * a + j) * M + m) * C + c] = (float)v;
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
