/* The compilation session: import, pipeline, snapshots. */
#include "passes/session.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/interp/interp.h"
#include "core/file.h"
#include "core/parse.h"
#include "core/print.h"
#include "core/lir_print.h"
#include "core/lir_verify.h"
#include "core/textdiff.h"
#include "core/verify.h"
#include "passes/irgen.h"

/* ---- pipelines as data ------------------------------------------------------ */

static const char *const pipeline_o0[] = {NULL};

static const char *const pipeline_o1[] = {
    "dce",   "cse",   "constfold",         "noop-elim", "merge-reshapes", "dce", "lower", "dce",
    "schedule", "irgen", "shorten-lifetimes", "allocate", NULL,
};

/* Cleanups first, then the domain rewrites (each exposes work for the next:
 * folded batch norms leave convs for activation fusion, sunk transposes leave
 * no-ops), lowering, a second cleanup of what lowering made, and the
 * memory-aware schedule last. */
static const char *const pipeline_o2[] = {
    "dce",         "cse",          "constfold",       "noop-elim",      "merge-reshapes",
    "fold-batchnorm", "sink-transpose", "concat-slice", "fold-pad",     "fuse-matmul-add",
    "fuse-activation", "fuse-conv-add", "winograd", "qconv-pack", "constfold", "cse", "noop-elim",
    "dce",
    "lower",       "constfold",    "cse",             "noop-elim",      "merge-reshapes",
    "dce",         "schedule",     "irgen",           "copy-elim",      "share-buffers",
    "dead-alloc",  "shorten-lifetimes", "peephole",   "allocate",       NULL,
};

const char *const *pipeline_by_level(const char *level) {
    if (!strcmp(level, "-O0"))
        return pipeline_o0;
    if (!strcmp(level, "-O1"))
        return pipeline_o1;
    if (!strcmp(level, "-O2"))
        return pipeline_o2;
    return NULL;
}

static void free_names(char **names, int n) {
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/* Appends the passes a comma-separated list names to names[0..*n) (grown
 * with realloc); false after "unknown pass" or "empty pass name" -- "a,,b",
 * ",a" and "a," are typos, not wishes ("" is the empty list). What was
 * appended stays counted in *n, for the caller to free. */
static bool append_pass_list(char ***names, int *n, const char *spec, DiagList *d) {
    size_t len = strlen(spec);
    if (len && (spec[0] == ',' || spec[len - 1] == ',' || strstr(spec, ",,"))) {
        diag_error(d, NULL, "empty pass name in '%s' (see 'glowc passes')", spec);
        return false;
    }
    char **grown = realloc(*names, ((size_t)*n + len / 2 + 2) * sizeof *grown);
    char *copy = strdup(spec), *save = NULL;
    bool ok = grown && copy;
    if (grown)
        *names = grown;
    for (char *tok = ok ? strtok_r(copy, ",", &save) : NULL; ok && tok;
         tok = strtok_r(NULL, ",", &save))
        if ((ok = pass_lookup(tok, NULL, d) != NULL))
            (*names)[(*n)++] = strdup(tok);
    free(copy);
    return ok;
}

bool pipeline_check(const char *spec, DiagList *d) {
    if (pipeline_by_level(spec))
        return true;
    char **names = NULL;
    int n = 0;
    bool ok = append_pass_list(&names, &n, spec, d);
    free_names(names, n);
    return ok;
}

/* ---- snapshots ----------------------------------------------------------------- */

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static Step *new_step(Session *s, const char *name, PassLevel level) {
    if (s->nsteps == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 32;
        s->steps = realloc(s->steps, (size_t)s->cap * sizeof *s->steps);
    }
    Step *st = &s->steps[s->nsteps++];
    memset(st, 0, sizeof *st);
    st->name = strdup(name);
    st->level = level;
    return st;
}

static void snapshot(Session *s, Step *st) {
    st->graph = module_clone(s->work);
    StrBuf sb;
    sb_init(&sb);
    print_module(s->work, NULL, &sb);
    st->text = sb_take(&sb);
    Function *f = s->work->main;
    st->nnodes = f->nnodes;
    st->nconsts = f->nconsts;
    for (Node *n = f->first; n; n = n->next)
        st->kind_counts[n->kind]++;
    if (s->nsteps > 1) {
        const Step *prev = &s->steps[s->nsteps - 2];
        DiffCounts dc = textdiff_count(prev->text, st->text);
        st->lines_added = dc.added;
        st->lines_removed = dc.removed;
    }
}

static void snapshot_lir(Session *s, Step *st) {
    st->lir = lir_clone(s->lir);
    StrBuf sb;
    sb_init(&sb);
    lir_print(s->lir, NULL, &sb);
    st->lir_text = sb_take(&sb);
    st->ninstrs = s->lir->ninstrs;
    st->arena_bytes = s->lir->arena_bytes;
    st->lower_bound = s->lir->lower_bound;
    st->naive_bytes = s->lir->naive_bytes;
    const Step *prev = s->nsteps > 1 ? &s->steps[s->nsteps - 2] : NULL;
    st->planned = s->lir->allocated && !(prev && prev->lir && prev->lir->allocated);
    if (prev) {
        st->text = prev->text ? strdup(prev->text) : NULL;
        st->nnodes = prev->nnodes;
        st->nconsts = prev->nconsts;
        memcpy(st->kind_counts, prev->kind_counts, sizeof st->kind_counts);
        /* An allocated program's text shows each buffer's offset, so
         * allocating counts as a change of the lines it placed. */
        DiffCounts dc = textdiff_count(prev->lir_text ? prev->lir_text : "", st->lir_text);
        st->lines_added = dc.added;
        st->lines_removed = dc.removed;
    }
}

static void snapshot_llvm(Session *s, Step *st) {
    const Step *prev = &s->steps[s->nsteps - 2];
    st->text = prev->text ? strdup(prev->text) : NULL;
    st->lir_text = prev->lir_text ? strdup(prev->lir_text) : NULL;
    st->lir = s->lir ? lir_clone(s->lir) : NULL; /* the program the LLVM IR was made from */
    st->nnodes = prev->nnodes;
    st->nconsts = prev->nconsts;
    st->ninstrs = prev->ninstrs;
    st->arena_bytes = prev->arena_bytes;
    st->lower_bound = prev->lower_bound;
    st->naive_bytes = prev->naive_bytes;
    memcpy(st->kind_counts, prev->kind_counts, sizeof st->kind_counts);
    StrBuf sb;
    sb_init(&sb);
    const Backend *be = s->opt.backend;
    be->print_ir(s->module, &sb);
    st->llvm_text = sb_take(&sb);
    st->native = be->snapshot(s->module);
    st->backend = be;
    DiffCounts dc = textdiff_count(prev->llvm_text ? prev->llvm_text : "", st->llvm_text);
    st->lines_added = dc.added;
    st->lines_removed = dc.removed;
}

static void free_step(Step *st) {
    free((char *)st->name);
    free(st->text);
    free(st->lir_text);
    free(st->llvm_text);
    module_destroy(st->graph);
    lir_destroy(st->lir);
    if (st->native)
        st->backend->snapshot_free(st->native);
}

/* ---- loading -------------------------------------------------------------------- */

static bool has_suffix(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

static Session *session_new(const char *path, const SessionOptions *opt) {
    Session *s = calloc(1, sizeof *s);
    if (opt)
        s->opt = *opt;
    if (!s->opt.backend)
        s->opt.backend = &interp_backend;
    s->path = strdup(path);
    diag_init(&s->diags, path);
    return s;
}

static void import_step(Session *s, double t0) {
    if (!s->work)
        return;
    Step *st = new_step(s, "import", PASS_GRAPH);
    st->changed = true;
    st->seconds = now() - t0;
    snapshot(s, st);
}

static void import_lir_step(Session *s, double t0) {
    s->from_lir = true;
    if (!s->lir)
        return;
    Step *st = new_step(s, "import", PASS_LIR);
    st->changed = true;
    st->seconds = now() - t0;
    snapshot_lir(s, st);
}

/* --dim binds an ONNX model's symbolic dimensions; text IR has none. */
static bool no_dims_for_text(Session *s) {
    if (!s->opt.ndims)
        return true;
    diag_error(&s->diags, NULL,
               "--dim %s: text IR has no symbolic dimensions (its shapes are static)",
               s->opt.dims[0].name);
    return false;
}

Session *session_open_text(const char *name, const char *text, size_t len,
                           const SessionOptions *opt) {
    Session *s = session_new(name, opt);
    double t0 = now();
    if (!no_dims_for_text(s))
        return s;
    if (has_suffix(name, ".lir")) {
        s->lir = lir_parse_limited(text, len, name, s->opt.max_memory, &s->diags);
        import_lir_step(s, t0);
        return s;
    }
    s->work = parse_module_limited(text, len, name, s->opt.max_memory, &s->diags);
    import_step(s, t0);
    return s;
}

Session *session_open_module(const char *path, const Module *m, const SessionOptions *opt) {
    Session *s = session_new(path, opt);
    double t0 = now();
    s->work = module_clone(m);
    import_step(s, t0);
    return s;
}

Session *session_open(const char *path, const SessionOptions *opt) {
    Session *s = session_new(path, opt);
    double t0 = now();
    bool text = has_suffix(path, ".lir") || has_suffix(path, ".hl") || !strcmp(path, "/dev/stdin");
    if (text && !no_dims_for_text(s))
        return s;
    if (has_suffix(path, ".lir")) {
        size_t len;
        char *text = file_read_all(path, &len, &s->diags);
        s->lir = text ? lir_parse_limited(text, len, path, s->opt.max_memory, &s->diags) : NULL;
        free(text);
        import_lir_step(s, t0);
        return s;
    }
    if (has_suffix(path, ".hl") || !strcmp(path, "/dev/stdin")) {
        size_t len;
        char *text = file_read_all(path, &len, &s->diags);
        if (text)
            s->work = parse_module_limited(text, len, path, s->opt.max_memory, &s->diags);
        free(text);
    } else {
        ImportOptions io = {
            .dims = s->opt.dims,
            .ndims = s->opt.ndims,
            .known = s->opt.known,
            .nknown = s->opt.nknown,
            .fold = interp_fold,
            .max_memory = s->opt.max_memory,
            .unsupported = &s->unsupported,
        };
        s->work = onnx_import_file(path, &io, &s->diags);
    }
    import_step(s, t0);
    return s;
}

void session_free(Session *s) {
    if (!s)
        return;
    for (int i = 0; i < s->nsteps; i++)
        free_step(&s->steps[i]);
    free(s->steps);
    for (int i = 0; i < s->npipeline; i++)
        free(s->pipeline[i]);
    free(s->pipeline);
    /* Snapshots share weights with the working modules: they go last. */
    if (s->exec)
        s->opt.backend->exec_free(s->exec);
    if (s->module)
        s->opt.backend->module_free(s->module);
    lir_destroy(s->lir);
    for (int i = 0; i < s->nretired_lir; i++)
        lir_destroy(s->retired_lir[i]);
    free(s->retired_lir);
    module_destroy(s->work);
    for (int i = 0; i < s->nretired; i++)
        module_destroy(s->retired[i]);
    free(s->retired);
    diag_free(&s->diags);
    free(s->path);
    free(s);
}

/* ---- pipeline ------------------------------------------------------------------- */

/* Graph passes come before irgen, LIR passes after it (a .lir input starts
 * after it); irgen runs at most once. */
static bool check_order(Session *s, char **names, int n) {
    bool lir = s->from_lir, allocated = false, codegen = false, optimized = false;
    for (int i = 0; i < n; i++) {
        const PassInfo *pi = pass_find(names[i]);
        bool is_irgen = pi->step == STEP_IRGEN;
        const char *why = NULL;
        if (is_irgen && lir)
            why = s->from_lir ? "the input is already low-level IR" : "irgen has already run";
        else if (pi->run_lir && !lir)
            why = "it works on the low-level IR: put irgen before it";
        else if (pi->run && lir)
            why = "it works on the graph, which irgen has already left behind";
        else if ((pi->run_lir || pi->run) && codegen)
            why = "code generation has already run";
        else if (pi->step == STEP_CODEGEN && (!allocated || codegen))
            why = codegen ? "codegen runs once" : "codegen needs an allocated program: allocate first";
        else if (pi->step == STEP_LLVM_OPT && (!codegen || optimized))
            why = optimized ? "llvm-opt runs once" : "llvm-opt needs codegen before it";
        if (why) {
            diag_error(&s->diags, NULL, "pass '%s' cannot run at position %d: %s", names[i], i + 1,
                       why);
            return false;
        }
        lir |= is_irgen;
        if (pi->run_lir)
            allocated = pi->run_lir == lir_allocate || (allocated && pi->run_lir == NULL);
        codegen |= pi->step == STEP_CODEGEN;
        optimized |= pi->step == STEP_LLVM_OPT;
    }
    return true;
}

static void clear_pipeline(Session *s) {
    free_names(s->pipeline, s->npipeline);
    s->pipeline = NULL;
    s->npipeline = s->next = 0;
}

static void prepend_pass(char ***names, int *n, const char *pass) {
    for (int i = 0; i < *n; i++)
        if (!strcmp((*names)[i], pass))
            return;
    *names = realloc(*names, ((size_t)*n + 2) * sizeof **names);
    memmove(*names + 1, *names, (size_t)*n * sizeof **names);
    (*names)[0] = strdup(pass);
    (*n)++;
}

/* The imported graph holds a node of kind k. */
static bool imported_has(const Session *s, NodeKind k) {
    if (s->nsteps < 1 || !s->steps[0].graph)
        return false;
    for (const Node *n = s->steps[0].graph->main->first; n; n = n->next)
        if (n->kind == k)
            return true;
    return false;
}

/* An imported ONNX model in QDQ form: a dequantize_linear somewhere. */
static bool imported_qdq(const Session *s) {
    size_t len = s->path ? strlen(s->path) : 0;
    return len >= 5 && !strcmp(s->path + len - 5, ".onnx") &&
           imported_has(s, NK_DEQUANTIZE_LINEAR);
}

bool session_set_pipeline(Session *s, const char *spec) {
    const char *const *named = pipeline_by_level(spec);
    char **names = NULL;
    int n = 0;
    if (named) {
        /* A low-level input takes the level's passes after irgen. */
        int from = 0;
        for (int i = 0; s->from_lir && named[i]; i++)
            if (!strcmp(named[i], "irgen"))
                from = i + 1;
        int count = 0;
        while (named[count])
            count++;
        names = calloc((size_t)(count - from) + 1, sizeof *names);
        for (int i = from; named[i]; i++)
            if (!s->opt.no_winograd || strcmp(named[i], "winograd"))
                names[n++] = strdup(named[i]);
    } else if (!append_pass_list(&names, &n, spec, &s->diags)) {
        free_names(names, n);
        return false;
    }
    /* Options that transform the imported graph put their pass first, unless
     * the list places it: --train differentiates (then optimises the training
     * function like any graph), --quantize before it, as its profile names
     * the imported graph's values. */
    if (s->opt.train && !s->from_lir)
        prepend_pass(&names, &n, "differentiate");
    /* ONNX's Gradient nodes are written out first, whatever the level. */
    if (named && !s->from_lir && imported_has(s, NK_GRADIENT))
        prepend_pass(&names, &n, "gradients");
    if (s->opt.quant && !s->from_lir)
        prepend_pass(&names, &n, "quantize");
    else if (named && !s->from_lir && imported_qdq(s))
        /* QDQ groups to int8, as ONNX Runtime runs them; an explicit --passes
         * list runs the Q/DQ nodes in float unless it names fold-qdq. */
        prepend_pass(&names, &n, "fold-qdq");
    if (!check_order(s, names, n)) {
        free_names(names, n);
        return false;
    }
    clear_pipeline(s);
    s->pipeline = names;
    s->npipeline = n;
    /* Back to the import: the working graph restarts from its snapshot. The
     * old working module is kept (retired), since snapshots share its weights. */
    if (s->nsteps > 1 || (s->nsteps == 1 && s->npipeline_ran)) {
        for (int i = 1; i < s->nsteps; i++)
            free_step(&s->steps[i]);
        s->nsteps = 1;
        if (s->lir) {
            s->retired_lir = realloc(s->retired_lir,
                                     (size_t)(s->nretired_lir + 1) * sizeof *s->retired_lir);
            s->retired_lir[s->nretired_lir++] = s->lir;
            s->lir = s->from_lir ? lir_clone(s->steps[0].lir) : NULL;
        }
        if (s->work) {
            s->retired = realloc(s->retired, (size_t)(s->nretired + 1) * sizeof *s->retired);
            s->retired[s->nretired++] = s->work;
            s->work = module_clone(s->steps[0].graph);
        }
    }
    s->npipeline_ran = false;
    s->broken = false;
    s->current = 0;
    return true;
}

bool session_done(const Session *s) {
    return (!s->work && !s->lir) || s->next >= s->npipeline;
}

/* Under --break-pass, codegen and llvm-opt miscompile as the other steps
 * do (pass_rewrote): the entry point perturbs an output, deterministically. */
static bool break_native(Session *s, PassContext *ctx) {
    if (ctx->break_this_pass && !ctx->broken && s->opt.backend->miscompile(s->module))
        ctx->broken = true;
    return true;
}

static bool run_codegen(Session *s, const PassInfo *pi, PassContext *ctx) {
    const Backend *be = s->opt.backend;
    if (!be->compiles) {
        diag_error(&s->diags, NULL, "%s: backend %s does not compile (the compiling backends: %s)",
                   pi->name, be->name, backend_compiling_names());
        return false;
    }
    if (pi->step == STEP_LLVM_OPT)
        return s->module && be->optimize(s->module, &s->diags) && break_native(s, ctx);
    s->module = be->compile(s->lir, &s->opt.codegen, &s->diags);
    if (s->module && be->nfallback(s->module)) {
        StrBuf sb;
        sb_init(&sb);
        for (int i = 0; i < be->nfallback(s->module); i++)
            sb_printf(&sb, "%s%s", i ? ", " : "", be->fallback_what(s->module, i));
        diag_note(&s->diags, NULL, "run by the interpreter's kernels: %s",
                  sb_str(&sb));
        sb_free(&sb);
    }
    return s->module && break_native(s, ctx);
}

/* A graph pass runs on each body of f's regions as on a function of its
 * own (so CSE never merges across bodies), bodies inside bodies too. */
static bool run_in_bodies(const PassInfo *pi, Function *f, PassContext *ctx) {
    bool changed = false;
    for (Node *n = f->first; n; n = n->next)
        for (int i = 0; i < n->nbodies; i++) {
            changed |= pi->run(n->bodies[i], ctx);
            changed |= run_in_bodies(pi, n->bodies[i], ctx);
        }
    return changed;
}

/* Runs one pass on the working IR; true if it changed it. */
static bool run_pass(Session *s, const PassInfo *pi, PassContext *ctx) {
    if (pi->step == STEP_CODEGEN || pi->step == STEP_LLVM_OPT)
        return run_codegen(s, pi, ctx);
    if (pi->step == STEP_IRGEN) {
        s->lir = irgen(s->work->main, &s->diags);
        if (s->lir)
            pass_break_lir(ctx, s->lir);
        return s->lir != NULL;
    }
    if (pi->run_lir) {
        bool changed = pi->run_lir(s->lir, ctx);
        if (changed)
            pass_break_lir(ctx, s->lir);
        return changed;
    }
    Function *f = s->work->main;
    bool changed = pi->run(f, ctx);
    if (!pi->main_only)
        changed |= run_in_bodies(pi, f, ctx);
    if (changed && ctx->break_this_pass && !ctx->broken)
        pass_rewrote(ctx, f, f->outputs[0]); /* a pass that removes, not rewrites */
    return changed;
}

/* A verifier's finding as one line: where (line:col or the node) and what. */
static void describe_diag(const Diag *g, StrBuf *out) {
    if (g->loc.line > 0)
        sb_printf(out, "line %d:%d: ", g->loc.line, g->loc.col);
    if (g->where)
        sb_printf(out, "%s: ", g->where);
    sb_append(out, g->msg);
}

/* "pass 'P' (step N) produced invalid IR: <the first finding>", then the
 * verifier's other findings as they are. */
static bool verify_step(Session *s, const PassInfo *pi, int step) {
    DiagList vd;
    diag_init(&vd, s->path);
    bool ok = pi->level == PASS_LIR ? lir_verify(s->lir, &vd) : verify_function(s->work->main, &vd);
    if (!ok) {
        StrBuf sb;
        sb_init(&sb);
        const Diag *first = vd.head;
        while (first && first->level != DIAG_ERROR)
            first = first->next;
        if (first)
            describe_diag(first, &sb);
        else
            sb_append(&sb, "the verifier failed");
        diag_error(&s->diags, NULL, "pass '%s' (step %d) produced invalid IR: %s", pi->name, step,
                   sb_str(&sb));
        sb_free(&sb);
        for (const Diag *g = vd.head; g; g = g->next)
            if (g != first)
                diag_add(&s->diags, g->level, g->where, g->loc, g->src_line, "%s", g->msg);
    }
    diag_free(&vd);
    return ok;
}

/* The lines a broken step changed, as a note after the error: the unified
 * diff of its text against the previous step's (first 60 lines). */
static void note_broken_lines(Session *s, const Step *st) {
    const Step *prev = &s->steps[s->nsteps - 2];
    bool lir = st->lir_text != NULL;
    const char *a = lir ? prev->lir_text : prev->text, *b = lir ? st->lir_text : st->text;
    if (!b)
        return;
    StrBuf diff, note;
    sb_init(&diff);
    sb_init(&note);
    textdiff_unified(a ? a : "", b, prev->name, st->name, 1, &diff);
    int lines = 0;
    const char *p = sb_str(&diff);
    for (; *p && lines < 60; lines++) {
        const char *e = strchr(p, '\n');
        int len = e ? (int)(e - p) : (int)strlen(p);
        sb_printf(&note, "\n  %.*s", len, p);
        p = e ? e + 1 : p + len;
    }
    if (*p)
        sb_append(&note, "\n  ...");
    diag_note(&s->diags, NULL, "the lines '%s' changed:%s", st->name,
              lines ? sb_str(&note) : " none (the change does not show in the text)");
    sb_free(&diff);
    sb_free(&note);
}

/* --break-pass=P that struck nothing by the end of the pipeline: P did not
 * run, or changed nothing to perturb. Said once, as a warning. */
static void warn_unbroken(Session *s) {
    if (!s->opt.break_pass || s->broken || !session_done(s))
        return;
    bool ran = false;
    for (int i = 1; i < s->nsteps; i++)
        ran |= !strcmp(s->steps[i].name, s->opt.break_pass);
    diag_add(&s->diags, DIAG_WARNING, NULL, (SrcLoc){0}, NULL,
             ran ? "--break-pass=%s: '%s' changed nothing, so nothing was broken"
                 : "--break-pass=%s: '%s' is not in the pipeline, so nothing was broken",
             s->opt.break_pass, s->opt.break_pass);
}

bool session_step(Session *s) {
    if (session_done(s))
        return false;
    if (s->nsteps && s->steps[s->nsteps - 1].failed)
        return false;
    const PassInfo *pi = pass_find(s->pipeline[s->next++]);
    s->npipeline_ran = true;
    PassContext ctx = {.d = &s->diags, .backend = s->opt.backend, .quant = s->opt.quant,
                       .train = s->opt.train, .codegen = &s->opt.codegen};
    ctx.break_this_pass = s->opt.break_pass && !s->broken && !strcmp(s->opt.break_pass, pi->name);
    int errors = s->diags.errors;
    double t0 = now();
    bool changed = run_pass(s, pi, &ctx);
    s->broken |= ctx.broken;
    double t1 = now();
    Step *st = new_step(s, pi->name, pi->level);
    st->kind = pi->step;
    st->changed = changed;
    st->seconds = t1 - t0;
    memcpy(st->stats, ctx.stats, sizeof ctx.stats);
    st->nstats = ctx.nstats;
    st->peak_before = ctx.peak_before;
    st->peak_after = ctx.peak_after;
    st->one_order = ctx.one_order;
    st->failed = s->diags.errors > errors || (pi->level == PASS_LIR && !s->lir) ||
                 (pi->level == PASS_CODEGEN && !changed);
    bool verify = !st->failed && !s->opt.no_verify && pi->level != PASS_CODEGEN;
    bool invalid = verify && !verify_step(s, pi, s->nsteps - 1);
    st->verify_seconds = verify ? now() - t1 : 0;
    st->failed |= invalid;
    st->invalid = invalid;
    if (st->failed) {
        /* The step before stays printable; this one shows the broken IR,
         * as text and as a copy to draw (never to run: session_run_step
         * refuses a failed step). */
        StrBuf sb;
        sb_init(&sb);
        if (pi->level == PASS_LIR && s->lir) {
            lir_print(s->lir, NULL, &sb);
            st->lir_text = sb_take(&sb);
            st->lir = lir_clone(s->lir);
        } else if (s->work && pi->level != PASS_CODEGEN) {
            print_module(s->work, NULL, &sb);
            st->text = sb_take(&sb);
            st->graph = module_clone(s->work);
        }
        sb_free(&sb);
        if (invalid)
            note_broken_lines(s, st);
        return false;
    }
    if (pi->level == PASS_CODEGEN)
        snapshot_llvm(s, st);
    else if (pi->level == PASS_LIR)
        snapshot_lir(s, st);
    else
        snapshot(s, st);
    warn_unbroken(s);
    return true;
}

bool session_run(Session *s) {
    while (!session_done(s))
        if (!session_step(s))
            return false;
    return s->work != NULL || s->lir != NULL;
}

bool session_append_pipeline(Session *s, const char *spec) {
    int n = s->npipeline;
    char **names = calloc((size_t)n + 1, sizeof *names);
    for (int i = 0; names && i < n; i++)
        names[i] = strdup(s->pipeline[i]);
    bool ok = names && append_pass_list(&names, &n, spec, &s->diags) && check_order(s, names, n);
    if (!ok) {
        free_names(names, names ? n : 0);
        return false;
    }
    free_names(s->pipeline, s->npipeline);
    s->pipeline = names;
    s->npipeline = n;
    return true;
}

bool session_want_lir(Session *s) {
    bool has_irgen = s->from_lir, has_alloc = false, has_lower = false;
    for (int i = 0; i < s->npipeline; i++) {
        const PassInfo *pi = pass_find(s->pipeline[i]);
        has_irgen |= pi->step == STEP_IRGEN;
        has_lower |= pi->level == PASS_LOWERING;
        if (pi->level == PASS_LIR)
            has_alloc = pi->run_lir == lir_allocate; /* the last LIR pass must be allocate */
    }
    /* Lowering is what lets a backend run the graph at all (-O0 included),
     * not an optimisation: a pipeline without it gets it before irgen. */
    if (!has_irgen)
        return session_append_pipeline(s, has_lower ? "irgen,shorten-lifetimes,allocate"
                                                    : "lower,irgen,shorten-lifetimes,allocate");
    if (!has_alloc)
        return session_append_pipeline(s, "allocate");
    return true;
}

bool session_pipeline_plans(const Session *s) {
    for (int i = 0; i < s->npipeline; i++)
        if (pass_find(s->pipeline[i])->run_lir == lir_allocate)
            return true;
    return false;
}

bool session_want_codegen(Session *s) {
    bool has_codegen = false, has_opt = false;
    for (int i = 0; i < s->npipeline; i++) {
        const PassInfo *pi = pass_find(s->pipeline[i]);
        has_codegen |= pi->step == STEP_CODEGEN;
        has_opt |= pi->step == STEP_LLVM_OPT;
    }
    if (!has_codegen && !session_want_lir(s))
        return false;
    if (!has_codegen)
        return session_append_pipeline(s, "codegen,llvm-opt");
    return has_opt || session_append_pipeline(s, "llvm-opt");
}

double session_phase_seconds(const Session *s, BackendPhase p) {
    if (s->module && s->opt.backend->phase_seconds)
        return s->opt.backend->phase_seconds(s->module, p);
    return s->phase_seconds[p];
}

BackendExec *session_exec(Session *s, DiagList *d) {
    if (!s->exec && s->module) {
        s->exec = s->opt.backend->load(s->module, s->opt.threads, d);
        for (int p = 0; p < BACKEND_NPHASES && s->opt.backend->phase_seconds; p++)
            s->phase_seconds[p] = s->opt.backend->phase_seconds(s->module, (BackendPhase)p);
        s->opt.backend->module_free(s->module); /* loading took what it needs */
        s->module = NULL;
    }
    if (!s->exec && !diag_has_errors(d))
        diag_error(d, NULL, "backend %s needs codegen", s->opt.backend->name);
    return s->exec;
}

typedef struct StepObs {
    StepObserver observe;
    void *ctx;
} StepObs;

static void observe_node(void *ctx, const Node *n, Tensor *const *results);
static void observe_instr(void *ctx, const LirInstr *i, const Tensor *ops, const Tensor *storage);
static bool run_native(const Backend *be, BackendExec *e, Tensor *const *inputs,
                       Tensor **outputs, Arena *a, DiagList *d, StepObs *so);

static bool execute(Session *s, Tensor *const *inputs, Tensor **outputs, Arena *a, DiagList *d,
                    StepObs *so) {
    if (s->opt.backend->compiles) {
        BackendExec *e = session_exec(s, d);
        return e && run_native(s->opt.backend, e, inputs, outputs, a, d, so);
    }
    if (s->opt.backend->runs_lir) {
        if (!s->lir) {
            diag_error(d, NULL, "backend %s needs the low-level program", s->opt.backend->name);
            return false;
        }
        return interp_run_lir_observed(s->lir, inputs, outputs, a, d,
                                       so->observe ? observe_instr : NULL, so);
    }
    if (!s->work) {
        diag_error(d, NULL, "backend %s runs a graph; the input was low-level IR",
                   s->opt.backend->name);
        return false;
    }
    return interp_run(s->work->main, inputs, outputs, a, d, so->observe ? observe_node : NULL,
                      so);
}

bool session_execute_observed(Session *s, Tensor *const *inputs, Tensor **outputs, Arena *a,
                              DiagList *d, StepObserver observe, void *observe_ctx) {
    /* What fails at run time (a kernel, a weight the text elided) is named
     * with the model's file, also in a caller's list that has none. */
    const char *saved = d->file;
    if (!saved)
        d->file = s->path;
    StepObs so = {observe, observe_ctx};
    bool ok = execute(s, inputs, outputs, a, d, &so);
    d->file = saved;
    return ok;
}

bool session_execute(Session *s, Tensor *const *inputs, Tensor **outputs, Arena *a,
                     DiagList *d) {
    return session_execute_observed(s, inputs, outputs, a, d, NULL, NULL);
}

/* The k-th weight of a kind in a program, in declaration order. */
static const LirBuf *nth_weight(const LirProgram *p, LirBufKind kind, int k) {
    for (int b = 0; b < p->nbufs; b++)
        if (p->bufs[b]->kind == kind && !p->bufs[b]->dead && k-- == 0)
            return p->bufs[b];
    return NULL;
}

static int count_weights(const LirProgram *p, LirBufKind kind) {
    int n = 0;
    for (int b = 0; b < p->nbufs; b++)
        n += p->bufs[b]->kind == kind && !p->bufs[b]->dead;
    return n;
}

int session_ninputs(const Session *s) {
    return s->work ? s->work->main->nparams : s->lir ? count_weights(s->lir, LB_IN) : 0;
}

const char *session_input_name(const Session *s, int i) {
    return s->work ? s->work->main->params[i]->name : nth_weight(s->lir, LB_IN, i)->name;
}

const Type *session_input_type(const Session *s, int i) {
    return s->work ? &s->work->main->params[i]->res[0].type : &nth_weight(s->lir, LB_IN, i)->type;
}

int session_noutputs(const Session *s) {
    return s->work ? s->work->main->noutputs : s->lir ? count_weights(s->lir, LB_OUT) : 0;
}

const char *session_output_name(const Session *s, int i) {
    return s->work ? s->work->main->output_names[i] : nth_weight(s->lir, LB_OUT, i)->name;
}

/* ---- running any step (the explorer) -------------------------------------------- */

static void observe_node(void *ctx, const Node *n, Tensor *const *results) {
    const StepObs *so = ctx;
    for (int r = 0; r < n->nres; r++)
        so->observe(so->ctx, n->name, r, results[r]);
}

static void observe_instr(void *ctx, const LirInstr *i, const Tensor *ops,
                          const Tensor *storage) {
    const StepObs *so = ctx;
    int result = 0;
    for (int k = 0; k < i->nops; k++) {
        if (i->roles[k] == ROLE_IN)
            continue;
        so->observe(so->ctx, i->name, result, &ops[k]);
        if (i->ops[k]->kind == LB_VIEW)
            so->observe(so->ctx, i->name, result, &storage[k]);
        result++;
    }
}

static bool run_lir_step(const Step *st, Tensor *const *inputs, Tensor **outputs, Arena *a,
                         DiagList *d, StepObs *so) {
    LirProgram *p = lir_clone(st->lir);
    PassContext pc = {.d = d};
    if (!p->allocated)
        lir_allocate(p, &pc); /* interp_run_lir says so if this failed */
    bool ok = interp_run_lir_observed(p, inputs, outputs, a, d,
                                      so->observe ? observe_instr : NULL, so);
    lir_destroy(p);
    return ok;
}

/* The native code's values: after each instruction the probe reads its
 * results from the running memories, as the LIR interpreter reports them. */
typedef struct NativeObs {
    const Backend *be;
    BackendExec *e;
    const LirInstr **by_index;
    int n;
    StepObs *so;
} NativeObs;

static void native_probe(void *ctx, int instr, int event) {
    NativeObs *no = ctx;
    if (event != PROBE_END || instr < 0 || instr >= no->n)
        return;
    const LirInstr *i = no->by_index[instr];
    Tensor *ops = calloc(2 * (size_t)i->nops + 1, sizeof(Tensor)), *storage = ops + i->nops;
    if (!ops)
        return;
    for (int k = 0; k < i->nops; k++) {
        const LirBuf *b = i->ops[k], *base = lir_storage(i->ops[k]);
        ops[k] = (Tensor){.type = b->type, .data = no->be->address(no->e, b)};
        storage[k] = (Tensor){.type = base->type, .data = no->be->address(no->e, base)};
    }
    observe_instr(no->so, i, ops, storage);
    free(ops);
}

static bool run_native(const Backend *be, BackendExec *e, Tensor *const *inputs,
                       Tensor **outputs, Arena *a, DiagList *d, StepObs *so) {
    if (!so->observe)
        return be->run(e, inputs, outputs, a, d);
    const LirProgram *p = be->program(e);
    int n = 0;
    for (const LirInstr *i = p->first; i; i = i->next)
        n++;
    NativeObs no = {be, e, calloc((size_t)n + 1, sizeof(LirInstr *)), n, so};
    n = 0;
    for (const LirInstr *i = p->first; i; i = i->next)
        no.by_index[n++] = i;
    if (!be->set_probe(e, native_probe, &no)) {
        diag_error(d, NULL, "the native code was compiled without instrumentation");
        free(no.by_index);
        return false;
    }
    bool ok = be->run(e, inputs, outputs, a, d);
    be->set_probe(e, NULL, NULL);
    free(no.by_index);
    return ok;
}

BackendExec *session_step_exec(Session *s, int k, bool instrument, DiagList *d) {
    const Backend *be = s->opt.backend;
    const Step *st = k >= 0 && k < s->nsteps ? &s->steps[k] : NULL;
    if (!st || st->level != PASS_CODEGEN || st->failed || !s->lir) {
        diag_error(d, NULL, "step %d is no code generation step that can run", k);
        return NULL;
    }
    BackendOptions co = s->opt.codegen;
    co.output = OUTPUT_JIT;
    co.instrument = instrument;
    BackendModule *m = be->compile(s->lir, &co, d);
    /* The native steps up to k again: llvm-opt optimises, and the pass that
     * --break-pass names miscompiles where it did in the pipeline. */
    for (int i = 1; m && i <= k; i++) {
        const PassInfo *pi = s->steps[i].level == PASS_CODEGEN ? pass_find(s->steps[i].name) : NULL;
        if (!pi)
            continue;
        if (pi->step == STEP_LLVM_OPT && !be->optimize(m, d)) {
            be->module_free(m);
            return NULL;
        }
        if (s->opt.break_pass && !strcmp(s->opt.break_pass, pi->name))
            be->miscompile(m);
    }
    BackendExec *e = m ? be->load(m, s->opt.threads, d) : NULL;
    if (m)
        be->module_free(m);
    return e;
}

/* A codegen or llvm-opt step: the allocated program compiled again, with
 * instrumentation when values are observed, and run as native code. */
static bool run_native_step(Session *s, int k, Tensor *const *inputs, Tensor **outputs,
                            Arena *a, DiagList *d, StepObs *so) {
    const Backend *be = s->opt.backend;
    BackendExec *e = session_step_exec(s, k, so->observe != NULL, d);
    bool ok = e && run_native(be, e, inputs, outputs, a, d, so);
    if (e)
        be->exec_free(e);
    return ok;
}

bool session_run_step(Session *s, int k, Tensor *const *inputs, Tensor **outputs, Arena *a,
                      DiagList *d, StepObserver observe, void *observe_ctx) {
    if (k < 0 || k >= s->nsteps) {
        diag_error(d, NULL, "there is no step %d", k);
        return false;
    }
    const Step *st = &s->steps[k];
    StepObs so = {observe, observe_ctx};
    if (st->failed) {
        diag_error(d, NULL, "step %d (%s) failed: its IR cannot run", k, st->name);
        return false;
    }
    if (st->native && !observe)
        return st->backend->snapshot_run(st->native, st->lir, s->opt.threads, inputs, outputs,
                                         a, d);
    if (st->graph)
        return interp_run(st->graph->main, inputs, outputs, a, d, observe ? observe_node : NULL,
                          &so);
    if (st->level == PASS_CODEGEN)
        return run_native_step(s, k, inputs, outputs, a, d, &so);
    if (st->lir)
        return run_lir_step(st, inputs, outputs, a, d, &so);
    diag_error(d, NULL, "step %d (%s) has no IR the interpreter runs", k, st->name);
    return false;
}

bool session_step_is_native(const Session *s, int k) {
    return k >= 0 && k < s->nsteps && s->steps[k].native;
}

/* ---- naming steps ------------------------------------------------------------------ */

int session_nplanned(const Session *s) {
    return s->nsteps ? 1 + s->npipeline : 0;
}

static const char *planned_name(const Session *s, int k) {
    return k == 0 ? "import" : s->pipeline[k - 1];
}

/* Which run of its pass step k is (1-based), and how many runs there are. */
static int run_of(const Session *s, int k, int *runs) {
    const char *name = planned_name(s, k);
    int nth = 0, n = 0;
    for (int j = 0; j < session_nplanned(s); j++) {
        if (strcmp(planned_name(s, j), name))
            continue;
        n++;
        if (j <= k)
            nth = n;
    }
    *runs = n;
    return nth;
}

void session_step_label(const Session *s, int k, char *buf, size_t size) {
    if (k < 0 || k >= session_nplanned(s)) {
        snprintf(buf, size, "?");
        return;
    }
    int runs, nth = run_of(s, k, &runs);
    if (runs > 1)
        snprintf(buf, size, "%s#%d", planned_name(s, k), nth);
    else
        snprintf(buf, size, "%s", planned_name(s, k));
}

static void list_steps(const Session *s, StrBuf *sb) {
    for (int k = 0; k < session_nplanned(s); k++) {
        char label[96];
        session_step_label(s, k, label, sizeof label);
        sb_printf(sb, "%s%d %s", k ? ", " : "", k, label);
    }
}

/* "12" (digits only), or -1. */
static long step_number(const char *spec) {
    if (!*spec || strlen(spec) > 9 || strspn(spec, "0123456789") != strlen(spec))
        return -1;
    return strtol(spec, NULL, 10);
}

int session_find_steps(const Session *s, const char *spec, const char *what, int *ks,
                       DiagList *d) {
    /* "dot: --after=cse#9: ..." for an option, "step cse#9: ..." for a command. */
    const char *eq = strstr(what, "--") ? "=" : " ";
    int n = session_nplanned(s);
    long num = step_number(spec);
    if (num >= 0) {
        if (num < n) {
            ks[0] = (int)num;
            return 1;
        }
        diag_error(d, NULL, "%s%s%s: there is no step %s: the steps are 0 to %d", what, eq, spec, spec,
                   n - 1);
        return -1;
    }
    /* "PASS#K": the K-th run; a bare "PASS": every run. */
    const char *hash = strchr(spec, '#');
    size_t nlen = hash ? (size_t)(hash - spec) : strlen(spec);
    long nth = hash ? step_number(hash + 1) : 0;
    int found = 0, runs = 0;
    for (int k = 0; k < n; k++) {
        const char *name = planned_name(s, k);
        if (strlen(name) != nlen || strncmp(name, spec, nlen))
            continue;
        runs++;
        if (!hash || runs == nth)
            ks[found++] = k;
    }
    if (found && (!hash || nth >= 1))
        return found;
    StrBuf sb;
    sb_init(&sb);
    if (runs) {
        /* The pass runs, just not that often: list its runs. */
        for (int k = 0, r = 0; k < n; k++)
            if (strlen(planned_name(s, k)) == nlen && !strncmp(planned_name(s, k), spec, nlen)) {
                sb_printf(&sb, "%s%.*s#%d (step %d)", r ? ", " : "", (int)nlen, spec, r + 1, k);
                r++;
            }
        diag_error(d, NULL, "%s%s%s: %.*s runs %d time%s in this pipeline: %s", what, eq, spec,
                   (int)nlen, spec, runs, runs == 1 ? "" : "s", sb_str(&sb));
    } else {
        list_steps(s, &sb);
        diag_error(d, NULL, "%s%s%s: no such step in the pipeline; the steps are: %s", what, eq, spec,
                   n ? sb_str(&sb) : "none");
    }
    sb_free(&sb);
    return -1;
}

int session_find_step(const Session *s, const char *spec, const char *what, DiagList *d) {
    int n = session_nplanned(s);
    int *ks = malloc(((size_t)n + 1) * sizeof *ks);
    int found = session_find_steps(s, spec, what, ks, d);
    int k = found > 0 ? ks[0] : -1;
    free(ks);
    return k;
}
