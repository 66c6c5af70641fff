/* Myers diff over lines. Lines are compared by hash, then by content. */
#include "core/textdiff.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct Line {
    const char *s;
    size_t len;
    uint64_t h;
} Line;

typedef struct Lines {
    Line *v;
    int n;
} Lines;

static Lines split_lines(const char *t) {
    Lines L = {0};
    int cap = 64;
    L.v = malloc((size_t)cap * sizeof *L.v);
    for (const char *p = t; p && *p;) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (L.n == cap)
            L.v = realloc(L.v, (size_t)(cap *= 2) * sizeof *L.v);
        uint64_t h = 1469598103934665603ull;
        for (size_t i = 0; i < len; i++)
            h = (h ^ (unsigned char)p[i]) * 1099511628211ull;
        L.v[L.n++] = (Line){p, len, h};
        p = e ? e + 1 : p + len;
    }
    return L;
}

static bool line_eq(const Line *a, const Line *b) {
    return a->h == b->h && a->len == b->len && !memcmp(a->s, b->s, a->len);
}

typedef enum { OP_KEEP, OP_DEL, OP_ADD } EditOp;

/* The edit script a -> b as a sequence of ops (returned length in *nops).
 * Greedy Myers with the full trace kept (memory O(D^2)); beyond a bound on
 * D the rest is treated as a block replacement, which is still a valid
 * diff, only not a minimal one. */
static EditOp *edit_script(const Lines *a, const Lines *b, int *nops) {
    int n = a->n, m = b->n, max = n + m;
    int bound = max < 2000 ? max : 2000;
    int off = bound + 1;
    int **trace = calloc((size_t)bound + 2, sizeof *trace);
    int *v = calloc((size_t)(2 * bound + 3), sizeof *v);
    int dfound = -1;
    for (int d = 0; d <= bound && dfound < 0; d++) {
        for (int k = -d; k <= d; k += 2) {
            int x = (k == -d || (k != d && v[off + k - 1] < v[off + k + 1])) ? v[off + k + 1]
                                                                             : v[off + k - 1] + 1;
            int y = x - k;
            while (x < n && y < m && line_eq(&a->v[x], &b->v[y]))
                x++, y++;
            v[off + k] = x;
            if (x >= n && y >= m) {
                dfound = d;
                break;
            }
        }
        /* Row d keeps v[-d .. d] only: the diagonals step d could reach. */
        trace[d] = malloc((size_t)(2 * d + 1) * sizeof **trace);
        memcpy(trace[d], v + off - d, (size_t)(2 * d + 1) * sizeof *v);
    }
    EditOp *ops = malloc((size_t)(max + 1) * sizeof *ops);
    int len = 0;
    if (dfound < 0) { /* too different: delete all, add all */
        for (int i = 0; i < n; i++)
            ops[len++] = OP_DEL;
        for (int i = 0; i < m; i++)
            ops[len++] = OP_ADD;
    } else {
        /* Walk back through the trace, collecting ops in reverse. */
        int x = n, y = m;
        for (int d = dfound; d > 0; d--) {
            const int *pv = trace[d - 1] + (d - 1); /* pv[k] for k in [-(d-1), d-1] */
            int k = x - y;
            int pk = (k == -d || (k != d && pv[k - 1] < pv[k + 1])) ? k + 1 : k - 1;
            int px = pv[pk], py = px - pk;
            while (x > px && y > py) {
                ops[len++] = OP_KEEP;
                x--, y--;
            }
            ops[len++] = pk == k + 1 ? OP_ADD : OP_DEL;
            x = px;
            y = py;
        }
        while (x > 0 && y > 0) {
            ops[len++] = OP_KEEP;
            x--, y--;
        }
        for (int i = 0, j = len - 1; i < j; i++, j--) {
            EditOp t = ops[i];
            ops[i] = ops[j];
            ops[j] = t;
        }
    }
    for (int d = 0; d <= bound + 1; d++)
        free(trace[d]);
    free(trace);
    free(v);
    *nops = len;
    return ops;
}

DiffCounts textdiff_count(const char *ta, const char *tb) {
    Lines a = split_lines(ta), b = split_lines(tb);
    int n;
    EditOp *ops = edit_script(&a, &b, &n);
    DiffCounts c = {0, 0};
    for (int i = 0; i < n; i++) {
        c.added += ops[i] == OP_ADD;
        c.removed += ops[i] == OP_DEL;
    }
    free(ops);
    free(a.v);
    free(b.v);
    return c;
}

static void emit_line(StrBuf *out, char tag, const Line *l) {
    sb_putc(out, tag);
    sb_append_n(out, l->s, l->len);
    sb_putc(out, '\n');
}

void textdiff_unified(const char *ta, const char *tb, const char *name_a, const char *name_b,
                      int context, StrBuf *out) {
    Lines a = split_lines(ta), b = split_lines(tb);
    int n;
    EditOp *ops = edit_script(&a, &b, &n);
    bool any = false;
    for (int i = 0; i < n; i++)
        any |= ops[i] != OP_KEEP;
    if (any)
        sb_printf(out, "--- %s\n+++ %s\n", name_a, name_b);
    /* Positions in a and b at each op. */
    int *ax = malloc((size_t)(n + 1) * sizeof *ax), *bx = malloc((size_t)(n + 1) * sizeof *bx);
    for (int i = 0, x = 0, y = 0; i <= n; i++) {
        ax[i] = x;
        bx[i] = y;
        if (i < n) {
            x += ops[i] != OP_ADD;
            y += ops[i] != OP_DEL;
        }
    }
    for (int i = 0; any && i < n;) {
        if (ops[i] == OP_KEEP) {
            i++;
            continue;
        }
        /* A hunk: from `context` keeps before this change to `context` after
         * the last change closer than 2*context keeps. */
        int start = i, end = i;
        while (start > 0 && i - start < context && ops[start - 1] == OP_KEEP)
            start--;
        for (int j = i, keeps = 0; j < n; j++) {
            if (ops[j] == OP_KEEP) {
                if (++keeps > 2 * context)
                    break;
            } else {
                keeps = 0;
                end = j + 1;
            }
        }
        int stop = end;
        while (stop < n && stop - end < context && ops[stop] == OP_KEEP)
            stop++;
        int alen = ax[stop] - ax[start], blen = bx[stop] - bx[start];
        sb_printf(out, "@@ -%d,%d +%d,%d @@\n", ax[start] + (alen ? 1 : 0), alen,
                  bx[start] + (blen ? 1 : 0), blen);
        for (int j = start; j < stop; j++) {
            if (ops[j] == OP_KEEP)
                emit_line(out, ' ', &a.v[ax[j]]);
            else if (ops[j] == OP_DEL)
                emit_line(out, '-', &a.v[ax[j]]);
            else
                emit_line(out, '+', &b.v[bx[j]]);
        }
        i = stop;
    }
    free(ax);
    free(bx);
    free(ops);
    free(a.v);
    free(b.v);
}
