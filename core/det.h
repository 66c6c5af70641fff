/* The determinant by LU decomposition with partial pivoting, in double and
 * in place: the interpreter's det and libjit's share this one source
 * (static inline), so they agree exactly. */
#ifndef GLOWC_CORE_DET_H
#define GLOWC_CORE_DET_H

#include <math.h>
#include <stdint.h>

static inline double det_lu(double *m, int64_t n) {
    double det = 1;
    for (int64_t c = 0; c < n; c++) {
        int64_t piv = c;
        for (int64_t r = c + 1; r < n; r++)
            if (fabs(m[r * n + c]) > fabs(m[piv * n + c]))
                piv = r;
        if (m[piv * n + c] == 0)
            return 0;
        if (piv != c) {
            for (int64_t k = 0; k < n; k++) {
                double t = m[c * n + k];
                m[c * n + k] = m[piv * n + k];
                m[piv * n + k] = t;
            }
            det = -det;
        }
        det *= m[c * n + c];
        for (int64_t r = c + 1; r < n; r++) {
            double f = m[r * n + c] / m[c * n + c];
            for (int64_t k = c + 1; k < n; k++)
                m[r * n + k] -= f * m[c * n + k];
        }
    }
    return det;
}

#endif
