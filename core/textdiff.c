/* Minimal line diff: Myers' O(ND) algorithm in linear space ("An O(ND)
 * Difference Algorithm and Its Variations", 1986, section 4b), the one GNU
 * diff uses, without its cost heuristics so it never settles for a
 * non-minimal script. Before the search, lines are interned to integers,
 * the common prefix and suffix are cut, and lines that occur in only one
 * text are set aside as changed: none of them can be matched, so the
 * minimal script is the same, and the search runs only over what the two
 * texts share (the LLVM IR before and after optimisation shares few of its
 * 90k lines). The result is a "changed" flag per line of each text, from
 * which counts and hunks are read. */
#include "core/textdiff.h"

#include <stdbool.h>
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

/* ---- interning: equal lines get equal ids, and each id its count per side ---- */

typedef struct Interned {
    int *ida, *idb;    /* id of each line of a and b */
    int *count_a, *count_b; /* per id: how many lines of a (b) have it */
} Interned;

static void intern(const Lines *a, const Lines *b, Interned *in) {
    size_t total = (size_t)a->n + (size_t)b->n, cap = 16;
    while (cap < 2 * total)
        cap *= 2;
    int *slot = malloc(cap * sizeof *slot); /* a representative line (a: i, b: n + j), -1 */
    memset(slot, 0xff, cap * sizeof *slot);
    in->ida = malloc(((size_t)a->n + 1) * sizeof *in->ida);
    in->idb = malloc(((size_t)b->n + 1) * sizeof *in->idb);
    in->count_a = calloc(total + 1, sizeof *in->count_a);
    in->count_b = calloc(total + 1, sizeof *in->count_b);
    int *ids = malloc(cap * sizeof *ids); /* the id of each occupied slot */
    int nids = 0;
    for (size_t t = 0; t < total; t++) {
        bool in_a = t < (size_t)a->n;
        const Line *l = in_a ? &a->v[t] : &b->v[t - (size_t)a->n];
        size_t h = (size_t)l->h & (cap - 1);
        for (;; h = (h + 1) & (cap - 1)) {
            int r = slot[h];
            if (r < 0) {
                slot[h] = (int)t;
                break;
            }
            const Line *rl = r < a->n ? &a->v[r] : &b->v[r - a->n];
            if (line_eq(l, rl))
                break;
        }
        if (slot[h] == (int)t)
            ids[h] = nids++;
        int id = ids[h];
        if (in_a) {
            in->ida[t] = id;
            in->count_a[id]++;
        } else {
            in->idb[t - (size_t)a->n] = id;
            in->count_b[id]++;
        }
    }
    free(ids);
    free(slot);
}

static void interned_free(Interned *in) {
    free(in->ida);
    free(in->idb);
    free(in->count_a);
    free(in->count_b);
}

/* ---- the search ------------------------------------------------------------------ */

typedef struct Search {
    const int *a, *b;     /* the sequences searched (ids) */
    bool *ca, *cb;        /* changed flags, by index into a and b */
    int *fwd, *bwd;       /* furthest x per diagonal, offset by `off` */
    int off;
} Search;

/* A point on a minimal path from (x0,y0) to (x1,y1), found by running the
 * search from both corners until the paths meet (the "middle snake"). The
 * point returned is where the meeting snake starts, neither corner when the
 * two ranges share no first and no last element. */
static void middle_point(Search *s, int x0, int x1, int y0, int y1, int *mx, int *my) {
    const int *A = s->a + x0, *B = s->b + y0;
    int N = x1 - x0, M = y1 - y0, delta = N - M;
    bool odd = delta & 1;
    int *F = s->fwd + s->off, *R = s->bwd + s->off;
    for (int D = 0;; D++) {
        /* Forward: furthest x on each diagonal k = x - y with D edits. */
        for (int k = -D; k <= D; k += 2) {
            int x;
            if (D == 0) {
                x = 0;
            } else {
                int down = k + 1 <= D - 1 && F[k + 1] >= 0 && F[k + 1] - (k + 1) < M ? F[k + 1] : -1;
                int right = k - 1 >= -(D - 1) && F[k - 1] >= 0 && F[k - 1] < N ? F[k - 1] + 1 : -1;
                x = down > right ? down : right;
            }
            if (x < 0 || x - k < 0 || x - k > M) {
                F[k] = -1;
                continue;
            }
            int sx = x;
            while (x < N && x - k < M && A[x] == B[x - k])
                x++;
            F[k] = x;
            int kr = delta - k;
            if (odd && kr >= -(D - 1) && kr <= D - 1 && R[kr] >= 0 && x + R[kr] >= N) {
                *mx = x0 + sx;
                *my = y0 + sx - k;
                return;
            }
        }
        /* Backward, on the reversed sequences: reversed diagonal kr is
         * forward diagonal delta - kr. */
        for (int kr = -D; kr <= D; kr += 2) {
            int x;
            if (D == 0) {
                x = 0;
            } else {
                int down = kr + 1 <= D - 1 && R[kr + 1] >= 0 && R[kr + 1] - (kr + 1) < M ? R[kr + 1] : -1;
                int right = kr - 1 >= -(D - 1) && R[kr - 1] >= 0 && R[kr - 1] < N ? R[kr - 1] + 1 : -1;
                x = down > right ? down : right;
            }
            if (x < 0 || x - kr < 0 || x - kr > M) {
                R[kr] = -1;
                continue;
            }
            while (x < N && x - kr < M && A[N - 1 - x] == B[M - 1 - (x - kr)])
                x++;
            R[kr] = x;
            int k = delta - kr;
            if (!odd && k >= -D && k <= D && F[k] >= 0 && F[k] + x >= N) {
                /* The snake's forward start is the reversed path's end. */
                *mx = x0 + N - x;
                *my = y0 + M - (x - kr);
                return;
            }
        }
    }
}

static void compare(Search *s, int x0, int x1, int y0, int y1) {
    while (x0 < x1 && y0 < y1 && s->a[x0] == s->b[y0])
        x0++, y0++;
    while (x0 < x1 && y0 < y1 && s->a[x1 - 1] == s->b[y1 - 1])
        x1--, y1--;
    if (x0 == x1 || y0 == y1) {
        for (int x = x0; x < x1; x++)
            s->ca[x] = true;
        for (int y = y0; y < y1; y++)
            s->cb[y] = true;
        return;
    }
    int mx, my;
    middle_point(s, x0, x1, y0, y1, &mx, &my);
    compare(s, x0, mx, y0, my);
    compare(s, mx, x1, my, y1);
}

/* Sets changed_a[i] (changed_b[j]) for every line of a (b) that a minimal
 * edit script removes (adds). */
static void diff_lines(const Lines *a, const Lines *b, bool *changed_a, bool *changed_b) {
    Interned in;
    intern(a, b, &in);
    /* Only lines the other text also has take part in the search. */
    int *ra = malloc(((size_t)a->n + 1) * sizeof *ra), *rb = malloc(((size_t)b->n + 1) * sizeof *rb);
    int *ia = malloc(((size_t)a->n + 1) * sizeof *ia), *ib = malloc(((size_t)b->n + 1) * sizeof *ib);
    int na = 0, nb = 0;
    for (int i = 0; i < a->n; i++) {
        changed_a[i] = !in.count_b[in.ida[i]];
        if (!changed_a[i]) {
            ia[na] = i;
            ra[na++] = in.ida[i];
        }
    }
    for (int j = 0; j < b->n; j++) {
        changed_b[j] = !in.count_a[in.idb[j]];
        if (!changed_b[j]) {
            ib[nb] = j;
            rb[nb++] = in.idb[j];
        }
    }
    size_t diags = 2 * ((size_t)na + (size_t)nb) + 3;
    Search s = {
        .a = ra,
        .b = rb,
        .ca = calloc((size_t)na + 1, sizeof(bool)),
        .cb = calloc((size_t)nb + 1, sizeof(bool)),
        .fwd = malloc(diags * sizeof(int)),
        .bwd = malloc(diags * sizeof(int)),
        .off = na + nb + 1,
    };
    compare(&s, 0, na, 0, nb);
    for (int x = 0; x < na; x++)
        changed_a[ia[x]] = s.ca[x];
    for (int y = 0; y < nb; y++)
        changed_b[ib[y]] = s.cb[y];
    free(s.ca);
    free(s.cb);
    free(s.fwd);
    free(s.bwd);
    free(ra);
    free(rb);
    free(ia);
    free(ib);
    interned_free(&in);
}

/* ---- results ---------------------------------------------------------------------- */

typedef struct Diff {
    Lines a, b;
    bool *ca, *cb;
} Diff;

static void diff_make(Diff *df, const char *ta, const char *tb) {
    df->a = split_lines(ta);
    df->b = split_lines(tb);
    df->ca = calloc((size_t)df->a.n + 1, sizeof(bool));
    df->cb = calloc((size_t)df->b.n + 1, sizeof(bool));
    diff_lines(&df->a, &df->b, df->ca, df->cb);
}

static void diff_free(Diff *df) {
    free(df->a.v);
    free(df->b.v);
    free(df->ca);
    free(df->cb);
}

DiffCounts textdiff_count(const char *ta, const char *tb) {
    Diff df;
    diff_make(&df, ta, tb);
    DiffCounts c = {0, 0};
    for (int i = 0; i < df.a.n; i++)
        c.removed += df.ca[i];
    for (int j = 0; j < df.b.n; j++)
        c.added += df.cb[j];
    diff_free(&df);
    return c;
}

static void emit_line(StrBuf *out, char tag, const Line *l) {
    sb_putc(out, tag);
    sb_append_n(out, l->s, l->len);
    sb_putc(out, '\n');
}

/* The next change at or after (i, j), both walking unchanged lines in step
 * (an unchanged line of a is matched with the next unchanged line of b):
 * *i and *j land on its first removed and first added line, and the number
 * of unchanged lines skipped is returned. At the end, *i == a.n. */
static int next_change(const Diff *df, int *i, int *j) {
    int kept = 0;
    while (*i < df->a.n && *j < df->b.n && !df->ca[*i] && !df->cb[*j])
        (*i)++, (*j)++, kept++;
    return kept;
}

/* A change's extent: from (i, j), the removed lines [i, *ie) and added
 * lines [j, *je). */
static void change_end(const Diff *df, int i, int j, int *ie, int *je) {
    while (i < df->a.n && df->ca[i])
        i++;
    while (j < df->b.n && df->cb[j])
        j++;
    *ie = i;
    *je = j;
}

static bool at_end(const Diff *df, int i, int j) {
    return i >= df->a.n && j >= df->b.n;
}

void textdiff_unified(const char *ta, const char *tb, const char *name_a, const char *name_b,
                      int context, StrBuf *out) {
    Diff df;
    diff_make(&df, ta, tb);
    int i = 0, j = 0;
    bool header = false;
    for (;;) {
        next_change(&df, &i, &j);
        if (at_end(&df, i, j))
            break;
        if (!header)
            sb_printf(out, "--- %s\n+++ %s\n", name_a, name_b);
        header = true;
        /* A hunk: `context` lines before its first change, and changes
         * joined while fewer than 2*context + 1 unchanged lines part them. */
        int lead = i < context ? i : context;
        if (j < lead)
            lead = j;
        int hi = i - lead, hj = j - lead, ei, ej;
        for (;;) {
            change_end(&df, i, j, &ei, &ej);
            int pi = ei, pj = ej;
            int kept = next_change(&df, &pi, &pj);
            bool last = at_end(&df, pi, pj) || kept > 2 * context;
            i = ei;
            j = ej;
            if (last)
                break;
            i = pi;
            j = pj;
        }
        /* Trailing context after the last change. */
        int trail = 0;
        while (trail < context && i + trail < df.a.n && j + trail < df.b.n)
            trail++;
        int stop_i = i + trail, stop_j = j + trail;
        int alen = stop_i - hi, blen = stop_j - hj;
        sb_printf(out, "@@ -%d,%d +%d,%d @@\n", hi + (alen ? 1 : 0), alen, hj + (blen ? 1 : 0),
                  blen);
        int x = hi, y = hj;
        while (x < stop_i || y < stop_j) {
            if (x < stop_i && y < stop_j && !df.ca[x] && !df.cb[y]) {
                emit_line(out, ' ', &df.a.v[x]);
                x++, y++;
                continue;
            }
            while (x < stop_i && df.ca[x])
                emit_line(out, '-', &df.a.v[x++]);
            while (y < stop_j && df.cb[y])
                emit_line(out, '+', &df.b.v[y++]);
        }
        i = stop_i;
        j = stop_j;
    }
    diff_free(&df);
}

void textdiff_changed_span(const char *a, size_t alen, const char *b, size_t blen, TextSpan *sa,
                           TextSpan *sb) {
    size_t pre = 0;
    while (pre < alen && pre < blen && a[pre] == b[pre])
        pre++;
    size_t suf = 0;
    while (suf < alen - pre && suf < blen - pre && a[alen - 1 - suf] == b[blen - 1 - suf])
        suf++;
    *sa = (TextSpan){pre, alen - suf};
    *sb = (TextSpan){pre, blen - suf};
}
