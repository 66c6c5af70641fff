/* The byte layout of qconv_packed's weights (core/nodes.def), shared by the
 * qconv-pack pass that writes it, the interpreter's kernel that unpacks it
 * and libjit's that reads it (k_qconvp.c), so header-only (libjit includes
 * it into bitcode).
 *
 * A word is four input channels of one output row and one tap; rows come
 * in groups of G: [M/G][kh][kw][C'/4][G rows][4 channels]. The kernel
 * follows the layout:
 *  - G = 4: positions in the lanes. Each tile broadcasts a row's word; a
 *    block of four rows is one 16-byte read, and the next block's words
 *    are the next ones (groups of 16 or 64 rows here would read a quarter
 *    of each cache line per block: 1x1 convs on 7x7 measured 0.33 -> 0.45 ms).
 *  - G = 16 or 64: output channels in the lanes, for windows of several
 *    taps on small maps (qpack_by_lanes): one (tap, channel group)'s 16
 *    rows are one 64-byte vector, 64 rows four consecutive ones. */
#ifndef GLOWC_CORE_QPACK_H
#define GLOWC_CORE_QPACK_H

#include <stdbool.h>
#include <stdint.h>

enum {
    QPACK_ROWS_MIN = 4, QPACK_ROWS_VEC = 16, QPACK_ROWS_MAX = 64, QPACK_CHANNELS = 4,
    QPACK_LANES_MAX_POS = 196, QPACK_LANES_MIN_K = 1024
};

/* Output channels in the lanes: maps of at most 14x14 positions, where
 * position tiles leave lanes idle (49 of 64 on 7x7; a 3x3's rows of 14
 * positions in 16 lanes), M a multiple of 16, and sums (K = C' taps) long
 * enough to pay for the transposed stores. 1x1 convs only on maps of at
 * most 49 positions: there a 64-position tile wastes a quarter of its
 * lanes (bench_qconv, 2048 to 512 on 7x7: 0.153-0.159 -> 0.141-0.146 ms,
 * alternated; 1024 to 2048 at stride 2, 0.31-0.33 either way); 512 to
 * 2048 (K = 512) measured 0.16 -> 0.17, so short sums keep position tiles
 * too. */
static inline bool qpack_by_lanes(int64_t m, int64_t taps, int64_t positions, int64_t cp) {
    return m % QPACK_ROWS_VEC == 0 && positions <= QPACK_LANES_MAX_POS &&
           cp * taps >= QPACK_LANES_MIN_K && (taps > 1 || positions <= 49);
}

/* G for M output rows (a multiple of 4, as the pass requires), taps, the
 * output's positions per image and C' (C rounded up to a multiple of 4). */
static inline int64_t qpack_rows(int64_t m, int64_t taps, int64_t positions, int64_t cp) {
    if (!qpack_by_lanes(m, taps, positions, cp))
        return QPACK_ROWS_MIN;
    return m % QPACK_ROWS_MAX ? QPACK_ROWS_VEC : QPACK_ROWS_MAX;
}

/* The byte of w[m][c][t] (t = i * kw + j) with G rows a group, Cp = C', T
 * taps. */
static inline int64_t qpack_at(int64_t g, int64_t cp, int64_t taps, int64_t m, int64_t c,
                               int64_t t) {
    return (((m / g * taps + t) * (cp / QPACK_CHANNELS) + c / QPACK_CHANNELS) * g + m % g) *
               QPACK_CHANNELS +
           c % QPACK_CHANNELS;
}

#endif
