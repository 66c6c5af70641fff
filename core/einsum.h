/* Einsum's equation and its loop nest, shared by shape inference, the
 * interpreter's kernel and libjit's (which reads the equation from its
 * descriptor): static inline, so that libjit's bitcode has its own copy of
 * one source rather than a second parser. */
#ifndef GLOWC_CORE_EINSUM_H
#define GLOWC_CORE_EINSUM_H

#include <ctype.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/types.h"

/* einsum: letters of each operand and of the output ('.' stands for the
 * broadcast dims of an ellipsis, expanded to the right count). */
typedef struct EinsumSpec {
    int nops;
    int rank[16];
    char labels[16][MAX_RANK];
    int out_rank;
    char out_labels[MAX_RANK];
} EinsumSpec;

static inline int einsum_term(const char *p, const char *end, char *labels, int *has_ellipsis) {
    int n = 0;
    *has_ellipsis = -1;
    for (; p < end; p++) {
        if (*p == ' ')
            continue;
        if (*p == '.') {
            if (end - p < 3 || p[1] != '.' || p[2] != '.' || *has_ellipsis >= 0)
                return -1;
            *has_ellipsis = n;
            p += 2;
            continue;
        }
        if (!isalpha((unsigned char)*p) || n >= MAX_RANK)
            return -1;
        labels[n++] = *p;
    }
    return n;
}

static inline bool einsum_parse_ranks(const char *eq, int nops, const int *ranks, EinsumSpec *s,
                                      char *err, size_t errlen) {
    memset(s, 0, sizeof *s);
    if (nops > 16) {
        snprintf(err, errlen, "too many operands");
        return false;
    }
    const char *arrow = strstr(eq, "->");
    const char *lhs_end = arrow ? arrow : eq + strlen(eq);
    const char *p = eq;
    int ell_rank = 0;
    int ell_dims_at[16];
    for (int i = 0; i < nops; i++) {
        const char *comma = memchr(p, ',', (size_t)(lhs_end - p));
        const char *tend = comma ? comma : lhs_end;
        if ((i < nops - 1) != (comma != NULL)) {
            snprintf(err, errlen, "equation has a different number of terms than operands");
            return false;
        }
        char labels[MAX_RANK];
        int ell;
        int nl = einsum_term(p, tend, labels, &ell);
        if (nl < 0) {
            snprintf(err, errlen, "bad term in equation '%s'", eq);
            return false;
        }
        int er = ell >= 0 ? ranks[i] - nl : 0;
        if (er < 0 || (ell < 0 && nl != ranks[i])) {
            snprintf(err, errlen, "term %d has %d labels but operand has rank %d", i, nl,
                     ranks[i]);
            return false;
        }
        if (er > ell_rank)
            ell_rank = er;
        /* Expand the ellipsis into '0'+k placeholders, right-aligned. */
        int r = 0;
        for (int j = 0; j < nl; j++) {
            if (j == ell)
                for (int k = 0; k < er; k++)
                    s->labels[i][r++] = (char)('0' + (MAX_RANK - er + k));
            s->labels[i][r++] = labels[j];
        }
        if (ell == nl)
            for (int k = 0; k < er; k++)
                s->labels[i][r++] = (char)('0' + (MAX_RANK - er + k));
        s->rank[i] = r;
        ell_dims_at[i] = ell;
        p = tend + 1;
    }
    s->nops = nops;
    (void)ell_dims_at;
    if (arrow) {
        char labels[MAX_RANK];
        int ell;
        int nl = einsum_term(arrow + 2, arrow + 2 + strlen(arrow + 2), labels, &ell);
        if (nl < 0 || nl + ell_rank > MAX_RANK) {
            snprintf(err, errlen, "bad output term in equation '%s'", eq);
            return false;
        }
        int r = 0;
        for (int j = 0; j <= nl; j++) {
            if (j == ell)
                for (int k = 0; k < ell_rank; k++)
                    s->out_labels[r++] = (char)('0' + (MAX_RANK - ell_rank + k));
            if (j < nl)
                s->out_labels[r++] = labels[j];
        }
        s->out_rank = r;
    } else {
        /* Implicit mode: broadcast dims, then letters seen once, alphabetically. */
        int r = 0;
        for (int k = 0; k < ell_rank; k++)
            s->out_labels[r++] = (char)('0' + (MAX_RANK - ell_rank + k));
        for (int c = 'A'; c <= 'z'; c++) {
            int seen = 0;
            for (int i = 0; i < nops; i++)
                for (int j = 0; j < s->rank[i]; j++)
                    seen += s->labels[i][j] == c;
            if (seen == 1 && r < MAX_RANK)
                s->out_labels[r++] = (char)c;
        }
        s->out_rank = r;
    }
    return true;
}

/* Einsum by brute force: one odometer over every distinct label, output
 * labels first (in the output's order), so that output element o's terms
 * are the o-th run of red_count steps. An operand's stride for a label
 * sums the strides of its axes bearing it (a repeated label walks the
 * diagonal); a size-1 axis broadcasts. */
typedef struct EinsumLoop {
    int nlabels, nops, out_rank;
    int64_t size[64];
    int64_t stride[16][64];
    int64_t out_count, red_count;
} EinsumLoop;

static inline int einsum_label(EinsumLoop *l, char *labels, char c, int64_t dim) {
    for (int i = 0; i < l->nlabels; i++) {
        if (labels[i] != c)
            continue;
        if (l->size[i] == 1)
            l->size[i] = dim;
        return i;
    }
    labels[l->nlabels] = c;
    l->size[l->nlabels] = dim;
    return l->nlabels++;
}

/* dims[k]: operand k's dimensions (s->rank[k] of them), row-major. */
static inline void einsum_loop_plan(const EinsumSpec *s, const int64_t *const *dims, EinsumLoop *l) {
    memset(l, 0, sizeof *l);
    l->nops = s->nops;
    l->out_rank = s->out_rank;
    char labels[64];
    for (int o = 0; o < s->out_rank; o++)
        einsum_label(l, labels, s->out_labels[o], 1);
    for (int k = 0; k < s->nops; k++)
        for (int j = 0; j < s->rank[k]; j++)
            einsum_label(l, labels, s->labels[k][j], dims[k][j]);
    for (int k = 0; k < s->nops; k++) {
        int64_t st = 1;
        for (int j = s->rank[k] - 1; j >= 0; j--) {
            int li = einsum_label(l, labels, s->labels[k][j], 1);
            if (dims[k][j] != 1)
                l->stride[k][li] += st;
            st *= dims[k][j];
        }
    }
    l->out_count = l->red_count = 1;
    for (int i = 0; i < l->nlabels; i++)
        *(i < s->out_rank ? &l->out_count : &l->red_count) *= l->size[i];
}

/* One step of the odometer over labels [from, nlabels): idx holds their
 * indices, off each operand's offset. */
static inline void einsum_step(const EinsumLoop *l, int from, int64_t *idx, int64_t *off) {
    for (int i = l->nlabels - 1; i >= from; i--) {
        for (int k = 0; k < l->nops; k++)
            off[k] += l->stride[k][i];
        if (++idx[i] < l->size[i])
            return;
        for (int k = 0; k < l->nops; k++)
            off[k] -= l->stride[k][i] * l->size[i];
        idx[i] = 0;
    }
}

#endif
