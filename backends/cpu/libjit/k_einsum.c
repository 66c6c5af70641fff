/* einsum for every numeric kind, as libjit_einsum_any: the interpreter's
 * loop nest (core/einsum.h, one source for both), its equation read from
 * the descriptor. A unit of work is one output element: its terms are one
 * run of the reduction labels' odometer, summed in double for float kinds
 * and in wrapping 64-bit integers for the others, in the interpreter's
 * order, so the two agree exactly. */
/* No fused multiply-adds: the interpreter rounds every product. */
#pragma STDC FP_CONTRACT OFF

#include "backends/cpu/libjit/elem.h"
#include "backends/cpu/libjit/kernels.h"
#include "core/einsum.h"

LIBJIT_WORK libjit_einsum_any_work(const int64_t *d) {
    return lj_numel(d, 0) > 0 ? lj_numel(d, 0) : 1;
}

/* Output elements [lo, hi). */
LIBJIT_KERNEL libjit_einsum_any(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                                LjScratch *sc) {
    int n, nin = lj_nops(d) - 1;
    const char *eq = (const char *)lj_attr(d, AK_equation, &n);
    if (!eq || nin < 1 || nin > 16)
        return;
    int ranks[16];
    const int64_t *dims[16];
    for (int k = 0; k < nin; k++) {
        ranks[k] = lj_rank(d, k + 1);
        dims[k] = lj_op(d, k + 1) + 2;
    }
    EinsumSpec s;
    char err[8];
    if (!einsum_parse_ranks(eq, nin, ranks, &s, err, sizeof err))
        return;
    EinsumLoop l;
    einsum_loop_plan(&s, dims, &l);
    int ey = lj_elem(d, 0);
    bool flt = lj_is_float(ey);
    for (int64_t o = lo; o < hi && o < l.out_count; o++) {
        int64_t idx[64] = {0}, off[16] = {0}, r = o;
        for (int i = l.out_rank - 1; i >= 0; i--) {
            int64_t v = r % l.size[i];
            r /= l.size[i];
            for (int k = 0; k < nin; k++)
                off[k] += v * l.stride[k][i];
        }
        double acc = 0;
        uint64_t iacc = 0;
        for (int64_t t = 0; t < l.red_count; t++) {
            double prod = 1;
            uint64_t iprod = 1;
            for (int k = 0; k < nin; k++) {
                if (flt)
                    prod *= lj_ld_f64(lj_elem(d, k + 1), ops[k + 1], off[k]);
                else
                    iprod *= (uint64_t)lj_ld_i64(lj_elem(d, k + 1), ops[k + 1], off[k]);
            }
            acc += prod;
            iacc += iprod;
            einsum_step(&l, l.out_rank, idx, off);
        }
        if (flt)
            lj_st_f64(ey, ops[0], o, acc);
        else
            lj_st_i64(ey, ops[0], o, (int64_t)iacc);
    }
}
