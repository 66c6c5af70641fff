/* The explorer's core: sessions, steps, views, runs, comparisons and node
 * histories as text, for the REPL and the TUI alike. */
#include "tui/explore_core.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "core/lir_print.h"
#include "core/print.h"
#include "core/textdiff.h"
#include "dot/memmap.h"
#include "tui/profile.h"
#include "tui/quant_report.h"

/* The LLVM IR a step carries: the CPU backend's code generation and LLVM
 * optimisation steps keep it. */
static const char *step_llvm_text(const Step *st) {
    return st->llvm_text;
}

/* A step that holds the low-level program rather than a graph. */
static bool step_is_lir(const Step *st) {
    return !st->graph && (st->lir || (st->lir_text && !st->text) || st->level == PASS_LIR);
}

static void render_diags(const DiagList *d, char **out) {
    StrBuf sb;
    sb_init(&sb);
    diag_render(d, &sb);
    free(*out);
    *out = sb_take(&sb);
}

/* ---- session ------------------------------------------------------------------- */

void explore_init(Explorer *e, CommonArgs *args, const char *pipeline) {
    memset(e, 0, sizeof *e);
    e->args = args;
    /* The explorer shows every level down to LLVM IR: the CPU backend unless
     * asked otherwise, with the interpreter's kernels for what it lacks. */
    if (!args->backend) {
        args->backend = backend_compiling()->name;
        args->fallback = true;
    }
    e->pipeline = strdup(pipeline ? pipeline : "-O2");
    e->tol = (Tolerance){.rtol = 1e-3};
    e->dot = dot_context_new();
}

void explore_free(Explorer *e) {
    session_free(e->s);
    free(e->model);
    free(e->pipeline);
    free(e->error);
    dot_context_free(e->dot);
    memset(e, 0, sizeof *e);
}

/* The session's diagnostics move to d (so they are reported once). */
static void take_diags(Explorer *e, DiagList *d) {
    diag_append(d, &e->s->diags);
    diag_clear(&e->s->diags);
}

/* A pipeline that allocates goes on to code generation and LLVM's
 * optimisation when the backend compiles, so that every level is in view. */
static bool wants_codegen(const Session *s) {
    if (!s->opt.backend || !s->opt.backend->compiles)
        return false;
    return session_pipeline_plans(s);
}

static bool run_pipeline(Explorer *e, const char *spec, StrBuf *out, DiagList *d) {
    Session *s = e->s;
    if (!session_set_pipeline(s, spec)) {
        take_diags(e, d);
        return false;
    }
    if (spec != e->pipeline) {
        free(e->pipeline);
        e->pipeline = strdup(spec);
    }
    bool ok = (!wants_codegen(s) || session_want_codegen(s)) &&
              (!s->opt.backend->runs_lir || session_want_lir(s)) && session_run(s);
    s->current = 0;
    sb_printf(out, "%s: %d steps (%s)", s->path, s->nsteps, spec[0] ? spec : "no passes");
    const Step *last = &s->steps[s->nsteps - 1];
    if (last->failed)
        sb_printf(out, "; step %d (%s) failed", s->nsteps - 1, last->name);
    sb_putc(out, '\n');
    if (!ok) {
        DiagList mine;
        diag_init(&mine, NULL);
        diag_append(&mine, &s->diags);
        render_diags(&mine, &e->error);
        diag_free(&mine);
    }
    take_diags(e, d);
    return ok;
}

bool explore_load(Explorer *e, const char *path, StrBuf *out, DiagList *d) {
    session_free(e->s);
    e->s = NULL;
    free(e->model);
    e->model = strdup(path);
    free(e->error);
    e->error = NULL;
    SessionOptions so = args_session_options(e->args, NULL);
    Session *s = session_open(path, &so);
    if (!s->work && !s->lir) {
        if (!diag_has_errors(&s->diags))
            diag_error(&s->diags, NULL, "'%s' holds no model", path);
        render_diags(&s->diags, &e->error);
        diag_append(d, &s->diags);
        session_free(s);
        return false;
    }
    e->s = s;
    return run_pipeline(e, e->pipeline, out, d);
}

static bool need_session(const Explorer *e, DiagList *d) {
    if (e->s)
        return true;
    if (e->model)
        diag_error(d, NULL, "no model: '%s' did not load (see above)", e->model);
    else
        diag_error(d, NULL, "no model loaded (use: load FILE)");
    return false;
}

bool explore_set_pipeline(Explorer *e, const char *spec, StrBuf *out, DiagList *d) {
    if (!need_session(e, d))
        return false;
    return run_pipeline(e, spec, out, d);
}

/* ---- steps --------------------------------------------------------------------- */

int explore_nsteps(const Explorer *e) {
    return e->s ? e->s->nsteps : 0;
}

int explore_current(const Explorer *e) {
    return e->s ? e->s->current : 0;
}

const Step *explore_step(const Explorer *e, int k) {
    return e->s && k >= 0 && k < e->s->nsteps ? &e->s->steps[k] : NULL;
}

void explore_set_current(Explorer *e, int k) {
    if (!e->s || !e->s->nsteps)
        return;
    e->s->current = k < 0 ? 0 : k >= e->s->nsteps ? e->s->nsteps - 1 : k;
}

static bool all_digits(const char *s) {
    if (!*s)
        return false;
    for (; *s; s++)
        if (!isdigit((unsigned char)*s))
            return false;
    return true;
}

int explore_find_step(const Explorer *e, const char *arg, const char *what, DiagList *d) {
    if (!need_session(e, d))
        return -1;
    const Session *s = e->s;
    int *ks = malloc(((size_t)session_nplanned(s) + 1) * sizeof *ks);
    int n = session_find_steps(s, arg, what, ks, d), k = n > 0 ? ks[0] : -1;
    /* A bare pass name: its next run after the current step, wrapping. */
    for (int i = 0; i < n; i++) {
        if (ks[i] > s->current && ks[i] < s->nsteps) {
            k = ks[i];
            break;
        }
    }
    free(ks);
    if (k >= s->nsteps) {
        diag_error(d, NULL, "%s %s: step %d did not run: the pipeline stopped at step %d", what,
                   arg, k, s->nsteps - 1);
        return -1;
    }
    return k;
}

bool explore_goto(Explorer *e, const char *arg, StrBuf *out, DiagList *d) {
    int k = explore_find_step(e, arg, "step", d);
    if (k < 0)
        return false;
    Session *s = e->s;
    s->current = k;
    explore_where(e, out);
    sb_putc(out, '\n');
    return true;
}

static bool step_did_something(const Step *st) {
    return st->changed || st->failed;
}

bool explore_move(Explorer *e, int delta, bool changed_only) {
    if (!e->s || !delta)
        return false;
    Session *s = e->s;
    int k = s->current, dir = delta > 0 ? 1 : -1;
    for (int left = abs(delta); left > 0; left--) {
        int next = k + dir;
        while (changed_only && next >= 0 && next < s->nsteps &&
               !step_did_something(&s->steps[next]))
            next += dir;
        if (next < 0 || next >= s->nsteps)
            break;
        k = next;
    }
    if (k == s->current)
        return false;
    s->current = k;
    return true;
}

static void change_text(const Step *st, int k, char *buf, size_t size) {
    if (st->failed)
        snprintf(buf, size, "FAILED");
    else if (k == 0)
        snprintf(buf, size, "import");
    else if (!st->changed)
        snprintf(buf, size, "-");
    else
        snprintf(buf, size, "+%d -%d", st->lines_added, st->lines_removed);
}

static void size_text(const Step *st, char *buf, size_t size) {
    if (st->failed)
        buf[0] = 0; /* its IR broke: no counts were taken */
    else if (step_is_lir(st))
        snprintf(buf, size, "%d instrs", st->ninstrs);
    else
        snprintf(buf, size, "%d nodes", st->nnodes);
}

void explore_step_brief(const Explorer *e, int k, char *buf, size_t size) {
    const Step *st = explore_step(e, k);
    if (!st) {
        snprintf(buf, size, "?");
        return;
    }
    char change[32], label[96];
    change_text(st, k, change, sizeof change);
    session_step_label(e->s, k, label, sizeof label);
    snprintf(buf, size, "%-17s %s", label, change);
}

void explore_steps(const Explorer *e, StrBuf *out) {
    if (!e->s) {
        sb_append(out, "no model loaded\n");
        return;
    }
    for (int k = 0; k < e->s->nsteps; k++) {
        const Step *st = &e->s->steps[k];
        char change[32], size[32], label[96];
        change_text(st, k, change, sizeof change);
        size_text(st, size, sizeof size);
        session_step_label(e->s, k, label, sizeof label);
        sb_printf(out, "%c %3d  %-18s %-8s %-14s %s\n", k == e->s->current ? '*' : ' ', k,
                  label, pass_level_name(st->level), change, size);
    }
}

void explore_where(const Explorer *e, StrBuf *out) {
    const Step *st = explore_step(e, explore_current(e));
    if (!st) {
        sb_append(out, "no model");
        return;
    }
    char label[96];
    session_step_label(e->s, e->s->current, label, sizeof label);
    sb_printf(out, "step %d/%d: %s", e->s->current, e->s->nsteps - 1, label);
    if (st->failed)
        sb_append(out, " (failed)");
    else if (e->s->current > 0 && !st->changed)
        sb_append(out, " (no change)");
}

/* ---- views ---------------------------------------------------------------------- */

static const char *const view_names[VIEW_COUNT] = {"graph", "dot",   "lir",     "mem",  "llvm",
                                                   "diff",  "stats", "profile", "quant"};

const char *explore_view_name(ExploreView v) {
    return v < VIEW_COUNT ? view_names[v] : "?";
}

bool explore_view_from_name(const char *name, ExploreView *out) {
    for (int v = 0; v < VIEW_COUNT; v++) {
        if (!strcmp(name, view_names[v])) {
            *out = (ExploreView)v;
            return true;
        }
    }
    return false;
}

static int first_step_with_lir(const Session *s) {
    for (int k = 0; k < s->nsteps; k++)
        if (s->steps[k].lir || s->steps[k].lir_text)
            return k;
    return -1;
}

static void view_graph(const Session *s, int k, StrBuf *out) {
    const Step *st = &s->steps[k];
    if (st->text)
        sb_append(out, st->text);
    else
        sb_append(out, "no graph at this step: the input was low-level IR\n");
}

static void view_lir(const Session *s, int k, StrBuf *out) {
    const Step *st = &s->steps[k];
    if (st->lir_text) {
        sb_append(out, st->lir_text);
        return;
    }
    int first = first_step_with_lir(s);
    if (first < 0)
        sb_append(out, "no low-level IR at this step: the pipeline does not generate it "
                       "(try: pipeline -O2)\n");
    else
        sb_printf(out, "no low-level IR at this step: it appears at step %d (%s)\n", first,
                  s->steps[first].name);
}

static void view_mem(const Session *s, int k, int width, StrBuf *out) {
    const Step *st = &s->steps[k];
    if (!st->lir || !st->lir->allocated) {
        sb_append(out, "no memory plan at this step: the low-level program is not allocated "
                       "yet\n");
        return;
    }
    MemPlan m;
    memplan_from_lir(st->lir, &m);
    int w = width > 28 ? width - 1 : 68;
    sb_printf(out, "memory plan after step %d (%s): %d buffer%s in an arena of %lld bytes\n", k,
              st->name, m.n, m.n == 1 ? "" : "s", (long long)m.arena);
    memplan_text_chart(&m, w, 12, out);
    sb_putc(out, '\n');
    memplan_table_marked(&m, out);
    memplan_free(&m);
}

/* Does the line at p define one of the model's own functions (glowc_main,
 * its workers), as opposed to the kernel library linked in beside them? */
static bool defines_model_function(const char *p, size_t len) {
    if (len < 7 || strncmp(p, "define ", 7))
        return false;
    for (size_t i = 0; i + 7 <= len; i++)
        if (!strncmp(p + i, "@glowc_", 7))
            return true;
    return false;
}

/* Calls [from, to) of the text that hold the model's functions ("define"
 * up to the closing "}" line), or the rest, into out. */
static void llvm_blocks(const char *t, bool model, StrBuf *out) {
    bool in_model = false;
    for (const char *p = t; *p;) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (defines_model_function(p, len))
            in_model = true;
        if (in_model == model)
            sb_append_n(out, p, len + (e ? 1 : 0));
        if (in_model && len == 1 && p[0] == '}') {
            in_model = false;
            if (model)
                sb_append(out, "\n");
        }
        p += len + (e ? 1 : 0);
    }
}

/* The module as LLVM prints it, but with the model's own functions first:
 * the kernel library linked in beside them is tens of thousands of lines,
 * and a person looks for the model. */
static void view_llvm(const Session *s, int k, StrBuf *out) {
    const char *t = step_llvm_text(&s->steps[k]);
    if (!t) {
        sb_append(out, "no LLVM IR at this step\n");
        return;
    }
    sb_append(out, "; the model's functions (glowc_main and its workers)\n\n");
    llvm_blocks(t, true, out);
    sb_append(out, "; the rest of the module: declarations, the kernel library (libjit), "
                   "attributes\n\n");
    llvm_blocks(t, false, out);
}

/* Node kinds by count, most frequent first (ties by name). */
static void kind_counts(const Step *st, StrBuf *out) {
    int order[NK_COUNT], n = 0;
    for (int k = 0; k < NK_COUNT; k++)
        if (st->kind_counts[k])
            order[n++] = k;
    for (int i = 1; i < n; i++) {
        for (int j = i; j > 0; j--) {
            int a = order[j - 1], b = order[j];
            bool swap = st->kind_counts[b] > st->kind_counts[a] ||
                        (st->kind_counts[b] == st->kind_counts[a] &&
                         strcmp(node_kind_name((NodeKind)b), node_kind_name((NodeKind)a)) < 0);
            if (!swap)
                break;
            order[j - 1] = b;
            order[j] = a;
        }
    }
    sb_append(out, "node kinds:");
    for (int i = 0; i < n; i++)
        sb_printf(out, "%s %s %d", i ? "," : "", node_kind_name((NodeKind)order[i]),
                  st->kind_counts[order[i]]);
    sb_putc(out, '\n');
}

static void view_stats(const Session *s, int k, StrBuf *out) {
    const Step *st = &s->steps[k];
    sb_printf(out, "step %d: %s (%s)\n", k, st->name, pass_level_name(st->level));
    if (st->failed)
        sb_append(out, "FAILED\n");
    else if (k > 0)
        sb_printf(out, "changed: %s, +%d -%d lines\n", st->changed ? "yes" : "no",
                  st->lines_added, st->lines_removed);
    if (st->text)
        sb_printf(out, "graph: %d nodes, %d constants\n", st->nnodes, st->nconsts);
    if (st->lir)
        sb_printf(out, "low-level program: %d instructions\n", st->ninstrs);
    for (int i = 0; i < st->nstats; i++)
        sb_printf(out, "  %-28s %ld\n", st->stats[i].name, st->stats[i].count);
    if (st->peak_before || st->peak_after)
        sb_printf(out, "peak live bytes: given order %lld, chosen order %lld\n",
                  (long long)st->peak_before, (long long)st->peak_after);
    if (st->one_order)
        sb_printf(out, "(the only order: every node uses the one before it)\n");
    if (st->lir && st->lir->allocated)
        sb_printf(out, "memory: arena %lld bytes, lower bound %lld bytes, naive %lld bytes\n",
                  (long long)st->arena_bytes, (long long)st->lower_bound,
                  (long long)st->naive_bytes);
    if (st->text)
        kind_counts(st, out);
    sb_printf(out, "time: %.4f s\n", st->seconds);
}

static bool step_allocated(const Step *st) {
    return st->lir && st->lir->allocated;
}

/* The view that shows what step k did: its own IR, or the memory map at
 * the step that allocates the program (the program's text changes only by
 * the offsets; the map shows the plan as a whole). */
static ExploreView own_view(const Session *s, int k) {
    const Step *st = &s->steps[k];
    if (step_llvm_text(st))
        return VIEW_LLVM;
    if (k > 0 && step_allocated(st) && !step_allocated(&s->steps[k - 1]))
        return VIEW_MEM;
    return step_is_lir(st) ? VIEW_LIR : VIEW_GRAPH;
}

static bool view_of_step(const Session *s, int k, ExploreView v, int width, StrBuf *out,
                         DiagList *d) {
    switch (v) {
    case VIEW_GRAPH: view_graph(s, k, out); return true;
    case VIEW_DOT: {
        bool lir = step_is_lir(&s->steps[k]);
        if (lir && !s->steps[k].lir) {
            sb_append(out, "no DOT at this step: it failed (see the lir view)\n");
            return true;
        }
        return explore_dot(NULL, s, k, lir, DOT_SOURCE, out, d);
    }
    case VIEW_LIR: view_lir(s, k, out); return true;
    case VIEW_MEM: view_mem(s, k, width, out); return true;
    case VIEW_LLVM: view_llvm(s, k, out); return true;
    case VIEW_STATS: view_stats(s, k, out); return true;
    case VIEW_PROFILE: sb_append(out, "(a profile is measured, not diffed)\n"); return true;
    case VIEW_QUANT: sb_append(out, "(quantization error is measured, not diffed)\n"); return true;
    case VIEW_DIFF:
    case VIEW_COUNT: break;
    }
    return false;
}

/* One side of a diff: a step without the IR the view shows counts as
 * empty, so the step that brings it shows it all as added. */
static bool diff_side(const Session *s, int k, ExploreView v, int width, StrBuf *out,
                      DiagList *d) {
    const Step *st = &s->steps[k];
    if ((v == VIEW_LIR && !st->lir_text) || (v == VIEW_LLVM && !step_llvm_text(st)) ||
        (v == VIEW_GRAPH && !st->text) || (v == VIEW_MEM && !(st->lir && st->lir->allocated)))
        return true;
    return view_of_step(s, k, v, width, out, d);
}

/* Step ka's view against step kb's (by default the view that shows what
 * kb did). */
static bool diff_between(const Session *s, int ka, int kb, ExploreView base, int width,
                         StrBuf *out, DiagList *d) {
    if (base == VIEW_DIFF || base == VIEW_COUNT)
        base = own_view(s, kb);
    StrBuf a, b;
    sb_init(&a);
    sb_init(&b);
    bool ok = diff_side(s, ka, base, width, &a, d) && diff_side(s, kb, base, width, &b, d);
    if (ok) {
        char na[160], nb[160], la[96], lb[96];
        session_step_label(s, ka, la, sizeof la);
        session_step_label(s, kb, lb, sizeof lb);
        snprintf(na, sizeof na, "step %d %s (%s)", ka, la, explore_view_name(base));
        snprintf(nb, sizeof nb, "step %d %s (%s)", kb, lb, explore_view_name(base));
        size_t before = out->len;
        textdiff_unified(sb_str(&a), sb_str(&b), na, nb, 3, out);
        if (out->len == before)
            sb_printf(out, "no change in the %s view from step %d (%s) to step %d (%s)\n",
                      explore_view_name(base), ka, la, kb, lb);
    }
    sb_free(&a);
    sb_free(&b);
    return ok;
}

static bool view_profile(const Explorer *e, StrBuf *out, DiagList *d);

/* Where quantization loses accuracy (the question "accuracy dropped: which
 * layer?"): every value of the float graph against the quantized one's,
 * worst first, and the nodes kept in float. The same table as compare
 * --quantize; it does not depend on the step. */
static bool view_quant(const Explorer *e, StrBuf *out, DiagList *d) {
    CommonArgs *ca = e->args;
    if (!ca || !ca->quant.profile) {
        sb_append(out, "no --quantize: this view compares the float graph with the quantized one "
                       "(explore MODEL --quantize=PROFILE.json; glowc profile writes one)\n");
        return true;
    }
    int q = -1;
    for (int k = 0; k < e->s->nsteps && q < 0; k++)
        if (!strcmp(e->s->steps[k].name, "quantize"))
            q = k;
    if (q >= 0)
        sb_printf(out, "the quantize pass is step %d\n", q);
    const char *kept = ca->quant.keep_float;
    sb_printf(out, "kept in float: %s%s\n", kept && *kept ? kept : "none",
              ca->keep_auto_list ? " (chosen by --keep-float=auto)" : "");
    QuantReport r;
    bool ok = quant_report_run(ca, false, &r, d);
    if (ok)
        quant_report_print(&r, ca->quantize, out);
    quant_report_free(&r);
    return ok;
}

static bool view_diff(const Session *s, int k, ExploreView base, int width, StrBuf *out,
                      DiagList *d) {
    if (k == 0) {
        sb_append(out, "step 0 is the import: there is no step before it\n");
        return true;
    }
    return diff_between(s, k - 1, k, base, width, out, d);
}

bool explore_diff_steps(const Explorer *e, int ka, int kb, ExploreView base, int width,
                        StrBuf *out, DiagList *d) {
    if (!need_session(e, d))
        return false;
    if (ka < 0 || kb < 0 || ka >= e->s->nsteps || kb >= e->s->nsteps) {
        diag_error(d, NULL, "diff: there is no step %d: the steps are 0 to %d",
                   ka < 0 || ka >= e->s->nsteps ? ka : kb, e->s->nsteps - 1);
        return false;
    }
    return diff_between(e->s, ka, kb, base, width, out, d);
}

bool explore_view(const Explorer *e, ExploreView v, ExploreView base, int width, StrBuf *out,
                  DiagList *d) {
    if (!need_session(e, d))
        return false;
    if (v == VIEW_PROFILE)
        return view_profile(e, out, d);
    if (v == VIEW_QUANT)
        return view_quant(e, out, d);
    if (v == VIEW_DIFF)
        return view_diff(e->s, e->s->current, base, width, out, d);
    return view_of_step(e->s, e->s->current, v, width, out, d);
}

/* ---- pictures ------------------------------------------------------------------- */

static void picture_title(const Session *s, int k, int shown, StrBuf *out) {
    sb_printf(out, "%s, step %d: %s", s->path, k, s->steps[k].name);
    if (shown != k)
        sb_printf(out, " (the graph of step %d: %s)", shown, s->steps[shown].name);
}

static bool dot_of_lir(DotContext *c, const Session *s, int k, DotFormat fmt, StrBuf *out,
                       DiagList *d) {
    const Step *st = &s->steps[k];
    if (!st->lir) {
        diag_error(d, NULL, "step %d (%s) has no low-level program", k, st->name);
        return false;
    }
    const LirProgram *prev = k > 0 && st->changed ? s->steps[k - 1].lir : NULL;
    StrBuf title;
    sb_init(&title);
    picture_title(s, k, k, &title);
    bool ok = dot_lir(c, st->lir, prev, sb_str(&title), fmt, out, d);
    sb_free(&title);
    return ok;
}

bool explore_dot(DotContext *c, const Session *s, int k, bool lir, DotFormat fmt, StrBuf *out,
                 DiagList *d) {
    if (lir)
        return dot_of_lir(c, s, k, fmt, out, d);
    int g = k;
    while (g >= 0 && !s->steps[g].graph)
        g--;
    if (g < 0) {
        diag_error(d, NULL, "step %d (%s) has no graph before it (the input was low-level IR)",
                   k, s->steps[k].name);
        return false;
    }
    /* Highlight what this step did, when it is a graph step that did something. */
    const Function *prev = NULL;
    if (g == k && k > 0 && s->steps[k].changed && s->steps[k - 1].graph)
        prev = s->steps[k - 1].graph->main;
    StrBuf title;
    sb_init(&title);
    picture_title(s, k, g, &title);
    bool ok = dot_graph(c, s->steps[g].graph->main, prev, sb_str(&title), fmt, out, d);
    sb_free(&title);
    return ok;
}

static bool write_mem_svg(const Explorer *e, const char *path, StrBuf *out, DiagList *d) {
    const Step *st = &e->s->steps[e->s->current];
    if (!st->lir || !st->lir->allocated) {
        diag_error(d, NULL, "no memory plan at step %d (%s): the program is not allocated yet",
                   e->s->current, st->name);
        return false;
    }
    MemPlan m;
    memplan_from_lir(st->lir, &m);
    StrBuf svg, title;
    sb_init(&svg);
    sb_init(&title);
    picture_title(e->s, e->s->current, e->s->current, &title);
    memplan_svg(&m, sb_str(&title), &svg);
    bool ok = cli_write_file(path, sb_str(&svg), svg.len, d);
    if (ok)
        sb_printf(out, "wrote %s (memory map of step %d, %d buffers)\n", path, e->s->current,
                  m.n);
    memplan_free(&m);
    sb_free(&svg);
    sb_free(&title);
    return ok;
}

bool explore_write_picture(const Explorer *e, const char *path, bool mem, StrBuf *out,
                           DiagList *d) {
    if (!need_session(e, d))
        return false;
    if (mem)
        return write_mem_svg(e, path, out, d);
    DotFormat fmt;
    if (!dot_format_from_path(path, &fmt)) {
        diag_error(d, NULL, "cannot tell the format of '%s': name it .svg, .png or .dot", path);
        return false;
    }
    int k = e->s->current;
    bool lir = step_is_lir(&e->s->steps[k]);
    StrBuf pic;
    sb_init(&pic);
    bool ok = explore_dot(e->dot, e->s, k, lir, fmt, &pic, d) &&
              cli_write_file(path, pic.data, pic.len, d);
    if (ok)
        sb_printf(out, "wrote %s (%s of step %d: %s)\n", path, lir ? "low-level program" : "graph",
                  k, e->s->steps[k].name);
    sb_free(&pic);
    return ok;
}

/* Writes a standalone executable of the model through the pipeline being
 * explored: a session of its own, since the explorer's made its LLVM module
 * for the JIT (an executable's module has main() linked in). */
bool explore_compile(const Explorer *e, const char *path, StrBuf *out, DiagList *d) {
    if (!need_session(e, d))
        return false;
    SessionOptions so = args_session_options(e->args, NULL);
    if (!so.backend || !so.backend->compiles)
        so.backend = backend_compiling();
    so.codegen.fallback = true;
    so.codegen.output = OUTPUT_EXECUTABLE;
    Session *s = session_open(e->model, &so);
    bool ok = (s->work || s->lir) && session_set_pipeline(s, e->pipeline) &&
              session_want_codegen(s) && session_run(s) && s->module &&
              s->opt.backend->write_executable(s->module, path, d);
    if (ok)
        sb_printf(out, "wrote %s\n", path);
    diag_append(d, &s->diags);
    session_free(s);
    return ok;
}

/* ---- node history --------------------------------------------------------------- */

typedef struct NameList {
    const char **v;
    int n, cap;
} NameList;

static void name_add(NameList *l, const char *name) {
    if (!name || !name[0])
        return;
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 256;
        l->v = realloc(l->v, (size_t)l->cap * sizeof *l->v);
    }
    l->v[l->n++] = name;
}

static void names_of_step(const Step *st, NameList *l) {
    if (st->graph) {
        const Function *f = st->graph->main;
        for (int i = 0; i < f->nparams; i++)
            name_add(l, f->params[i]->name);
        for (int i = 0; i < f->nconsts; i++)
            name_add(l, f->consts[i]->name);
        for (const Node *n = f->first; n; n = n->next)
            name_add(l, n->name);
    } else if (st->lir) {
        for (int b = 0; b < st->lir->nbufs; b++)
            if (!st->lir->bufs[b]->dead && st->lir->bufs[b]->kind <= LB_OUT)
                name_add(l, st->lir->bufs[b]->name);
        for (const LirInstr *i = st->lir->first; i; i = i->next)
            if (!i->dead)
                name_add(l, i->name);
    }
}

static int by_name(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

const char **explore_node_names(const Explorer *e, int *n) {
    *n = 0;
    if (!e->s || !e->s->nsteps)
        return NULL;
    NameList l = {0};
    names_of_step(&e->s->steps[0], &l);
    if (e->s->current)
        names_of_step(&e->s->steps[e->s->current], &l);
    if (!l.n)
        return l.v;
    qsort(l.v, (size_t)l.n, sizeof *l.v, by_name);
    int k = 1;
    for (int i = 1; i < l.n; i++)
        if (strcmp(l.v[i], l.v[k - 1]))
            l.v[k++] = l.v[i];
    *n = k;
    return l.v;
}

static Node *find_node(Function *f, const char *name) {
    if (name[0] == '%' && all_digits(name + 1))
        return graph_find_id(f, atoi(name + 1));
    return graph_find_name(f, name[0] == '%' ? name + 1 : name);
}

static void node_line(const Node *n, StrBuf *out) {
    PrintOptions po = PRINT_DEFAULTS;
    print_node(n, &po, out);
}

static void describe_operand(const Value *v, StrBuf *out) {
    const Node *def = v->def;
    sb_append(out, "    ");
    print_value_ref(v, out);
    sb_printf(out, "  %s ", def->kind == NK_PLACEHOLDER ? "input" : node_kind_name(def->kind));
    print_type(&v->type, out);
    if (def->name && def->name[0])
        sb_printf(out, "  \"%s\"", def->name);
    sb_putc(out, '\n');
}

static void describe_users(Function *f, const Node *n, StrBuf *out) {
    int users = 0;
    sb_append(out, "  users:\n");
    for (const Node *u = f->first; u; u = u->next) {
        for (int k = 0; k < u->nops; k++) {
            if (u->ops[k]->def != n)
                continue;
            sb_append(out, "    ");
            node_line(u, out);
            sb_putc(out, '\n');
            users++;
            break;
        }
    }
    for (int i = 0; i < f->noutputs; i++) {
        if (f->outputs[i]->def == n) {
            sb_printf(out, "    returned as output '%s'\n", f->output_names[i]);
            users++;
        }
    }
    if (!users)
        sb_append(out, "    none\n");
}

static void describe_node(Function *f, Node *n, StrBuf *out) {
    sb_append(out, "  ");
    node_line(n, out);
    sb_putc(out, '\n');
    sb_append(out, "  operands:\n");
    for (int k = 0; k < n->nops; k++)
        describe_operand(n->ops[k], out);
    if (!n->nops)
        sb_append(out, "    none\n");
    describe_users(f, n, out);
}


static bool uses(const Node *u, const Node *n) {
    for (int k = 0; k < u->nops; k++)
        if (u->ops[k]->def == n)
            return true;
    return false;
}

/* Everything step k has under provenance `name`: graph node lines
 * (inputs and constants first), or low-level weights and instructions.
 * Returns how many of the lines are inputs, constants or weights. */
static int lines_for(const Step *st, const char *name, StrBuf *out) {
    PrintOptions po = PRINT_DEFAULTS;
    int storage = 0;
    if (st->graph) {
        Function *f = st->graph->main;
        for (int pass = 0; pass < 2; pass++) {
            int n = pass ? f->nconsts : f->nparams;
            for (int i = 0; i < n; i++) {
                const Node *x = pass ? f->consts[i] : f->params[i];
                if (strcmp(x->name, name))
                    continue;
                print_node(x, &po, out);
                sb_putc(out, '\n');
                storage++;
            }
        }
        for (const Node *n = f->first; n; n = n->next) {
            if (strcmp(n->name, name))
                continue;
            print_node(n, &po, out);
            sb_putc(out, '\n');
        }
        return storage;
    }
    if (!st->lir)
        return 0;
    for (int b = 0; b < st->lir->nbufs; b++) {
        const LirBuf *w = st->lir->bufs[b];
        if (w->dead || w->kind > LB_OUT || !w->name || strcmp(w->name, name))
            continue;
        StrBuf line;
        sb_init(&line);
        lir_print_weight(w, &po, &line);
        sb_append(out, sb_str(&line) + strspn(sb_str(&line), " "));
        sb_free(&line);
        storage++;
    }
    for (const LirInstr *i = st->lir->first; i; i = i->next) {
        if (i->dead || !i->name || strcmp(i->name, name))
            continue;
        lir_print_instr(i, &po, out);
        sb_putc(out, '\n');
    }
    return storage;
}

static void indent_lines(const char *text, const char *indent, StrBuf *out) {
    for (const char *p = text; *p;) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        sb_append(out, indent);
        sb_append_n(out, p, len);
        sb_putc(out, '\n');
        p = e ? e + 1 : p + len;
    }
}

static int count_lines(const char *s) {
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

/* LLVM functions whose definition names the node (when the session no
 * longer holds the CPU module that records it per instruction). */
static void llvm_functions_for(const char *llvm, const char *name, StrBuf *out) {
    int found = 0;
    for (const char *p = llvm; *p;) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len > 7 && !strncmp(p, "define ", 7) && memmem(p, len, name, strlen(name))) {
            sb_append(out, "    ");
            sb_append_n(out, p, len);
            sb_putc(out, '\n');
            found++;
        }
        p = e ? e + 1 : p + len;
    }
    if (!found)
        sb_append(out, "    no LLVM function is named after it\n");
}

static bool is_weight(const LirProgram *p, const char *name) {
    for (int b = 0; b < p->nbufs; b++)
        if (!p->bufs[b]->dead && p->bufs[b]->kind <= LB_OUT && p->bufs[b]->name &&
            !strcmp(p->bufs[b]->name, name))
            return true;
    return false;
}

/* What the code generator made of the node's instructions: the kernel each
 * one calls (the CPU module records it by instruction index). */
static bool history_codegen(const Session *s, const char *name, StrBuf *out) {
    if (!s->module || !s->lir)
        return false;
    int index = 0, found = 0, mine = 0;
    for (const LirInstr *i = s->lir->first; i; i = i->next, index++) {
        if (i->dead || !i->name || strcmp(i->name, name))
            continue;
        mine++;
        const char *fn = s->opt.backend->instr_function(s->module, index);
        if (!fn)
            continue;
        if (!found++)
            sb_printf(out, "  LLVM functions (code generation) of '%s':\n", name);
        sb_printf(out, "    instruction %d %s calls %s", index, instr_kind_name(i->kind), fn);
        const char *worker = s->opt.backend->instr_worker(s->module, index);
        if (worker) /* a kernel, run by the thread pool */
            sb_printf(out, " in %s", worker);
        sb_putc(out, '\n');
    }
    if (!mine && is_weight(s->lir, name))
        sb_printf(out, "  LLVM: '%s' is a weight: data the generated code reads, not code\n",
                  name);
    else if (!mine)
        sb_printf(out, "  LLVM: '%s' has no instructions in the final program\n", name);
    else if (!found)
        sb_append(out, "  LLVM: none of its instructions calls a kernel (views and copies)\n");
    return true;
}

static void history_llvm(const Session *s, const char *name, StrBuf *out) {
    if (history_codegen(s, name, out))
        return;
    for (int k = s->nsteps - 1; k >= 0; k--) {
        const char *llvm = step_llvm_text(&s->steps[k]);
        if (!llvm)
            continue;
        sb_printf(out, "  LLVM IR of step %d (%s):\n", k, s->steps[k].name);
        llvm_functions_for(llvm, name, out);
        return;
    }
    sb_append(out, "  LLVM: no LLVM IR at any step (the pipeline has no code generation)\n");
}

/* What reads the value of `n` (of f) in place of it in g, the graph one
 * step later, where n is gone: through n's users that g still has (by
 * name), the node now in n's operand slot -- the convolution a fused
 * activation's users read, the survivor of a merge, a folded constant.
 * A user gone as well is followed in turn (a few levels): what replaced
 * it computes n's work too. NULL if nothing read n, or nothing maps. */
/* The first node that may use n: inputs and constants are not in the list. */
static const Node *first_user_candidate(const Function *f, const Node *n) {
    return node_is_storage(n) ? f->first : n->next;
}

static const Node *replacement(const Function *f, const Function *g, const Node *n, int depth) {
    for (const Node *u = first_user_candidate(f, n); u; u = u->next) {
        if (!u->name[0] || !uses(u, n))
            continue;
        const Node *v = graph_last_named(g, u->name);
        if (!v) {
            const Node *x = depth > 0 ? replacement(f, g, u, depth - 1) : NULL;
            if (x)
                return x;
            continue;
        }
        for (int k = 0; k < u->nops && k < v->nops; k++) {
            const Node *x = v->ops[k]->def;
            if (u->ops[k]->def == n && x->name[0] && strcmp(x->name, n->name))
                return x;
        }
    }
    for (int i = 0; i < f->noutputs && i < g->noutputs; i++) {
        const Node *x = g->outputs[i]->def;
        if (f->outputs[i]->def == n && x->name[0] && strcmp(x->name, n->name))
            return x;
    }
    return NULL;
}

/* A node of f named `name`: the last compute node, else an input or constant. */
static const Node *named_node(const Function *f, const char *name) {
    const Node *n = graph_last_named(f, name);
    for (int i = 0; !n && i < f->nconsts; i++)
        if (!strcmp(f->consts[i]->name, name))
            n = f->consts[i];
    for (int i = 0; !n && i < f->nparams; i++)
        if (!strcmp(f->params[i]->name, name))
            n = f->params[i];
    return n;
}

static bool has_users(const Function *f, const Node *n) {
    for (const Node *u = first_user_candidate(f, n); u; u = u->next)
        if (uses(u, n))
            return true;
    for (int i = 0; i < f->noutputs; i++)
        if (f->outputs[i]->def == n)
            return true;
    return false;
}

/* Why the node named `name` in `before` has no compute node in step st's
 * graph: nothing used it, or what its users read instead (*next, the name
 * history goes on to follow). `gone`: nothing at all is left of it (not
 * even a constant it was folded into). */
static void gone_reason(const Function *before, const Step *st, const char *name, bool gone,
                        StrBuf *out, const char **next) {
    *next = NULL;
    const Node *n = before ? named_node(before, name) : NULL;
    if (!n || !st->graph)
        return;
    if (!has_users(before, n)) {
        if (gone)
            sb_append(out, ": nothing used its value");
        return;
    }
    const Node *x = replacement(before, st->graph->main, n, 3);
    if (!x)
        return;
    sb_append(out, ": its users now read ");
    print_value_ref(&x->res[0], out);
    sb_printf(out, " (%s \"%s\"), followed from here",
              x->kind == NK_PLACEHOLDER ? "input" : node_kind_name(x->kind), x->name);
    *next = x->name;
}

enum { MAX_FOLLOWED = 8 };

/* What n lines of a step's history are, `storage` of them weights. */
static const char *line_noun(const Step *st, int n, int storage) {
    if (!step_is_lir(st))
        return n == 1 ? "node" : "nodes";
    if (storage == n)
        return n == 1 ? "weight" : "weights";
    return storage ? "lines" : n == 1 ? "instruction" : "instructions";
}

/* The steps where what `name` became changed, with its lines then. A node
 * that disappears into another (fused, merged, folded) is followed into
 * it, so that the history reaches the instructions and the LLVM code that
 * compute its value. */
static bool history(const Session *s, const char *name, StrBuf *out) {
    char *prev = NULL;
    bool seen = false;
    const char *following = name;
    const Function *before = NULL; /* the last graph seen */
    int followed = 0;
    sb_printf(out, "history of '%s':\n", name);
    for (int k = 0; k < s->nsteps; k++) {
        const Step *st = &s->steps[k];
        if (!st->graph && !st->lir)
            continue; /* a failed step */
        StrBuf now;
        sb_init(&now);
        int storage = lines_for(st, following, &now);
        bool same = prev && !strcmp(prev, sb_str(&now));
        if (!same && (now.len || (prev && prev[0]))) {
            bool lowered = k > 0 && step_is_lir(st) && !step_is_lir(&s->steps[k - 1]);
            int n = count_lines(sb_str(&now));
            /* No compute node of that name is left: gone, or a constant
             * under its name -- folded, or an operand of what its users
             * read now (the bias of a fused matmul-add). */
            bool computes = before && graph_last_named(before, following);
            const char *next = NULL;
            StrBuf why;
            sb_init(&why);
            if (!now.len || (st->graph && storage == n && computes))
                gone_reason(before, st, following, !now.len, &why, &next);
            const char *what = !now.len || next ? "gone"
                               : !seen          ? "appears"
                               : storage == n && computes ? "becomes a constant"
                               : lowered                  ? "becomes"
                                                          : "changed";
            sb_printf(out, "  step %d %s: ", k, st->name);
            if (following != name)
                sb_printf(out, "'%s' ", following);
            sb_append(out, what);
            if (n && !next)
                sb_printf(out, " (%d %s)", n, line_noun(st, n, storage));
            sb_append(out, sb_str(&why));
            sb_free(&why);
            sb_putc(out, '\n');
            if (next && followed++ < MAX_FOLLOWED) {
                following = next;
                sb_clear(&now);
                lines_for(st, following, &now);
            }
            indent_lines(sb_str(&now), "      ", out);
        }
        seen |= now.len > 0;
        free(prev);
        prev = sb_take(&now);
        if (st->graph)
            before = st->graph->main;
    }
    free(prev);
    history_llvm(s, following, out);
    return seen;
}

bool explore_node(const Explorer *e, const char *name, StrBuf *out, DiagList *d) {
    if (!need_session(e, d))
        return false;
    const Session *s = e->s;
    /* A low-level step describes the node in the last graph before it. */
    int g = s->current;
    while (g > 0 && !s->steps[g].graph)
        g--;
    const Step *st = &s->steps[g];
    const char *prov = name;
    Node *n = st->graph ? find_node(st->graph->main, name) : NULL;
    if (n) {
        sb_printf(out, "node '%s' at step %d (%s):\n", name, g, st->name);
        describe_node(st->graph->main, n, out);
        prov = n->name && n->name[0] ? n->name : name;
    } else if (st->graph) {
        sb_printf(out, "no node '%s' at step %d (%s)\n", name, g, st->name);
    }
    StrBuf h;
    sb_init(&h);
    bool seen = history(s, prov, &h);
    if (!seen && !n) {
        diag_error(d, NULL, "no node or instruction named '%s' at any step", name);
        sb_free(&h);
        return false;
    }
    sb_append(out, sb_str(&h));
    sb_free(&h);
    return true;
}

/* ---- running -------------------------------------------------------------------- */

typedef struct RunInputs {
    Arena *a;
    Tensor **tensors;
    bool generated[MAX_CLI_INPUTS];
} RunInputs;

static bool bind_inputs(const Explorer *e, char *const *specs, int n, RunInputs *ri,
                        DiagList *d) {
    CommonArgs ca = {0};
    bool bad = false;
    for (int i = 0; i < n && !bad; i++)
        args_common(&ca, OPT_INPUT, specs[i], &bad, d);
    ri->a = arena_new();
    ri->tensors = !bad && args_load_inputs(&ca, ri->a, d)
                      ? args_bind_inputs(&ca, e->s, ri->a, false, d)
                      : NULL;
    for (int p = 0; ri->tensors && p < session_ninputs(e->s) && p < MAX_CLI_INPUTS; p++) {
        ri->generated[p] = true;
        for (int i = 0; i < ca.ninputs; i++)
            if (!strcmp(ca.input_names[i], session_input_name(e->s, p)))
                ri->generated[p] = false;
    }
    args_free(&ca);
    return ri->tensors != NULL;
}

/* bench --per-node's table for the current step's native code, compiled
 * again with the probe, on the fixed-seed inputs: one warm-up, five runs. */
static bool view_profile(const Explorer *e, StrBuf *out, DiagList *d) {
    Session *s = e->s;
    int k = s->current;
    if (s->steps[k].level != PASS_CODEGEN) {
        sb_append(out, "the profile times native code: choose a codegen or llvm-opt step "
                       "(the cpu backend)\n");
        return true;
    }
    RunInputs ri = {0};
    const Backend *be = s->opt.backend;
    BackendExec *x = bind_inputs(e, NULL, 0, &ri, d) ? session_step_exec(s, k, true, d) : NULL;
    Profile *p = x ? profile_run(be, x, ri.tensors, 1, 5, false, d) : NULL;
    if (p) {
        double peak = be->fma_peak(x);
        sb_printf(out, "step %d (%s) on native code, %d threads, FMA peak %.1f GFLOP/s\n", k,
                  s->steps[k].name, be->threads(x), peak);
        profile_print(p, peak, 0, out);
    }
    profile_free(p);
    if (x)
        be->exec_free(x);
    arena_destroy(ri.a);
    return p != NULL;
}

static void describe_inputs(const Explorer *e, const RunInputs *ri, StrBuf *out) {
    for (int p = 0; p < session_ninputs(e->s); p++) {
        sb_printf(out, "  input '%s' ", session_input_name(e->s, p));
        print_type(session_input_type(e->s, p), out);
        sb_append(out, p < MAX_CLI_INPUTS && ri->generated[p] ? ": fixed-seed generator\n"
                                                             : ": given\n");
    }
}

static void print_values(const Tensor *t, StrBuf *out) {
    print_type(&t->type, out);
    sb_append(out, " [");
    int64_t n = tensor_numel(t), show = n < 8 ? n : 8;
    for (int64_t i = 0; i < show; i++) {
        if (i)
            sb_append(out, ", ");
        print_elem(t, i, out);
    }
    sb_append(out, n > show ? ", ...]" : "]");
}

/* The difference each element of a value may have: atol + rtol * M, M the
 * reference value's largest magnitude (explore_core.h says why). */
static double tolerance_bound(const Tolerance *tol, double scale) {
    return (tol->atol_given ? tol->atol : TOLERANCE_ATOL) + tol->rtol * scale;
}

static TensorDiff judge_value(const Tensor *got, const Tensor *want, double scale,
                              const Tolerance *tol) {
    return tensor_compare(got, want, 0, tolerance_bound(tol, scale));
}

static double max_magnitude(const Tensor *t) {
    return tensor_compare(t, t, 0, 0).max_abs_want;
}

static Tensor **run_at(const Explorer *e, int k, const RunInputs *ri, DiagList *d) {
    int n = session_noutputs(e->s);
    Tensor **outs = arena_alloc_array(ri->a, (size_t)n + 1, sizeof(Tensor *));
    return session_run_step(e->s, k, ri->tensors, outs, ri->a, d, NULL, NULL) ? outs : NULL;
}

static void describe_output_diff(const Tensor *got, const Tensor *want, const Tolerance *tol,
                                 StrBuf *out) {
    TensorDiff df = judge_value(got, want, max_magnitude(want), tol);
    if (!df.same_type) {
        sb_append(out, "    differs from step 0 in type\n");
        return;
    }
    sb_printf(out, "    max abs diff from step 0: %.3g (%s)\n", df.max_abs,
              df.ok ? "within tolerance" : "BEYOND TOLERANCE");
}

bool explore_run(const Explorer *e, char *const *inputs, int ninputs, StrBuf *out, DiagList *d) {
    if (!need_session(e, d))
        return false;
    RunInputs ri = {0};
    int k = e->s->current;
    bool ok = bind_inputs(e, inputs, ninputs, &ri, d);
    Tensor **got = ok ? run_at(e, k, &ri, d) : NULL;
    Tensor **ref = got && k > 0 ? run_at(e, 0, &ri, d) : got;
    if (ref) {
        const Step *st = &e->s->steps[k];
        sb_printf(out, "run at step %d (%s) %s\n", k, st->name,
                  session_step_is_native(e->s, k) ? "as native code (JIT)"
                  : st->graph                     ? "on the interpreter"
                                                  : "on the LIR interpreter");
        describe_inputs(e, &ri, out);
        for (int i = 0; i < session_noutputs(e->s); i++) {
            sb_printf(out, "  output '%s' ", session_output_name(e->s, i));
            print_values(got[i], out);
            sb_putc(out, '\n');
            describe_output_diff(got[i], ref[i], &e->tol, out);
        }
    }
    arena_destroy(ri.a);
    return ref != NULL;
}

/* ---- layer-by-layer comparison -------------------------------------------------- */

/* Values by (provenance name, result): a small open-addressing table. */
typedef struct Entry {
    const char *name;
    int result;
    Tensor *value;  /* the reference's (arena copy) */
    double scale;   /* its largest magnitude */
    int order;      /* the current run's record, -1 if none */
} Entry;

typedef struct Table {
    Entry *e;
    int cap, n;
} Table;

static uint64_t key_hash(const char *name, int result) {
    uint64_t h = 1469598103934665603ull ^ (uint64_t)result;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        h = (h ^ *p) * 1099511628211ull;
    return h;
}

static Entry *table_slot(Table *t, const char *name, int result) {
    if (!t->cap)
        return NULL;
    for (uint64_t i = key_hash(name, result);; i++) {
        Entry *x = &t->e[i & (uint64_t)(t->cap - 1)];
        if (!x->name || (x->result == result && !strcmp(x->name, name)))
            return x;
    }
}

static Entry *table_get(Table *t, const char *name, int result) {
    Entry *x = table_slot(t, name, result);
    return x && x->name ? x : NULL;
}

static Entry *table_put(Table *t, const char *name, int result) {
    if (2 * (t->n + 1) > t->cap) {
        Table bigger = {calloc((size_t)(t->cap ? 2 * t->cap : 64), sizeof(Entry)),
                        t->cap ? 2 * t->cap : 64, 0};
        for (int i = 0; i < t->cap; i++) {
            if (t->e[i].name) {
                *table_slot(&bigger, t->e[i].name, t->e[i].result) = t->e[i];
                bigger.n++;
            }
        }
        free(t->e);
        *t = bigger;
    }
    Entry *x = table_slot(t, name, result);
    if (!x->name) {
        *x = (Entry){.name = name, .result = result, .order = -1};
        t->n++;
    }
    return x;
}

/* One line of the comparison: a value of the current step against the
 * reference value it was matched with (`as`: a later node of the import
 * whose value it computes, when not its own). */
typedef struct Record {
    const char *name;
    int result;
    const char *as;
    Type type;
    TensorDiff diff;
    bool live;   /* a later value of the same name replaced it */
    bool output; /* one of the graph's outputs, `name` its output name */
} Record;

typedef struct Compare {
    Arena *a;
    Table ref;
    Record *rec;
    int nrec, cap;
    const Tolerance *tol;
    const Function *f0;  /* the import's graph, for chains; NULL for .lir input */
    Table wanted;        /* the names worth keeping from the reference run */
} Compare;

static void keep_reference(void *ctx, const char *name, int result, const Tensor *value) {
    Compare *c = ctx;
    if (!name || !name[0] || !table_get(&c->wanted, name, 0))
        return;
    Entry *x = table_put(&c->ref, arena_strdup(c->a, name), result);
    x->value = tensor_clone(c->a, value);
    x->scale = max_magnitude(value);
}

/* u reads n and computes a value of n's type: a pass that fuses u into n
 * (an activation into the convolution before it) leaves n computing u's
 * value, under n's name. */
static bool absorbable(const Node *u, const Node *n) {
    return u->nres == 1 && n->nres == 1 && uses(u, n) &&
           type_equal(&u->res[0].type, &n->res[0].type);
}

enum { ABSORB_HOPS = 3 };

/* The import's value, down such chains from n, that `value` matches. */
static const Entry *absorbed(Compare *c, const Node *n, const Tensor *value, int hops,
                             TensorDiff *df) {
    for (const Node *u = n->next; u && hops > 0; u = u->next) {
        if (!absorbable(u, n))
            continue;
        const Entry *y = u->name[0] ? table_get(&c->ref, u->name, 0) : NULL;
        if (y && type_equal(&y->value->type, &value->type)) {
            *df = judge_value(value, y->value, y->scale, c->tol);
            if (df->ok)
                return y;
        }
        if ((y = absorbed(c, u, value, hops - 1, df)))
            return y;
    }
    return NULL;
}

static void add_record(Compare *c, Entry *x, const Record *r) {
    if (x->order >= 0)
        c->rec[x->order].live = false;
    if (c->nrec == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 64;
        c->rec = realloc(c->rec, (size_t)c->cap * sizeof *c->rec);
    }
    x->order = c->nrec;
    c->rec[c->nrec++] = *r;
}

/* Matches a value of the current step with the import's value of the same
 * name, or failing tolerance, with the value of a node it may have absorbed
 * (up to three steps down). */
static void match_value(void *ctx, const char *name, int result, const Tensor *value) {
    Compare *c = ctx;
    if (!name || !name[0])
        return;
    Entry *x = table_get(&c->ref, name, result);
    if (!x || !type_equal(&x->value->type, &value->type))
        return;
    Record r = {x->name, result, NULL, value->type, {0}, true, false};
    r.diff = judge_value(value, x->value, x->scale, c->tol);
    const Node *n = !r.diff.ok && c->f0 && result == 0 ? graph_last_named(c->f0, name) : NULL;
    TensorDiff df;
    const Entry *y = n ? absorbed(c, n, value, ABSORB_HOPS, &df) : NULL;
    if (y) {
        r.diff = df;
        r.as = y->name;
    }
    add_record(c, x, &r);
}

static void want(Compare *c, const char *name) {
    if (name && name[0] && !table_get(&c->wanted, name, 0))
        table_put(&c->wanted, name, 0);
}

static void want_absorbable(Compare *c, const Node *n, int hops) {
    for (const Node *u = n->next; u && hops > 0; u = u->next) {
        if (absorbable(u, n)) {
            want(c, u->name);
            want_absorbable(c, u, hops - 1);
        }
    }
}

/* Keeping every value of the reference run would hold a whole model's
 * activations: only the names the current step computes, and the chains
 * match_value may follow from them, are kept. */
static void want_names_of(Compare *c, const Step *st) {
    if (st->graph) {
        for (const Node *n = st->graph->main->first; n; n = n->next)
            want(c, n->name);
    } else if (st->lir) {
        for (const LirInstr *i = st->lir->first; i; i = i->next)
            want(c, i->name);
    }
    if (!c->f0)
        return;
    int n = c->wanted.cap;
    const char **names = calloc((size_t)n + 1, sizeof *names);
    for (int i = 0; i < n; i++)
        names[i] = c->wanted.e[i].name;
    for (int i = 0; i < n; i++) {
        const Node *x = names[i] ? graph_last_named(c->f0, names[i]) : NULL;
        if (x)
            want_absorbable(c, x, ABSORB_HOPS);
    }
    free(names);
}

/* The graph's outputs as the last values of the comparison: a pass may
 * leave every named value right and still corrupt an output afterwards
 * (a low-level pass that writes the output buffer again, say). */
static void add_output_records(Compare *c, const Session *s, Tensor **got, Tensor **want) {
    for (int i = 0; i < session_noutputs(s); i++) {
        if (!got[i] || !want[i])
            continue;
        Record r = {session_output_name(s, i), 0, NULL, got[i]->type, {0}, true, true};
        r.diff = judge_value(got[i], want[i], max_magnitude(want[i]), c->tol);
        Entry x = {.order = -1};
        add_record(c, &x, &r);
    }
}

static void record_label(const Record *r, char *buf, size_t size) {
    int n = r->output ? snprintf(buf, size, "output '%s'", r->name)
                      : snprintf(buf, size, r->result ? "%s#%d" : "%s", r->name, r->result);
    if (r->as && n >= 0 && (size_t)n < size)
        snprintf(buf + n, size - (size_t)n, " (as %s)", r->as);
}

static const char *verdict(const TensorDiff *df) {
    if (df->ok)
        return "ok";
    if (!df->same_type)
        return "TYPE";
    return df->mismatches && df->max_abs == 0 ? "NAN/INF" : "BEYOND";
}

/* The short columns first and the name last, so that a narrow pane (the
 * TUI at 80 columns) still shows each value's difference and verdict. */
static void print_records(const Compare *c, StrBuf *out) {
    int first_bad = -1, shown = 0, bad = 0, name_w = 5;
    enum { NAME_W_MAX = 40 }; /* a longer name pushes only its own type out */
    char label[600], type[TYPE_STR_MAX];
    for (int i = 0; i < c->nrec; i++) {
        if (!c->rec[i].live)
            continue;
        if (!c->rec[i].diff.ok && first_bad < 0)
            first_bad = i;
        record_label(&c->rec[i], label, sizeof label);
        if ((int)strlen(label) > name_w)
            name_w = (int)strlen(label) < NAME_W_MAX ? (int)strlen(label) : NAME_W_MAX;
    }
    sb_printf(out, "%3s %4s  %-9s %-7s %-*s  %s\n", "", "#", "max diff", "verdict", name_w,
              "value", "type");
    for (int i = 0; i < c->nrec; i++) {
        const Record *r = &c->rec[i];
        if (!r->live)
            continue;
        bad += !r->diff.ok;
        record_label(r, label, sizeof label);
        char diff[32];
        snprintf(diff, sizeof diff, "%.3g", r->diff.max_abs);
        sb_printf(out, "%3s %4d  %-9s %-7s %-*s  %s\n", i == first_bad ? ">>>" : "", shown++,
                  r->diff.same_type ? diff : "-", verdict(&r->diff), name_w, label,
                  type_str(&r->type, type));
    }
    sb_printf(out, "%d values compared, %d beyond tolerance", shown, bad);
    if (first_bad >= 0)
        sb_printf(out, "; the first is %s'%s'", c->rec[first_bad].output ? "output " : "",
                  c->rec[first_bad].name);
    sb_putc(out, '\n');
}

static bool output_beyond(const Compare *c) {
    for (int i = 0; i < c->nrec; i++)
        if (c->rec[i].output && !c->rec[i].diff.ok)
            return true;
    return false;
}

bool explore_compare(const Explorer *e, char *const *inputs, int ninputs, StrBuf *out,
                     DiagList *d) {
    return e->s ? explore_compare_step(e, e->s->current, &e->tol, inputs, ninputs, out, d) >= 0
                : need_session(e, d);
}

bool tolerance_set(Tolerance *tol, bool rtol, const char *v, const char *cmd, DiagList *d) {
    if (!v || !cli_parse_tolerance(v, rtol ? &tol->rtol : &tol->atol)) {
        diag_error(d, NULL, "%s: %s takes a number >= 0, not '%s'", cmd, rtol ? "--rtol" : "--atol",
                   v ? v : "");
        return false;
    }
    tol->atol_given |= !rtol;
    return true;
}

int explore_compare_step(const Explorer *e, int k, const Tolerance *tol, char *const *inputs,
                         int ninputs, StrBuf *out, DiagList *d) {
    if (!need_session(e, d))
        return -1;
    Session *s = e->s;
    RunInputs ri = {0};
    Compare c = {.a = arena_new(), .tol = tol};
    c.f0 = s->steps[0].graph ? s->steps[0].graph->main : NULL;
    want_names_of(&c, &s->steps[k]);
    int nout = session_noutputs(s);
    Tensor **want = NULL, **got = NULL;
    bool ok = bind_inputs(e, inputs, ninputs, &ri, d);
    if (ok) {
        want = arena_alloc_array(ri.a, (size_t)nout + 1, sizeof(Tensor *));
        got = arena_alloc_array(ri.a, (size_t)nout + 1, sizeof(Tensor *));
        ok = session_run_step(s, 0, ri.tensors, want, ri.a, d, keep_reference, &c) &&
             session_run_step(s, k, ri.tensors, got, ri.a, d, match_value, &c);
    }
    if (ok) {
        add_output_records(&c, s, got, want);
        sb_printf(out, "compare step %d (%s) with step 0 (import), values matched by name, "
                       "rtol %g, atol %g\n",
                  k, s->steps[k].name, tol->rtol, tol->atol_given ? tol->atol : TOLERANCE_ATOL);
        print_records(&c, out);
    }
    int status = !ok ? -1 : output_beyond(&c);
    free(c.ref.e);
    free(c.wanted.e);
    free(c.rec);
    arena_destroy(c.a);
    arena_destroy(ri.a);
    return status;
}

/* ---- bisection ------------------------------------------------------------------ */

/* The worst output of `got` against `want`: the first beyond tolerance,
 * else the one with the largest difference. */
typedef struct Verdict {
    bool ok;
    int output;
    TensorDiff diff;
    double atol;
} Verdict;

static Verdict judge_outputs(int n, Tensor **got, Tensor **want, const Tolerance *tol) {
    Verdict v = {.ok = true, .output = 0};
    for (int i = 0; i < n; i++) {
        double atol = tolerance_bound(tol, max_magnitude(want[i]));
        TensorDiff df = judge_value(got[i], want[i], max_magnitude(want[i]), tol);
        if (!df.ok) {
            if (v.ok)
                v = (Verdict){false, i, df, atol};
        } else if (v.ok && df.max_abs >= v.diff.max_abs) {
            v = (Verdict){true, i, df, atol};
        }
    }
    return v;
}

static void show_change(const Session *s, int k, StrBuf *out) {
    StrBuf sb;
    sb_init(&sb);
    const Step *a = &s->steps[k - 1], *b = &s->steps[k];
    /* The step's own form: LLVM IR at codegen and after, else LIR, else the graph. */
    const char *ta = b->llvm_text ? a->llvm_text : b->lir_text ? a->lir_text : a->text;
    const char *tb = b->llvm_text ? b->llvm_text : b->lir_text ? b->lir_text : b->text;
    textdiff_unified(ta ? ta : "", tb ? tb : "", a->name, b->name, 1, &sb);
    sb_printf(out, "what %s changed:\n", b->name);
    int lines = 0;
    for (const char *p = sb_str(&sb); *p && lines < 60; lines++) {
        const char *e = strchr(p, '\n');
        int len = e ? (int)(e - p) : (int)strlen(p);
        sb_printf(out, "  %.*s\n", len, p);
        p = e ? e + 1 : p + len;
    }
    if (lines == 60)
        sb_append(out, "  ...\n");
    sb_free(&sb);
}

/* Step k exists (running the pipeline on to it if need be). */
static bool have_step(Session *s, int k) {
    while (k >= s->nsteps && !session_done(s) && !s->steps[s->nsteps - 1].failed)
        session_step(s);
    return k < s->nsteps;
}

static void report_bad(const Session *s, int k, const Verdict *v, const Tolerance *tol,
                       StrBuf *out) {
    const char *name = session_output_name(s, v->output);
    sb_printf(out, "FIRST BAD PASS: %s (step %d)\n", s->steps[k].name, k);
    if (!v->diff.same_type)
        sb_printf(out, "  output '%s' changed type\n", name);
    else
        sb_printf(out,
                  "  output '%s': %lld elements beyond tolerance, largest difference %.6g at "
                  "index %lld (expected %.9g, got %.9g; allowed %.3g, rtol %.3g)\n",
                  name, (long long)v->diff.mismatches, v->diff.max_abs,
                  (long long)v->diff.worst, v->diff.want_at_worst, v->diff.got_at_worst,
                  v->atol, tol->rtol);
    show_change(s, k, out);
}

/* 1: step k is bad (reported), 0: it is fine. */
static int bisect_step(Session *s, int k, Tensor *const *inputs, Tensor **ref,
                       const Tolerance *tol, double *max_seen, StrBuf *out, DiagList *d) {
    const Step *st = &s->steps[k];
    if (st->failed) {
        sb_printf(out, "FIRST BAD PASS: %s (step %d) %s\n", st->name, k,
                  st->invalid ? "produced invalid IR" : "failed");
        show_change(s, k, out);
        return 1;
    }
    if (!st->changed) {
        sb_printf(out, "  %-3d %-16s no change\n", k, st->name);
        return 0;
    }
    Arena *a = arena_new();
    int n = session_noutputs(s);
    Tensor **got = arena_alloc_array(a, (size_t)n + 1, sizeof(Tensor *));
    DiagList rd;
    diag_init(&rd, s->path);
    int status = 0;
    if (!session_run_step(s, k, inputs, got, a, &rd, NULL, NULL)) {
        sb_printf(out, "FIRST BAD PASS: %s (step %d): the graph no longer runs\n", st->name, k);
        diag_append(d, &rd);
        show_change(s, k, out);
        status = 1;
    } else {
        Verdict v = judge_outputs(n, got, ref, tol);
        if (v.diff.max_abs > *max_seen)
            *max_seen = v.diff.max_abs;
        if (v.ok)
            sb_printf(out, "  %-3d %-16s ok (max abs diff %.3g)\n", k, st->name, v.diff.max_abs);
        else
            report_bad(s, k, &v, tol, out);
        status = v.ok ? 0 : 1;
    }
    diag_free(&rd);
    arena_destroy(a);
    return status;
}

int explore_bisect_session(Session *s, Tensor *const *inputs, const Tolerance *tol,
                           StrBuf *out, DiagList *d) {
    if (!s->nsteps || !s->steps[0].graph) {
        diag_error(d, NULL, "bisect needs a graph (an .onnx or .hl model)");
        return -1;
    }
    Arena *a = arena_new();
    Tensor **ref = arena_alloc_array(a, (size_t)session_noutputs(s) + 1, sizeof(Tensor *));
    int found = -1;
    if (session_run_step(s, 0, inputs, ref, a, d, NULL, NULL)) {
        sb_printf(out, "bisecting %d passes of %s against the imported graph\n", s->npipeline,
                  s->path);
        double max_seen = 0;
        found = 0;
        for (int k = 1; !found && have_step(s, k); k++)
            found = bisect_step(s, k, inputs, ref, tol, &max_seen, out, d);
        if (!found)
            sb_printf(out, "no pass moves the outputs beyond tolerance (largest difference %.3g)\n",
                      max_seen);
    }
    arena_destroy(a);
    return found;
}

bool explore_bisect(const Explorer *e, char *const *inputs, int ninputs, StrBuf *out,
                    DiagList *d) {
    if (!need_session(e, d))
        return false;
    RunInputs ri = {0};
    bool ok = bind_inputs(e, inputs, ninputs, &ri, d) &&
              explore_bisect_session(e->s, ri.tensors, &e->tol, out, d) >= 0;
    arena_destroy(ri.a);
    return ok;
}

/* ---- intra-line changes ------------------------------------------------------------- */

static bool diff_line(const char *l, char tag) {
    /* "---" and "+++" head a diff; they are no removed or added line. */
    return l[0] == tag && strncmp(l, tag == '-' ? "---" : "+++", 3);
}

/* How far ahead an added line is looked for to pair with a removed one:
 * an edited line sits near its old self, and a wider look costs time on
 * the LLVM IR's thousand-line changes. */
enum { PAIR_WINDOW = 8 };

int *explore_diff_partners(char *const *lines, int n) {
    int *partner = malloc(((size_t)n + 1) * sizeof *partner);
    for (int i = 0; i < n; i++)
        partner[i] = -1;
    for (int i = 0; i < n;) {
        if (!diff_line(lines[i], '-')) {
            i++;
            continue;
        }
        int r0 = i, r1 = i;
        while (r1 < n && diff_line(lines[r1], '-'))
            r1++;
        int a1 = r1;
        while (a1 < n && diff_line(lines[a1], '+'))
            a1++;
        /* In order: each removed line with the first similar added line
         * after the last one paired. */
        for (int r = r0, next = r1; r < r1 && next < a1; r++) {
            for (int j = next; j < a1 && j < next + PAIR_WINDOW; j++) {
                TextSpan sp;
                if (explore_changed_span(lines[r], lines[j], &sp)) {
                    partner[r] = j;
                    partner[j] = r;
                    next = j + 1;
                    break;
                }
            }
        }
        i = a1;
    }
    return partner;
}

bool explore_changed_span(const char *line, const char *partner, TextSpan *span) {
    TextSpan other;
    size_t len = strlen(line) - 1, plen = strlen(partner) - 1;
    textdiff_changed_span(line + 1, len, partner + 1, plen, span, &other);
    /* Lines that share less than half their text are different lines, not
     * an edited one: marking a stray common "  %" would only be noise. */
    size_t common = len - (span->end - span->start), longer = len > plen ? len : plen;
    if (2 * common < longer)
        return false;
    span->start++;
    span->end++;
    return true;
}

void explore_mark_changes(const char *diff, bool ansi, StrBuf *out) {
    StrBuf copy;
    sb_init(&copy);
    sb_append(&copy, diff);
    int n = 0, cap = 64;
    char **lines = malloc((size_t)cap * sizeof *lines);
    for (char *p = copy.data; p && *p;) {
        char *e = strchr(p, '\n');
        if (n == cap)
            lines = realloc(lines, (size_t)(cap *= 2) * sizeof *lines);
        lines[n++] = p;
        if (!e)
            break;
        *e = 0;
        p = e + 1;
    }
    int *partner = explore_diff_partners(lines, n);
    for (int i = 0; i < n; i++) {
        const char *l = lines[i];
        int j = partner[i];
        bool removed = l[0] == '-';
        const char *colour = !ansi || j < 0 ? "" : removed ? "\033[31m" : "\033[32m";
        TextSpan sp;
        if (j < 0 || !explore_changed_span(l, lines[j], &sp) || sp.start == sp.end) {
            sb_printf(out, "%s%s%s\n", colour, l, *colour ? "\033[0m" : "");
            continue;
        }
        const char *open = ansi ? "\033[1;7m" : removed ? "[-" : "{+";
        const char *close = ansi ? "\033[22;27m" : removed ? "-]" : "+}";
        sb_append(out, colour);
        sb_append_n(out, l, sp.start);
        sb_append(out, open);
        sb_append_n(out, l + sp.start, sp.end - sp.start);
        sb_append(out, close);
        sb_append(out, l + sp.end);
        sb_printf(out, "%s\n", ansi ? "\033[0m" : "");
    }
    free(partner);
    free(lines);
    sb_free(&copy);
}
