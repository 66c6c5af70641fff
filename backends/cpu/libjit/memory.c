/* Memory instructions that need code: inserttensor (a strided write of a
 * part into a larger tensor). Copies are memmove in the generated code. */
#include "backends/cpu/libjit/libjit.h"

/* dst[offsets + i] = src[i]; the innermost axis is copied whole. */
void libjit_insert(const int64_t *d, void *const *ops) {
    int rank = lj_rank(d, 1);
    int n;
    const int64_t *offs = lj_attr(d, AK_offsets, &n);
    size_t es = lj_elem_size(lj_elem(d, 1));
    int64_t dstride[DESC_MAX_RANK], idx[DESC_MAX_RANK] = {0};
    int64_t s = 1;
    for (int i = rank - 1; i >= 0; i--) {
        dstride[i] = s;
        s *= lj_dim(d, 0, i);
    }
    if (rank == 0) {
        memcpy(ops[0], ops[1], es);
        return;
    }
    int64_t row = lj_dim(d, 1, rank - 1), rows = lj_numel(d, 1) / (row ? row : 1);
    const char *src = ops[1];
    char *dst = ops[0];
    for (int64_t r = 0; r < rows; r++) {
        int64_t off = offs[rank - 1];
        for (int i = 0; i < rank - 1; i++)
            off += (idx[i] + offs[i]) * dstride[i];
        memcpy(dst + (size_t)off * es, src + (size_t)(r * row) * es, (size_t)row * es);
        for (int i = rank - 2; i >= 0; i--) {
            if (++idx[i] < lj_dim(d, 1, i))
                break;
            idx[i] = 0;
        }
    }
}
