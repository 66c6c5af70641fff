/* glowc explore: the terminal UI over a compilation session. A left pane
 * lists the steps (a cursor, and the current step marked); the main pane
 * shows a view of the current step chosen by number keys; the status line
 * says where one is and what just happened. Everything it shows comes from
 * the explorer core (explore_core.h), the same text the REPL prints; this
 * file only lays it out, colours it and reads keys. All of its state lives
 * in one Tui struct. */
#include <ctype.h>
#include <locale.h>
#include <ncurses.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tui/explore_core.h"
#include "tui/repl.h"
#include "tui/term_signal.h"

#define DEFAULT_MODEL "fixtures/models/digits.onnx"

/* What the main pane holds: a view of the current step, or the output of
 * a command (run, compare, help) until a view key is pressed. */
typedef enum { PANE_VIEW, PANE_OUTPUT } PaneKind;

enum { COLOR_ADDED = 1, COLOR_REMOVED, COLOR_HUNK, COLOR_MATCH, COLOR_STATUS, COLOR_CURRENT,
       COLOR_DIM, COLOR_TAB };

typedef struct Tui {
    Explorer e;
    PaneKind pane;
    ExploreView view;      /* the view on show (or last shown) */
    ExploreView diff_base; /* what view 6 diffs: the last other view */
    char *output_title;    /* PANE_OUTPUT: what the text is */
    StrBuf text;           /* the pane's text ... */
    char **lines;          /* ... split into lines (tabs expanded) */
    int nlines, maxlen;    /* maxlen: the longest line's length */
    int top, hscroll;      /* the first line and column shown */
    int line;              /* graph and lir views: the line cursor ... */
    int ref;               /* ... and which %ref on it Enter follows (-1: its first operand) */
    int back[64], nback;   /* the lines jumped from, for Backspace */
    char *commands[32];    /* the : lines entered, oldest first (Up, Down) */
    int ncommands;
    int cursor;            /* the step the left pane's cursor is on */
    int list_top;          /* the first step the left pane shows (among those shown) */
    int mark;              /* m: the step view 6 diffs against (-1: the one before) */
    bool hide_unchanged;   /* u: the step list leaves out steps that changed nothing */
    int *partner;          /* the diff's -/+ line pairs (explore_diff_partners), or NULL */
    bool stale;            /* the text must be made again */
    int shown_step, shown_width;
    char search[128];      /* the pattern of the last search ("" : none) */
    int match;             /* the line of the current match, -1: none */
    char message[512];     /* the last message, for the status line */
    bool colors;
    bool quit;
    TermSignals signals;   /* ours, from curses' start to its end */
} Tui;

/* ---- the pane's text ----------------------------------------------------------- */

static void free_lines(Tui *t) {
    for (int i = 0; i < t->nlines; i++)
        free(t->lines[i]);
    free(t->lines);
    t->lines = NULL;
    t->nlines = t->maxlen = 0;
    free(t->partner);
    t->partner = NULL;
}

/* One line with tabs expanded to 8 columns and control bytes dropped. */
static char *expand_line(const char *p, size_t len) {
    StrBuf sb;
    sb_init(&sb);
    for (size_t i = 0, col = 0; i < len; i++) {
        if (p[i] == '\t') {
            do
                sb_putc(&sb, ' ');
            while (++col % 8);
        } else if ((unsigned char)p[i] >= 32 || p[i] < 0) {
            sb_putc(&sb, p[i]);
            col++;
        }
    }
    return sb_take(&sb);
}

static void split_text(Tui *t) {
    free_lines(t);
    const char *s = sb_str(&t->text);
    int cap = 64;
    t->lines = malloc((size_t)cap * sizeof *t->lines);
    for (const char *p = s; *p;) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (t->nlines == cap)
            t->lines = realloc(t->lines, (size_t)(cap *= 2) * sizeof *t->lines);
        t->lines[t->nlines] = expand_line(p, len);
        int w = (int)strlen(t->lines[t->nlines++]);
        t->maxlen = w > t->maxlen ? w : t->maxlen;
        p = e ? e + 1 : p + len;
    }
}

static void set_message(Tui *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_message(Tui *t, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->message, sizeof t->message, fmt, ap);
    va_end(ap);
}

/* The first error of d, on one line, for the status line. */
static void message_from_diags(Tui *t, const DiagList *d) {
    StrBuf sb;
    sb_init(&sb);
    diag_render(d, &sb);
    const char *s = sb_str(&sb);
    /* The model's path is on the status line already. */
    size_t plen = t->e.model ? strlen(t->e.model) : 0;
    if (plen && !strncmp(s, t->e.model, plen) && !strncmp(s + plen, ": ", 2))
        s += plen + 2;
    size_t len = strcspn(s, "\n");
    set_message(t, "%.*s", (int)(len < sizeof t->message - 1 ? len : sizeof t->message - 1), s);
    sb_free(&sb);
}

static int main_width(void) {
    int left = COLS / 3 < 30 ? COLS / 3 : 30;
    return COLS - left - 1;
}

/* Text folded at `width` columns, at a blank where there is one, the
 * continuation indented: an error names a long path before it says what
 * is wrong, and a narrow pane would show only the path. Indented lines
 * (a source line and the caret under it) are left whole. */
static void wrap_text(const char *text, int width, StrBuf *out) {
    if (width < 20)
        width = 20;
    for (const char *p = text; *p;) {
        const char *end = p + strcspn(p, "\n");
        bool indented = *p == ' ';
        for (bool first = true; first || p < end; first = false) {
            int room = first ? width : width - 4;
            size_t n = (size_t)(end - p);
            if (!indented && (int)n > room) {
                n = (size_t)room;
                while (n > (size_t)room / 2 && p[n] != ' ')
                    n--;
                if (p[n] != ' ')
                    n = (size_t)room;
            }
            if (!first)
                sb_append(out, "    ");
            sb_append_n(out, p, n);
            sb_putc(out, '\n');
            for (p += n; p < end && *p == ' '; p++) /* the blank at the fold */
                ;
        }
        p = *end ? end + 1 : end;
    }
}

static void make_view_text(Tui *t) {
    sb_clear(&t->text);
    if (!t->e.s) {
        wrap_text(t->e.error ? t->e.error : "no model\n", main_width() - 4, &t->text);
        sb_append(&t->text, "\nThe model could not be loaded; q quits.\n");
        return;
    }
    DiagList d;
    diag_init(&d, NULL);
    int k = explore_current(&t->e);
    bool marked = t->view == VIEW_DIFF && t->mark >= 0 && t->mark != k;
    bool ok = marked ? explore_diff_steps(&t->e, t->mark, k, t->diff_base == VIEW_DIFF ? VIEW_COUNT
                                                               : t->diff_base,
                                          main_width(), &t->text, &d)
                     : explore_view(&t->e, t->view, t->diff_base, main_width(), &t->text, &d);
    if (!ok) {
        diag_render(&d, &t->text);
        message_from_diags(t, &d);
    }
    diag_free(&d);
}

/* Makes the pane's text again when the step, the view or the width changed. */
static void refresh_text(Tui *t) {
    int step = explore_current(&t->e);
    bool width_matters = t->view == VIEW_MEM || t->view == VIEW_DIFF;
    if (t->pane == PANE_VIEW &&
        (t->stale || step != t->shown_step || (width_matters && main_width() != t->shown_width))) {
        make_view_text(t);
        split_text(t);
        t->shown_step = step;
        t->shown_width = main_width();
        t->stale = false;
        if (t->top >= t->nlines)
            t->top = 0;
        if (t->line >= t->nlines)
            t->line = t->top;
        t->ref = -1;
        t->match = -1;
    }
}

static void show_output(Tui *t, const char *title, StrBuf *text) {
    sb_free(&t->text);
    t->text = *text;
    sb_init(text);
    free(t->output_title);
    t->output_title = strdup(title);
    t->pane = PANE_OUTPUT;
    t->top = t->hscroll = t->line = 0;
    t->ref = -1;
    t->nback = 0;
    t->match = -1;
    split_text(t);
}

static void choose_view(Tui *t, ExploreView v) {
    if (v != VIEW_DIFF)
        t->diff_base = v;
    if (t->pane == PANE_VIEW && t->view == v)
        return;
    t->view = v;
    t->pane = PANE_VIEW;
    t->stale = true;
    t->top = t->hscroll = t->line = 0;
    t->nback = 0;
}

/* ---- drawing ------------------------------------------------------------------- */

static attr_t color(const Tui *t, int pair, attr_t fallback) {
    return t->colors ? COLOR_PAIR(pair) : fallback;
}

static int left_width(void) {
    return COLS / 3 < 30 ? COLS / 3 : 30;
}

static int pane_rows(void) {
    return LINES - 2; /* the tab line above, the status line below */
}

static void draw_step(Tui *t, int k, int row, int width) {
    const Step *st = explore_step(&t->e, k);
    bool current = k == explore_current(&t->e);
    char name[64], line[128];
    session_step_label(t->e.s, k, name, sizeof name); /* "cse#2": which run */
    char change[32];
    if (st->failed)
        snprintf(change, sizeof change, "FAIL");
    else if (k == 0)
        change[0] = 0;
    else if (!st->changed)
        snprintf(change, sizeof change, ".");
    else
        snprintf(change, sizeof change, "+%d-%d", st->lines_added, st->lines_removed);
    int name_w = width - 5 - (int)strlen(change) - 1;
    if (name_w < 4)
        name_w = 4;
    snprintf(line, sizeof line, "%c%3d %-*.*s %s", current ? '>' : k == t->mark ? '*' : ' ', k,
             name_w, name_w, name, change);
    attr_t a = A_NORMAL;
    if (!st->changed && !st->failed)
        a |= color(t, COLOR_DIM, A_DIM);
    if (st->failed)
        a |= color(t, COLOR_REMOVED, A_BOLD);
    if (current)
        a |= A_BOLD;
    if (k == t->cursor)
        a |= A_REVERSE;
    attron(a);
    mvaddnstr(row, 0, line, width);
    for (int x = (int)strlen(line); x < width; x++)
        addch(' ');
    attroff(a);
}

/* u hides the steps that changed nothing, but never the import, the
 * current step, the marked one or the cursor's. */
static bool step_hidden(const Tui *t, int k) {
    const Step *st = explore_step(&t->e, k);
    return t->hide_unchanged && k > 0 && st && !st->changed && !st->failed &&
           k != explore_current(&t->e) && k != t->mark && k != t->cursor;
}

/* The steps the list shows, in order; returns how many. */
static int shown_steps(const Tui *t, int *shown) {
    int n = 0;
    for (int k = 0; k < explore_nsteps(&t->e); k++)
        if (!step_hidden(t, k))
            shown[n++] = k;
    return n;
}

static void draw_steps(Tui *t) {
    int width = left_width(), rows = pane_rows() + 1;
    int *shown = malloc(((size_t)explore_nsteps(&t->e) + 1) * sizeof *shown);
    int n = shown_steps(t, shown), at = 0;
    while (at < n && shown[at] != t->cursor)
        at++;
    if (at < t->list_top)
        t->list_top = at;
    if (at >= t->list_top + rows)
        t->list_top = at - rows + 1;
    /* No blank rows below the last step while earlier ones are hidden (the
     * window grew). */
    if (t->list_top > n - rows)
        t->list_top = n - rows > 0 ? n - rows : 0;
    if (!n) {
        attron(A_DIM);
        mvaddnstr(0, 0, " no steps", width);
        attroff(A_DIM);
    }
    for (int r = !n; r < rows; r++) {
        int i = t->list_top + r;
        if (i < n)
            draw_step(t, shown[i], r, width);
        else
            mvhline(r, 0, ' ', width);
    }
    free(shown);
    mvvline(0, width, ACS_VLINE, rows);
}

static attr_t line_attr(const Tui *t, const char *line) {
    bool diff = t->pane == PANE_VIEW && t->view == VIEW_DIFF;
    if (diff && (!strncmp(line, "+++", 3) || !strncmp(line, "---", 3)))
        return A_BOLD;
    if (diff && line[0] == '+')
        return color(t, COLOR_ADDED, A_BOLD);
    if (diff && line[0] == '-')
        return color(t, COLOR_REMOVED, A_UNDERLINE);
    if (diff && line[0] == '@')
        return color(t, COLOR_HUNK, A_DIM);
    if (!strncmp(line, ">>>", 3) || strstr(line, "BEYOND TOLERANCE") ||
        strstr(line, " BEYOND ") || !strncmp(line, "FIRST BAD", 9))
        return color(t, COLOR_REMOVED, A_BOLD);
    return A_NORMAL;
}

/* ---- %refs in a line, and where they are defined -------------------------------- */

/* A %ref as the printers write it: %id, %label, %"quoted label", each
 * maybe with a result index (#k), which names the same definition. */
typedef struct Ref {
    int at, len;     /* in the line, '%' included */
    int name_len;    /* without the #k */
} Ref;

enum { MAX_REFS = 64 };

static int refs_of(const char *line, Ref *refs) {
    int n = 0;
    for (const char *p = line; *p && n < MAX_REFS; p++) {
        if (*p != '%')
            continue;
        const char *q = p + 1;
        if (*q == '"') {
            for (q++; *q && *q != '"'; q++)
                q += q[0] == '\\' && q[1];
            if (*q != '"')
                break;
            q++;
        } else {
            while (isalnum((unsigned char)*q) || *q == '_' || *q == '.')
                q++;
        }
        if (q == p + 1)
            continue;
        const char *name_end = q;
        if (*q == '#' && isdigit((unsigned char)q[1]))
            for (q++; isdigit((unsigned char)*q); q++)
                ;
        refs[n++] = (Ref){(int)(p - line), (int)(q - p), (int)(name_end - p)};
        p = q - 1;
    }
    return n;
}

/* Does `line` define the value `ref` (its first name_len bytes) names:
 * "%x = ..." in a graph or a program, or a parameter of "func @main(%x: ...". */
static bool defines(const char *line, const char *ref, int len) {
    const char *p = line + strspn(line, " ");
    if (!strncmp(p, ref, (size_t)len) && (!strncmp(p + len, " =", 2) || p[len] == ','))
        return true;
    if (strncmp(p, "func ", 5))
        return false;
    const char *end = p + strlen(p);
    for (const char *q = memmem(p, (size_t)(end - p), ref, (size_t)len); q;
         q = memmem(q + 1, (size_t)(end - q - 1), ref, (size_t)len))
        if (q[len] == ':' && (q[-1] == '(' || q[-1] == ' '))
            return true;
    return false;
}

/* The %ref Enter follows on a line: the chosen one, else the first the
 * line does not define (the first operand), else the first. -1: none. */
static int chosen_ref(const Tui *t, const char *line, const Ref *refs, int n) {
    if (!n)
        return -1;
    if (t->ref >= 0)
        return t->ref % n;
    for (int i = 0; i < n; i++)
        if (!defines(line, line + refs[i].at, refs[i].name_len))
            return i;
    return 0;
}

static bool jump_view(const Tui *t) {
    return t->pane == PANE_VIEW && (t->view == VIEW_GRAPH || t->view == VIEW_LIR);
}

/* ---- drawing a line ------------------------------------------------------------------ */

/* The line from column hscroll, with the search pattern's matches marked;
 * `hl` (length hl_len, a position in the line) drawn as the %ref Enter
 * follows, `extra` added to every character (the line cursor). */
static void draw_text(Tui *t, int row, int x0, int width, const char *line, int hl, int hl_len,
                      attr_t extra) {
    size_t len = strlen(line);
    const char *s = (size_t)t->hscroll < len ? line + t->hscroll : "";
    attr_t base = line_attr(t, line) | extra;
    attr_t mark = color(t, COLOR_MATCH, A_REVERSE);
    attr_t token = color(t, COLOR_MATCH, A_UNDERLINE) | A_BOLD;
    size_t plen = strlen(t->search);
    move(row, x0);
    int col = 0;
    while (*s && col < width) {
        const char *m = plen ? strstr(s, t->search) : NULL;
        int pos = (int)(s - line);
        int n = m ? (int)(m - s) : (int)strlen(s);
        bool in_hl = hl >= 0 && pos >= hl && pos < hl + hl_len;
        if (in_hl)
            n = hl + hl_len - pos; /* the %ref first, whole */
        else if (hl >= pos && hl - pos < n)
            n = hl - pos;
        if (m && m < s + n)
            n = (int)(m - s);
        if (!n) { /* a match starts here */
            n = (int)plen;
            in_hl = false;
        }
        n = n < width - col ? n : width - col;
        attr_t a = in_hl ? token : (m == s && plen) ? mark : base;
        attron(a);
        addnstr(s, n);
        attroff(a);
        col += n;
        s += n;
    }
    if (extra) {
        attron(extra);
        for (; col < width; col++)
            addch(' ');
        attroff(extra);
    }
    /* At the last column the cursor has wrapped: clearing would wipe the
     * next row's step list. */
    if (col < width)
        clrtoeol();
}

/* A line with a marker where it is cut: '<' over the first column when
 * text is hidden to the left, '>' over the last when it goes on past the
 * right edge (as vim's listchars precedes/extends), so that two lines that
 * differ only out of view do not look alike. */
static void draw_line(Tui *t, int row, int x0, int width, int i) {
    const char *line = t->lines[i];
    bool cursor = jump_view(t) && i == t->line;
    int hl = -1, hl_len = 0;
    if (cursor) {
        Ref refs[MAX_REFS];
        int n = refs_of(line, refs);
        int k = chosen_ref(t, line, refs, n);
        if (k >= 0) {
            hl = refs[k].at;
            hl_len = refs[k].len;
        }
    }
    draw_text(t, row, x0, width, line, hl, hl_len, cursor ? A_REVERSE : A_NORMAL);
    int len = (int)strlen(line);
    attr_t a = color(t, COLOR_HUNK, A_BOLD) | A_REVERSE;
    if (t->hscroll > 0 && len > 0)
        mvaddch(row, x0, '<' | a);
    if (len > t->hscroll + width && width > 1)
        mvaddch(row, x0 + width - 1, '>' | a);
}

static void draw_tabs(Tui *t, int x0, int width) {
    move(0, x0);
    clrtoeol();
    int col = 0;
    for (int v = 0; v < VIEW_COUNT && col < width; v++) {
        char tab[24];
        snprintf(tab, sizeof tab, "%s%d %s", v ? " " : "", v + 1, explore_view_name((ExploreView)v));
        bool on = t->pane == PANE_VIEW && t->view == (ExploreView)v;
        attr_t a = on ? (color(t, COLOR_TAB, A_REVERSE) | A_BOLD) : A_NORMAL;
        attron(a);
        addnstr(tab, width - col);
        attroff(a);
        col += (int)strlen(tab);
    }
    if (t->pane == PANE_OUTPUT && col < width) {
        attron(A_BOLD);
        addnstr(" | ", width - col);
        addnstr(t->output_title, width - col - 3);
        attroff(A_BOLD);
    }
}

/* In the diff view, the changed part of an edited line, in reverse video
 * over the line's own colour. */
static void highlight_change(Tui *t, int row, int x0, int width, int i) {
    if (t->pane != PANE_VIEW || t->view != VIEW_DIFF)
        return;
    if (!t->partner)
        t->partner = explore_diff_partners(t->lines, t->nlines);
    TextSpan sp;
    int j = t->partner[i];
    if (j < 0 || !explore_changed_span(t->lines[i], t->lines[j], &sp) || sp.start == sp.end)
        return;
    int from = (int)sp.start - t->hscroll, to = (int)sp.end - t->hscroll;
    if (from < (t->hscroll > 0))
        from = t->hscroll > 0; /* the first column marks text cut on the left */
    if (to > width - 1)
        to = width - 1; /* the last column may mark a cut line */
    if (to <= from)
        return;
    bool removed = t->lines[i][0] == '-';
    attr_t a = (t->colors ? 0 : removed ? A_UNDERLINE : A_BOLD) | A_REVERSE | A_BOLD;
    mvchgat(row, x0 + from, to - from, a, t->colors ? (removed ? COLOR_REMOVED : COLOR_ADDED) : 0,
            NULL);
}

static void draw_main(Tui *t) {
    int x0 = left_width() + 1, width = COLS - x0, rows = pane_rows();
    draw_tabs(t, x0, width);
    for (int r = 0; r < rows; r++) {
        int i = t->top + r;
        if (i < t->nlines) {
            draw_line(t, r + 1, x0, width, i);
            highlight_change(t, r + 1, x0, width, i);
        } else {
            move(r + 1, x0);
            clrtoeol();
        }
    }
}

/* The bottom line, reversed (or in the status colour), padded to the width. */
static void draw_status_line(const Tui *t, const StrBuf *sb) {
    attr_t a = color(t, COLOR_STATUS, A_REVERSE);
    attron(a);
    mvaddnstr(LINES - 1, 0, sb_str(sb), COLS);
    for (int x = (int)sb->len; x < COLS; x++)
        addch(' ');
    attroff(a);
}

static void draw_status(Tui *t) {
    StrBuf where, sb;
    sb_init(&where);
    sb_init(&sb);
    explore_where(&t->e, &where);
    const char *model = t->e.model ? t->e.model : "no model";
    const char *slash = strrchr(model, '/');
    sb_printf(&sb, " %s | %s | %s", slash ? slash + 1 : model, sb_str(&where),
              t->pane == PANE_OUTPUT ? t->output_title : explore_view_name(t->view));
    if (t->nlines > pane_rows()) {
        int pct = (t->top + pane_rows()) * 100 / t->nlines;
        sb_printf(&sb, " %d%%", pct > 100 ? 100 : pct);
    }
    if (t->hscroll)
        sb_printf(&sb, " col %d", t->hscroll + 1);
    if (t->message[0]) {
        /* Too narrow for it all: the step and the message, which says what
         * just happened, before the model and the view. */
        if ((int)(sb.len + 3 + strlen(t->message)) > COLS) {
            sb_clear(&sb);
            sb_printf(&sb, " %s", sb_str(&where));
        }
        sb_printf(&sb, " | %s", t->message);
    }
    draw_status_line(t, &sb);
    sb_free(&sb);
    sb_free(&where);
}

static void scroll_to(Tui *t, int top) {
    int max = t->nlines - pane_rows();
    t->top = top > max ? max : top;
    if (t->top < 0)
        t->top = 0;
}

static void draw(Tui *t) {
    refresh_text(t);
    scroll_to(t, t->top); /* the window may have grown past the text's end */
    erase();
    if (LINES < 5 || COLS < 20) {
        mvaddnstr(0, 0, "terminal too small", COLS);
        refresh();
        return;
    }
    draw_steps(t);
    draw_main(t);
    draw_status(t);
    refresh();
}

/* ---- long operations -------------------------------------------------------------- */

/* Loading a model, running it or laying out a picture of it takes seconds
 * on a large one. It runs in a thread of its own while this one keeps the
 * terminal: the status line counts the seconds, and SIGINT or SIGTERM end
 * the program at once, terminal restored, instead of after the work. While
 * it runs the screen is drawn only from what the work does not change (the
 * status line; loading, which makes the session, has a screen of its own). */
typedef struct Job {
    void (*run)(void *arg);
    void *arg;
    atomic_bool done;
} Job;

static double seconds_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *job_main(void *p) {
    Job *job = p;
    sigset_t set; /* signals go to the thread that keeps the terminal */
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGWINCH);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    job->run(job->arg);
    atomic_store(&job->done, true);
    return NULL;
}

/* After a signal: the terminal back as it was, and the signal's own end. */
static void leave_on_signal(Tui *t) {
    if (!term_signal_caught())
        return;
    endwin();
    term_signal_finish(&t->signals); /* re-raises: does not return */
    _exit(1);
}

static void draw_loading(const Tui *t, const char *model, double seconds);

/* What the screen shows meanwhile: the status line with the seconds, the
 * loading screen, or (a command that may replace the session itself) only
 * the command and the seconds, touching nothing of the explorer. */
typedef enum { BUSY_STATUS, BUSY_LOADING, BUSY_BLIND } BusyShow;

static void draw_blind(const Tui *t, const char *what, double seconds) {
    StrBuf sb;
    sb_init(&sb);
    sb_printf(&sb, " %s ... %.0f s", what, seconds);
    draw_status_line(t, &sb);
    sb_free(&sb);
    refresh();
}

static void busy(Tui *t, const char *what, BusyShow show, void (*run)(void *), void *arg) {
    Job job = {run, arg, false};
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, (size_t)64 << 20); /* no shallower than the main thread's */
    pthread_t thread;
    bool started = pthread_create(&thread, &attr, job_main, &job) == 0;
    pthread_attr_destroy(&attr);
    if (!started) {
        run(arg);
        return;
    }
    double t0 = seconds_now();
    while (!atomic_load(&job.done)) {
        double spent = seconds_now() - t0;
        if (show == BUSY_LOADING) {
            draw_loading(t, what, spent);
        } else if (show == BUSY_BLIND) {
            draw_blind(t, what, spent);
        } else {
            set_message(t, "%s ... %.0f s", what, spent);
            draw_status(t);
            refresh();
        }
        getch(); /* keys pressed meanwhile are dropped; a resize is redrawn after */
        leave_on_signal(t);
    }
    pthread_join(thread, NULL);
}

/* ---- commands -------------------------------------------------------------------- */

static void select_step(Tui *t, int k) {
    explore_set_current(&t->e, k);
    t->cursor = explore_current(&t->e);
    if (t->pane == PANE_OUTPUT)
        t->pane = PANE_VIEW;
    t->stale = true;
    t->message[0] = 0;
}

static void move_changed(Tui *t, int dir) {
    if (!explore_move(&t->e, dir, true)) {
        set_message(t, "no %s step changed anything", dir > 0 ? "later" : "earlier");
        return;
    }
    select_step(t, explore_current(&t->e));
}

static int find_match(const Tui *t, int from, int dir) {
    for (int j = 0; j < t->nlines; j++) {
        int i = ((from + dir * j) % t->nlines + t->nlines) % t->nlines;
        if (strstr(t->lines[i], t->search))
            return i;
    }
    return -1;
}

static void goto_match(Tui *t, int from, int dir) {
    if (!t->nlines || !t->search[0])
        return;
    int i = find_match(t, from, dir);
    if (i < 0) {
        set_message(t, "'%s' not found", t->search);
        return;
    }
    t->match = i;
    t->line = i;
    t->ref = -1;
    scroll_to(t, i - pane_rows() / 3);
    int nth = 0, total = 0;
    for (int j = 0; j < t->nlines; j++) {
        if (strstr(t->lines[j], t->search)) {
            total++;
            nth += j <= i;
        }
    }
    set_message(t, "/%s: line %d, match %d of %d (n/N; Esc clears)", t->search, i + 1, nth, total);
}

/* Completes the word being typed at the end of buf (from `start`), and
 * says in `hint` what the choices are. */
typedef void (*Completer)(Tui *t, char *buf, size_t size, size_t start, char *hint,
                          size_t hint_size);

/* The word buf[start..] completed from `cands`: the one that fits, or
 * as far as all that fit agree, the rest listed in the hint. */
static void complete_from(char *buf, size_t size, size_t start, const char *const *cands,
                          int n, const char *what, bool space_after, char *hint,
                          size_t hint_size) {
    const char *word = buf + start;
    size_t wlen = strlen(word), common = 0;
    int found = 0;
    const char *first = NULL;
    StrBuf list;
    sb_init(&list);
    for (int i = 0; i < n; i++) {
        if (strncmp(cands[i], word, wlen))
            continue;
        if (!found++) {
            first = cands[i];
            common = strlen(first);
        } else {
            size_t k = 0;
            while (k < common && cands[i][k] == first[k])
                k++;
            common = k;
        }
        if (list.len < hint_size)
            sb_printf(&list, " %s", cands[i]);
    }
    if (!found) {
        snprintf(hint, hint_size, "no %s starts with '%s'", what, word);
    } else {
        if (start + common + 1 < size) {
            memcpy(buf + start, first, common);
            buf[start + common] = 0;
            if (found == 1 && space_after && start + common + 2 < size)
                strcat(buf, " ");
        }
        if (found > 1)
            snprintf(hint, hint_size, "%d %ss:%s", found, what, sb_str(&list));
        else
            hint[0] = 0;
    }
    sb_free(&list);
}

static void complete_node(Tui *t, char *buf, size_t size, size_t start, char *hint,
                          size_t hint_size) {
    int n;
    const char **names = explore_node_names(&t->e, &n);
    complete_from(buf, size, start, names, n, "node name", false, hint, hint_size);
    free(names);
}

static void complete_node_prompt(Tui *t, char *buf, size_t size, size_t start, char *hint,
                                 size_t hint_size) {
    complete_node(t, buf, size, 0, hint, hint_size);
}

/* The : line: a command's name, then what the command takes (node names
 * after node, step names after step, views after show). */
static void complete_command(Tui *t, char *buf, size_t size, size_t start, char *hint,
                             size_t hint_size) {
    size_t lead = strspn(buf, " ");
    const char *space = strchr(buf + lead, ' ');
    if (!space) {
        const char *names[64];
        int n = 0;
        for (const char *c; n < 64 && (c = repl_command_name(n));)
            names[n++] = c;
        complete_from(buf, size, lead, names, n, "command", true, hint, hint_size);
        return;
    }
    size_t word = strlen(buf);
    while (word > 0 && buf[word - 1] != ' ')
        word--;
    size_t cmd_len = (size_t)(space - (buf + lead));
    if (cmd_len == 4 && !strncmp(buf + lead, "node", 4)) {
        complete_node(t, buf, size, word, hint, hint_size);
    } else if (cmd_len == 4 && !strncmp(buf + lead, "step", 4)) {
        int n = explore_nsteps(&t->e);
        const char **names = calloc((size_t)n + 1, sizeof *names);
        for (int k = 0; k < n; k++)
            names[k] = explore_step(&t->e, k)->name;
        complete_from(buf, size, word, names, n, "step", false, hint, hint_size);
        free(names);
    } else if (cmd_len == 4 && !strncmp(buf + lead, "show", 4)) {
        const char *names[VIEW_COUNT];
        for (int v = 0; v < VIEW_COUNT; v++)
            names[v] = explore_view_name((ExploreView)v);
        complete_from(buf, size, word, names, VIEW_COUNT, "view", false, hint, hint_size);
    } else {
        snprintf(hint, hint_size, "Tab completes commands, and the names after node, step, show");
    }
}

/* Reads a line at the status line (for /, o, s and :), starting from what
 * buf holds. Tab asks `complete` (if any); its choices show on the row
 * above. With `history` (the : line), Up and Down recall earlier commands.
 * False if abandoned (Esc, a signal); an empty line is true. */
static bool prompt(Tui *t, const char *what, char *buf, size_t size, Completer complete,
                   bool history) {
    size_t len = strlen(buf);
    bool entered = false;
    int recalled = t->ncommands;
    char hint[512] = "";
    curs_set(1);
    for (;;) {
        draw(t);
        if (hint[0]) {
            attr_t h = color(t, COLOR_HUNK, A_BOLD);
            attron(h);
            mvaddnstr(LINES - 2, 0, hint, COLS);
            attroff(h);
            clrtoeol();
        }
        attr_t a = color(t, COLOR_STATUS, A_REVERSE);
        attron(a);
        /* The end of a long line in view, as a shell does. */
        int room = COLS - (int)strlen(what) - 1;
        const char *shown = (int)len > room && room > 0 ? buf + len - (size_t)room : buf;
        mvaddnstr(LINES - 1, 0, what, COLS);
        addnstr(shown, room > 0 ? room : 0);
        attroff(a);
        clrtoeol();
        refresh();
        int c = getch();
        if (term_signal_caught())
            break;
        if (c == ERR)
            continue;
        hint[0] = 0;
        if (c == 27) {
            len = 0;
            break;
        }
        if (c == '\n' || c == '\r' || c == KEY_ENTER) {
            entered = true;
            break;
        }
        if (c == '\t' && complete) {
            complete(t, buf, size, len, hint, sizeof hint);
            len = strlen(buf);
        } else if (history && (c == KEY_UP || c == KEY_DOWN)) {
            int k = recalled + (c == KEY_UP ? -1 : 1);
            if (k >= 0 && k <= t->ncommands) {
                recalled = k;
                snprintf(buf, size, "%s", k < t->ncommands ? t->commands[k] : "");
                len = strlen(buf);
            }
        } else if (c == 21) { /* Ctrl-U: the whole line away */
            len = 0;
        } else if ((c == KEY_BACKSPACE || c == 127 || c == 8) && len > 0) {
            len--;
        } else if (c >= 32 && c < 127 && len + 1 < size) {
            buf[len++] = (char)c;
        }
        buf[len] = 0;
    }
    curs_set(0);
    buf[len] = 0;
    return entered;
}

static void search(Tui *t) {
    char pattern[sizeof t->search] = "";
    if (!prompt(t, "/", pattern, sizeof pattern, complete_node_prompt, false) || !pattern[0]) {
        t->search[0] = 0;
        t->message[0] = 0;
        return;
    }
    snprintf(t->search, sizeof t->search, "%s", pattern);
    goto_match(t, t->top, 1);
}

/* An operator's history, as `node NAME` prints it: the node now, and what
 * it became down to the LLVM kernel (the generated code does not carry the
 * ONNX names, so searching the LLVM view for one finds nothing). Without a
 * name, the search pattern's. */
static void show_node(Tui *t) {
    char name[256] = "";
    if (!prompt(t, "node (name or %id; Tab completes; Enter: the search pattern): ", name,
                sizeof name, complete_node_prompt, false))
        return;
    if (!name[0] && !t->search[0]) {
        set_message(t, "no name given, and no search pattern");
        return;
    }
    if (!name[0])
        snprintf(name, sizeof name, "%s", t->search);
    StrBuf out;
    sb_init(&out);
    DiagList d;
    diag_init(&d, NULL);
    if (explore_node(&t->e, name, &out, &d))
        set_message(t, "the history of '%s'", name);
    else
        message_from_diags(t, &d);
    diag_render(&d, &out);
    show_output(t, "node", &out);
    sb_free(&out);
    diag_free(&d);
}

/* "$TMPDIR/glowc-MODEL-stepK.svg" (/tmp without TMPDIR): the default the
 * s prompt offers, out of the current directory. */
static void picture_path(const Tui *t, bool mem, char *buf, size_t size) {
    const char *model = t->e.model ? t->e.model : "model";
    const char *slash = strrchr(model, '/');
    const char *base = slash ? slash + 1 : model;
    const char *dot = strrchr(base, '.');
    int n = dot ? (int)(dot - base) : (int)strlen(base);
    const char *dir = getenv("TMPDIR");
    if (!dir || !dir[0])
        dir = "/tmp";
    size_t dlen = strlen(dir);
    while (dlen > 1 && dir[dlen - 1] == '/')
        dlen--;
    snprintf(buf, size, "%.*s/glowc-%.*s-step%d%s.svg", (int)dlen, dir, n, base,
             explore_current(&t->e), mem ? "-mem" : "");
}

typedef struct PictureJob {
    const Explorer *e;
    const char *path;
    bool mem, ok;
    StrBuf out;
    DiagList d;
} PictureJob;

static void picture_job(void *arg) {
    PictureJob *j = arg;
    j->ok = explore_write_picture(j->e, j->path, j->mem, &j->out, &j->d);
}

static void write_svg(Tui *t) {
    bool mem = t->pane == PANE_VIEW && t->view == VIEW_MEM;
    char path[512], what[600];
    picture_path(t, mem, path, sizeof path);
    if (!prompt(t, mem ? "write the memory map (SVG) to: " : "write SVG (.svg .png .dot) to: ",
                path, sizeof path, NULL, false) ||
        !path[0]) {
        set_message(t, "nothing written");
        return;
    }
    snprintf(what, sizeof what, "writing %s", path);
    set_message(t, "%s ...", what);
    draw(t);
    PictureJob j = {.e = &t->e, .path = path, .mem = mem};
    sb_init(&j.out);
    diag_init(&j.d, NULL);
    busy(t, what, BUSY_STATUS, picture_job, &j);
    char cwd[400];
    if (j.ok && path[0] != '/' && getcwd(cwd, sizeof cwd))
        set_message(t, "wrote %s/%s", cwd, path);
    else if (j.ok)
        set_message(t, "wrote %s", path);
    else {
        message_from_diags(t, &j.d);
    }
    diag_free(&j.d);
    sb_free(&j.out);
}

/* The summary a command ends its output with. */
static void last_line_message(Tui *t, const char *text) {
    size_t len = strlen(text);
    while (len && text[len - 1] == '\n')
        len--;
    size_t start = len;
    while (start && text[start - 1] != '\n')
        start--;
    set_message(t, "%.*s", (int)(len - start), text + start);
}

typedef bool (*RunFn)(const Explorer *e, char *const *inputs, int n, StrBuf *out, DiagList *d);

/* The summary a command ends its output with; for a comparison, the
 * first value beyond tolerance first, since the status line may be short. */
static void summary_message(Tui *t, const char *text) {
    const char *first = strstr(text, "; the first is ");
    int n, bad;
    const char *line = first ? first : text;
    while (line > text && line[-1] != '\n')
        line--;
    if (first && sscanf(line, "%d values compared, %d beyond tolerance", &n, &bad) == 2) {
        first += strlen("; the first is ");
        set_message(t, "first beyond tolerance: %.*s (%d of %d values)",
                    (int)strcspn(first, "\n"), first, bad, n);
        return;
    }
    last_line_message(t, text);
}

typedef struct RunJob {
    Explorer *e;
    RunFn fn;
    StrBuf out;
    DiagList d;
    bool ok;
} RunJob;

static void run_job(void *arg) {
    RunJob *j = arg;
    j->ok = j->fn(j->e, NULL, 0, &j->out, &j->d);
}

static void run_command(Tui *t, RunFn fn, const char *title) {
    set_message(t, "%s ...", title);
    draw(t);
    RunJob j = {.e = &t->e, .fn = fn};
    sb_init(&j.out);
    diag_init(&j.d, NULL);
    busy(t, title, BUSY_STATUS, run_job, &j);
    if (!j.ok) {
        diag_render(&j.d, &j.out);
        message_from_diags(t, &j.d);
    } else {
        const char *p = strstr(sb_str(&j.out), "max abs diff from step 0:");
        if (p)
            set_message(t, "%.*s", (int)strcspn(p, "\n"), p);
        else
            summary_message(t, sb_str(&j.out));
    }
    show_output(t, title, &j.out);
    sb_free(&j.out);
    diag_free(&j.d);
}

/* ---- the : command line ---------------------------------------------------------- */

typedef struct CommandJob {
    Explorer *e;
    char *line;
    StrBuf out;
    DiagList d;
    bool ok, quit;
} CommandJob;

static void command_job(void *arg) {
    CommandJob *j = arg;
    j->ok = repl_execute(j->e, j->line, &j->out, &j->d, &j->quit);
}

static int count_text_lines(const char *s) {
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

/* A REPL command, through the REPL's own dispatcher. It may load another
 * model or pipeline (the session is replaced), so it runs blind: the
 * screen shows only the command until it is done. A one-line answer goes
 * to the status line, anything longer into the pane. */
static void command_line(Tui *t) {
    char line[1024] = "";
    if (!prompt(t, ":", line, sizeof line, complete_command, true) || !line[strspn(line, " ")])
        return;
    enum { KEEP = sizeof t->commands / sizeof t->commands[0] };
    if (t->ncommands == KEEP) {
        free(t->commands[0]);
        memmove(t->commands, t->commands + 1, (KEEP - 1) * sizeof t->commands[0]);
        t->ncommands--;
    }
    t->commands[t->ncommands++] = strdup(line);
    char title[64];
    snprintf(title, sizeof title, ":%.40s%s", line, strlen(line) > 40 ? "..." : "");
    CommandJob j = {.e = &t->e, .line = line};
    sb_init(&j.out);
    diag_init(&j.d, NULL);
    busy(t, title, BUSY_BLIND, command_job, &j);
    t->cursor = explore_current(&t->e);
    t->stale = true;
    t->shown_step = -1;
    t->quit = j.quit;
    if (!j.ok)
        message_from_diags(t, &j.d);
    if (count_text_lines(sb_str(&j.out)) > 1) {
        diag_render(&j.d, &j.out);
        if (j.ok)
            last_line_message(t, sb_str(&j.out));
        show_output(t, title, &j.out);
    } else {
        if (j.ok)
            set_message(t, "%.*s", (int)strcspn(sb_str(&j.out), "\n"),
                        j.out.len ? sb_str(&j.out) : "done");
        t->pane = PANE_VIEW;
    }
    sb_free(&j.out);
    diag_free(&j.d);
}

/* ---- following a %ref to its definition ------------------------------------------ */

static void show_line(Tui *t, int i) {
    t->line = i < 0 ? 0 : i;
    t->ref = -1;
    if (i < t->top || i >= t->top + pane_rows())
        scroll_to(t, i - pane_rows() / 3);
}

/* Enter on the current step in the graph or lir view: the line that
 * defines the %ref marked on the cursor line. */
static void follow_ref(Tui *t) {
    if (t->line < 0 || t->line >= t->nlines)
        return;
    const char *line = t->lines[t->line];
    Ref refs[MAX_REFS];
    int n = refs_of(line, refs);
    int k = chosen_ref(t, line, refs, n);
    if (k < 0) {
        set_message(t, "no %%ref on this line (J K move the line, w the %%ref on it)");
        return;
    }
    const char *ref = line + refs[k].at;
    int len = refs[k].name_len;
    for (int i = 0; i < t->nlines; i++) {
        if (!defines(t->lines[i], ref, len))
            continue;
        if (i == t->line) {
            set_message(t, "this line defines %.*s (w picks another %%ref)", len, ref);
            return;
        }
        if (t->nback == (int)(sizeof t->back / sizeof t->back[0]))
            memmove(t->back, t->back + 1, sizeof t->back - sizeof t->back[0]);
        else
            t->nback++;
        t->back[t->nback - 1] = t->line;
        show_line(t, i);
        set_message(t, "%.*s is defined on line %d (Backspace: back)", len, ref, i + 1);
        return;
    }
    set_message(t, "no line of this view defines %.*s", len, ref);
}

static void jump_back(Tui *t) {
    if (!t->nback) {
        set_message(t, "no jump to go back from");
        return;
    }
    show_line(t, t->back[--t->nback]);
    set_message(t, "back to line %d", t->line + 1);
}

static void next_ref(Tui *t) {
    if (!jump_view(t) || t->line < 0 || t->line >= t->nlines)
        return;
    Ref refs[MAX_REFS];
    const char *line = t->lines[t->line];
    int n = refs_of(line, refs);
    if (!n) {
        set_message(t, "no %%ref on this line");
        return;
    }
    t->ref = (chosen_ref(t, line, refs, n) + 1) % n;
    /* Sideways into view when the %ref is off the edge. */
    int at = refs[t->ref].at, width = COLS - left_width() - 1;
    if (at < t->hscroll || at + refs[t->ref].len >= t->hscroll + width)
        t->hscroll = at > 8 ? at - 8 : 0;
}

static void move_line(Tui *t, int delta) {
    int i = t->line + delta;
    i = i >= t->nlines ? t->nlines - 1 : i;
    show_line(t, i < 0 ? 0 : i);
    if (t->line < t->top)
        scroll_to(t, t->line);
    else if (t->line >= t->top + pane_rows())
        scroll_to(t, t->line - pane_rows() + 1);
}

/* Paging moves the line cursor along, keeping it on screen. */
static void keep_line_in_view(Tui *t) {
    if (t->line < t->top)
        t->line = t->top;
    if (t->line >= t->top + pane_rows())
        t->line = t->top + pane_rows() - 1;
    if (t->line >= t->nlines)
        t->line = t->nlines > 0 ? t->nlines - 1 : 0;
    t->ref = -1;
}

static void scroll_sideways(Tui *t, int delta) {
    int width = COLS - left_width() - 1;
    int most = t->maxlen - width + 1;
    t->hscroll += delta;
    if (t->hscroll > most)
        t->hscroll = most;
    if (t->hscroll < 0)
        t->hscroll = 0;
}

/* Narrow enough for the main pane of an 80-column terminal. */
static const char help_text[] =
    "keys\n"
    "  j k, Down Up  move the cursor in the steps\n"
    "  Enter         select the step under it\n"
    "  n p           next/previous step that changed\n"
    "  1..9          views: 1 graph  2 dot  3 lir\n"
    "                4 mem  5 llvm  6 diff  7 stats\n"
    "                8 profile (native code's time)\n"
    "                9 quant (--quantize: error by\n"
    "                value, float against int8)\n"
    "                (6 diffs the last view against\n"
    "                the previous step, or the mark;\n"
    "                changed parts of lines reversed)\n"
    "  m             mark the cursor's step for 6 to\n"
    "                diff against (m again: unmark)\n"
    "  u             hide/show steps that changed\n"
    "                nothing\n"
    "  /             search the view; n N: next and\n"
    "                previous match; Esc: stop\n"
    "  g G           top / bottom of the view\n"
    "  PgUp PgDn     a page (also b, Space)\n"
    "  J K           a line down / up (in views 1\n"
    "                and 3: the line cursor)\n"
    "  Left Right    sideways (also h l); < > half\n"
    "                a pane, 0 back to the left;\n"
    "                < and > at a line's ends mark\n"
    "                where it is cut\n"
    "  Enter         on the current step, in views\n"
    "                1 and 3: go to the definition\n"
    "                of the marked %ref on the line\n"
    "                (its first operand; w marks\n"
    "                the next); Backspace: back\n"
    "  s             write the graph as SVG, asking\n"
    "                where (in view 4: the memory\n"
    "                map); Enter accepts the path\n"
    "  :             a REPL command (load, pipeline,\n"
    "                step, show, node, svg, run,\n"
    "                compare, bisect ...; help);\n"
    "                Up Down: the ones before\n"
    "  r             run this step: outputs, and the\n"
    "                difference from step 0\n"
    "  c             compare every value with step 0\n"
    "  o             an operator's history, down to\n"
    "                its LLVM kernel (node NAME)\n"
    "  Tab           in o, / and :node, completes\n"
    "                a node name\n"
    "  ?             this help;  q  quit\n"
    "\n"
    "steps: > the current one, * the mark, +A-R\n"
    "lines added\n"
    "and removed, . no change, FAIL failed\n";

static void show_help(Tui *t) {
    StrBuf sb;
    sb_init(&sb);
    sb_append(&sb, help_text);
    show_output(t, "help", &sb);
    sb_free(&sb);
}

static void cursor_move(Tui *t, int delta) {
    int n = explore_nsteps(&t->e), k = t->cursor, dir = delta > 0 ? 1 : -1;
    for (int left = abs(delta); left > 0; left--) {
        int next = k + dir;
        while (next >= 0 && next < n && step_hidden(t, next))
            next += dir;
        if (next < 0 || next >= n)
            break;
        k = next;
    }
    t->cursor = k;
}

/* m: the cursor's step becomes the one view 6 diffs against (again: back
 * to the step before). */
static void toggle_mark(Tui *t) {
    if (!explore_nsteps(&t->e))
        return;
    t->mark = t->mark == t->cursor ? -1 : t->cursor;
    t->stale = true;
    if (t->mark < 0)
        set_message(t, "mark cleared: view 6 diffs each step against the one before");
    else
        set_message(t, "step %d marked: view 6 diffs the current step against it", t->mark);
}

static void toggle_hide_unchanged(Tui *t) {
    t->hide_unchanged = !t->hide_unchanged;
    t->list_top = 0;
    set_message(t, t->hide_unchanged ? "steps that changed nothing hidden (u shows them)"
                                     : "every step shown");
}

static bool navigation_key(Tui *t, int c) {
    int page = pane_rows() > 1 ? pane_rows() - 1 : 1;
    int half = (COLS - left_width() - 1) / 2;
    bool lines = jump_view(t);
    switch (c) {
    case 'g': case KEY_HOME: scroll_to(t, 0); t->line = 0; return true;
    case 'G': case KEY_END: scroll_to(t, t->nlines); show_line(t, t->nlines - 1); return true;
    case KEY_NPAGE: case ' ': scroll_to(t, t->top + page); keep_line_in_view(t); return true;
    case KEY_PPAGE: case 'b': scroll_to(t, t->top - page); keep_line_in_view(t); return true;
    case 'J': if (lines) move_line(t, 1); else scroll_to(t, t->top + 1); return true;
    case 'K': if (lines) move_line(t, -1); else scroll_to(t, t->top - 1); return true;
    case KEY_RIGHT: case 'l': scroll_sideways(t, 8); return true;
    case KEY_LEFT: case 'h': scroll_sideways(t, -8); return true;
    case '>': case KEY_SRIGHT: scroll_sideways(t, half); return true;
    case '<': case KEY_SLEFT: scroll_sideways(t, -half); return true;
    case '0': t->hscroll = 0; return true;
    case 'j': case KEY_DOWN: cursor_move(t, 1); return true;
    case 'k': case KEY_UP: cursor_move(t, -1); return true;
    case '\n': case '\r': case KEY_ENTER:
        if (t->cursor == explore_current(&t->e) && lines)
            follow_ref(t);
        else
            select_step(t, t->cursor);
        return true;
    case KEY_BACKSPACE: case 127: case 8: jump_back(t); return true;
    case 'w': next_ref(t); return true;
    default: return false;
    }
}

static void handle_key(Tui *t, int c) {
    if (navigation_key(t, c))
        return;
    if (c >= '1' && c < '1' + VIEW_COUNT) {
        choose_view(t, (ExploreView)(c - '1'));
        return;
    }
    switch (c) {
    case 'q': t->quit = true; return;
    case 'n':
        if (t->search[0])
            goto_match(t, t->match >= 0 ? t->match + 1 : t->top, 1);
        else
            move_changed(t, 1);
        return;
    case 'N': goto_match(t, t->match >= 0 ? t->match - 1 : t->top, -1); return;
    case 'p': move_changed(t, -1); return;
    case '/': search(t); return;
    case 27: t->search[0] = 0; t->match = -1; t->message[0] = 0; return;
    case 's': write_svg(t); return;
    case 'r': run_command(t, explore_run, "run"); return;
    case 'c': run_command(t, explore_compare, "compare"); return;
    case 'o': show_node(t); return;
    case ':': command_line(t); return;
    case 'm': toggle_mark(t); return;
    case 'u': toggle_hide_unchanged(t); return;
    case '?': show_help(t); return;
    case KEY_RESIZE: return;
    default: set_message(t, "unknown key; ? shows the keys"); return;
    }
}

/* ---- the terminal ------------------------------------------------------------------ */

/* Curses on the terminal, if it can move the cursor (TERM=dumb cannot: it
 * would get the screen as a stream of characters). Colours when it has
 * them and NO_COLOR is not set. */
static bool start_curses(Tui *t, DiagList *d) {
    setlocale(LC_ALL, "");
    const char *term = getenv("TERM");
    SCREEN *screen = newterm(NULL, stdout, stdin);
    if (!screen) {
        diag_error(d, NULL, "explore: unknown terminal type '%s' (TERM); for scripts, use "
                            "'glowc repl'",
                   term ? term : "");
        return false;
    }
    const char *cup = tigetstr("cup");
    if (!cup || cup == (const char *)-1) {
        endwin();
        delscreen(screen);
        diag_error(d, NULL, "explore: the terminal '%s' (TERM) cannot move the cursor; use one "
                            "that can, or 'glowc repl'",
                   term ? term : "");
        return false;
    }
    cbreak();
    noecho();
    keypad(stdscr, TRUE);
    curs_set(0);
    set_escdelay(25);
    timeout(250); /* wake up to notice a signal */
    const char *no_color = getenv("NO_COLOR");
    t->colors = has_colors() && !(no_color && no_color[0]);
    if (!t->colors)
        return true;
    start_color();
    use_default_colors();
    init_pair(COLOR_ADDED, COLOR_GREEN, -1);
    init_pair(COLOR_REMOVED, COLOR_RED, -1);
    init_pair(COLOR_HUNK, COLOR_CYAN, -1);
    init_pair(COLOR_MATCH, COLOR_BLACK, COLOR_YELLOW);
    init_pair(COLOR_STATUS, COLOR_BLACK, COLOR_CYAN);
    init_pair(COLOR_CURRENT, COLOR_YELLOW, -1);
    init_pair(COLOR_DIM, COLOR_BLUE, -1);
    init_pair(COLOR_TAB, COLOR_BLACK, COLOR_WHITE);
    return true;
}

/* What the screen shows while the model loads (a large one takes seconds:
 * the whole pipeline runs, down to LLVM). */
static void draw_loading(const Tui *t, const char *model, double seconds) {
    erase();
    StrBuf sb;
    sb_init(&sb);
    const char *slash = strrchr(model, '/');
    sb_printf(&sb, " loading %s: the import and every step ... %.0f s", slash ? slash + 1 : model,
              seconds);
    draw_status_line(t, &sb);
    sb_free(&sb);
    refresh();
}

static void loop(Tui *t) {
    while (!t->quit && !term_signal_caught()) {
        draw(t);
        int c = getch();
        if (c == ERR)
            continue;
        handle_key(t, c);
    }
}

/* The bundled model: in the current directory, or beside the binary. */
static char *default_model(void) {
    if (!access(DEFAULT_MODEL, R_OK))
        return strdup(DEFAULT_MODEL);
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = 0;
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = 0;
            StrBuf sb;
            sb_init(&sb);
            sb_printf(&sb, "%s/../%s", exe, DEFAULT_MODEL);
            if (!access(sb_str(&sb), R_OK))
                return sb_take(&sb);
            sb_free(&sb);
        }
    }
    return strdup(DEFAULT_MODEL);
}

typedef struct LoadJob {
    Explorer *e;
    const char *model;
    StrBuf out;
    DiagList d;
} LoadJob;

static void load_job(void *arg) {
    LoadJob *j = arg;
    explore_load(j->e, j->model, &j->out, &j->d);
}

static int explore(CommonArgs *ca, DiagList *d) {
    Tui t = {0};
    if (!start_curses(&t, d))
        return 1;
    term_signal_install(&t.signals, true); /* replacing ncurses' own */
    explore_init(&t.e, ca, ca->pipeline);
    sb_init(&t.text);
    t.shown_step = -1;
    t.mark = -1;
    t.match = -1;
    t.stale = true;
    char *model = ca->model ? strdup(ca->model) : default_model();
    LoadJob j = {.e = &t.e, .model = model};
    sb_init(&j.out);
    diag_init(&j.d, NULL);
    busy(&t, model, BUSY_LOADING, load_job, &j);
    if (!t.e.s && !ca->model)
        set_message(&t, "no model given, and the bundled %s did not load", DEFAULT_MODEL);
    else if (diag_has_errors(&j.d))
        message_from_diags(&t, &j.d);
    else
        set_message(&t, "? shows the keys");
    sb_free(&j.out);
    diag_free(&j.d);
    free(model);
    loop(&t);
    endwin();
    term_signal_finish(&t.signals); /* re-raises a caught signal, terminal restored */
    free_lines(&t);
    sb_free(&t.text);
    free(t.output_title);
    for (int i = 0; i < t.ncommands; i++)
        free(t.commands[i]);
    explore_free(&t.e);
    return 0;
}

int cmd_explore(int argc, char **argv) {
    DiagList d;
    diag_init(&d, NULL);
    CommonArgs ca = {0};
    int status = 1;
    if (!args_parse(&ca, argc, argv, "explore", NULL, NULL, &d))
        goto done;
    if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
        diag_error(&d, NULL, "explore needs a terminal (for scripts, use 'glowc repl')");
        goto done;
    }
    status = explore(&ca, &d);
done:
    cli_report(&d);
    args_free(&ca);
    diag_free(&d);
    return status;
}
