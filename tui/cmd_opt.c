/* glowc opt: runs a pipeline over a model and prints the result as text IR;
 * glowc passes: lists the passes. */
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/file.h"
#include "core/print.h"
#include "core/textdiff.h"
#include "tui/args.h"

typedef enum { CHANGED_NONE, CHANGED_FULL, CHANGED_DIFF } PrintChanged;

typedef struct OptArgs {
    const char *emit; /* graph, lir, llvm, llvm-opt or asm */
    bool split;       /* --split-input-file */
    bool print_after_all;
    const char *print_after, *print_before; /* step names (session_find_steps) */
    PrintChanged print_changed;
    const char *dump_dir;
    bool time_passes, stats;
} OptArgs;

/* A step's IR at the step's own level (graph, low-level or LLVM), and
 * another step's at that same level ("" when it has none yet). */
static const char *text_at(const Step *st, PassLevel level) {
    const char *t = level == PASS_CODEGEN ? st->llvm_text
                    : level == PASS_LIR   ? st->lir_text
                                          : st->text;
    return t ? t : "";
}

static const char *step_text(const Step *st) {
    return text_at(st, st->level);
}

/* The last step that has the IR --emit asks for. */
static const char *emitted(const Session *s, const char *emit) {
    for (int i = s->nsteps - 1; i >= 0; i--) {
        const Step *st = &s->steps[i];
        if (!strcmp(emit, "graph") && st->text)
            return st->text;
        if (!strcmp(emit, "lir") && st->lir_text)
            return st->lir_text;
        if (!strcmp(emit, "llvm") && st->llvm_text && st->kind == STEP_CODEGEN)
            return st->llvm_text;
        if (!strcmp(emit, "llvm-opt") && st->llvm_text && st->kind == STEP_LLVM_OPT)
            return st->llvm_text;
    }
    return "";
}

/* "// *** IR after step 7 cse#2 ***": unique per step, a comment in the
 * step's own text form (';' in LLVM IR). */
static void dump_header(const Session *s, int k, const char *when, const char *note) {
    char label[96];
    session_step_label(s, k, label, sizeof label);
    fprintf(stderr, "%s *** IR %s step %d %s%s ***\n",
            s->steps[k].level == PASS_CODEGEN ? ";" : "//", when, k, label, note);
}

static void dump_text(const char *text) {
    fputs(text, stderr);
    if (*text && text[strlen(text) - 1] != '\n')
        fputc('\n', stderr);
}

/* Marks in `on` the steps a --print-after/--print-before names. */
static bool mark_steps(const Session *s, const char *spec, const char *what, bool *on,
                       DiagList *d) {
    if (!spec)
        return true;
    int *ks = malloc(((size_t)session_nplanned(s) + 1) * sizeof *ks);
    int n = session_find_steps(s, spec, what, ks, d);
    for (int i = 0; i < n; i++)
        on[ks[i]] = true;
    free(ks);
    if (n > 0 && on[0] && strstr(what, "before")) {
        diag_error(d, NULL, "%s=%s: step 0 is the import: no IR comes before it", what, spec);
        return false;
    }
    return n > 0;
}

static void print_changed(const Session *s, int k, PrintChanged mode) {
    const Step *st = &s->steps[k];
    if (k == 0) {
        dump_header(s, 0, "at", "");
        dump_text(step_text(st));
        return;
    }
    if (!st->changed && !st->failed) {
        dump_header(s, k, "after", ": no change");
        return;
    }
    dump_header(s, k, "after", st->failed ? " (failed)" : "");
    if (mode == CHANGED_FULL) {
        dump_text(step_text(st));
        return;
    }
    char na[112], nb[112], label[96];
    session_step_label(s, k - 1, label, sizeof label);
    snprintf(na, sizeof na, "step %d %s", k - 1, label);
    session_step_label(s, k, label, sizeof label);
    snprintf(nb, sizeof nb, "step %d %s", k, label);
    StrBuf sb;
    sb_init(&sb);
    textdiff_unified(text_at(&s->steps[k - 1], st->level), step_text(st), na, nb, 3, &sb);
    dump_text(sb.len ? sb_str(&sb) : "(the text did not change)\n");
    sb_free(&sb);
}

/* The dumps a step asks for, on stderr (stdout keeps the final result). */
static void print_steps(const Session *s, const OptArgs *oa, const bool *after,
                        const bool *before) {
    for (int k = 0; k < s->nsteps; k++) {
        const Step *st = &s->steps[k];
        if (oa->print_changed) {
            print_changed(s, k, oa->print_changed);
            continue;
        }
        if (k > 0 && before[k]) {
            dump_header(s, k, "before", "");
            dump_text(text_at(&s->steps[k - 1], s->steps[k - 1].level));
        }
        if (!(oa->print_after_all && k > 0) && !after[k])
            continue;
        if (k == 0 || st->changed || st->failed) {
            dump_header(s, k, "after", st->failed ? " (failed)" : "");
            dump_text(step_text(st));
        } else {
            dump_header(s, k, "after", ": no change");
        }
    }
    fflush(stderr);
}

/* --dump-dir: DIR/NN-pass.hl|.lir|.ll for every step that ran, written all
 * or none (file_write_all); a folder it had to make goes again on failure. */
static bool dump_dir(const Session *s, const char *dir, DiagList *d) {
    struct stat st;
    bool made = false;
    if (!stat(dir, &st) && !S_ISDIR(st.st_mode)) {
        diag_error(d, NULL, "opt: --dump-dir: '%s' exists and is not a directory", dir);
        return false;
    }
    if (stat(dir, &st)) {
        if (mkdir(dir, 0777)) {
            diag_error(d, NULL, "opt: --dump-dir: cannot create '%s': %s", dir, strerror(errno));
            return false;
        }
        made = true;
    }
    FileOut *files = calloc((size_t)s->nsteps + 1, sizeof *files);
    for (int k = 0; k < s->nsteps; k++) {
        const Step *sp = &s->steps[k];
        const char *ext = sp->level == PASS_CODEGEN ? "ll" : sp->level == PASS_LIR ? "lir" : "hl";
        size_t n = strlen(dir) + strlen(sp->name) + 32;
        char *path = malloc(n);
        snprintf(path, n, "%s/%02d-%s.%s", dir, k, sp->name, ext);
        const char *text = step_text(sp);
        files[k] = (FileOut){path, text, strlen(text)};
    }
    bool ok = file_write_all(files, s->nsteps, d);
    for (int k = 0; k < s->nsteps; k++)
        free((char *)files[k].path);
    free(files);
    if (!ok && made)
        rmdir(dir);
    return ok;
}

static void print_timing(const Session *s) {
    double total = 0, verify = 0;
    for (int i = 0; i < s->nsteps; i++) {
        total += s->steps[i].seconds + s->steps[i].verify_seconds;
        verify += s->steps[i].verify_seconds;
    }
    fprintf(stderr, "===-------------------------------------------===\n");
    fprintf(stderr, "  pass timing (total %.4f s)\n", total);
    fprintf(stderr, "  %10s %7s  %s\n", "seconds", "share", "step");
    for (int i = 0; i < s->nsteps; i++) {
        const Step *st = &s->steps[i];
        fprintf(stderr, "  %10.4f %6.1f%%  %s\n", st->seconds,
                total > 0 ? 100 * st->seconds / total : 0, st->name);
    }
    if (verify > 0) /* what --no-verify saves */
        fprintf(stderr, "  %10.4f %6.1f%%  (the verifier, after every pass)\n", verify,
                total > 0 ? 100 * verify / total : 0);
}

static void print_stats(const Session *s) {
    fprintf(stderr, "===-------------------------------------------===\n");
    fprintf(stderr, "  pass statistics\n");
    for (int i = 0; i < s->nsteps; i++) {
        const Step *st = &s->steps[i];
        if (i == 0 && st->level == PASS_LIR) {
            fprintf(stderr, "  %-16s %d instructions\n", st->name, st->ninstrs);
            continue;
        }
        if (i == 0) {
            fprintf(stderr, "  %-16s %d nodes, %d constants\n", st->name, st->nnodes,
                    st->nconsts);
            continue;
        }
        fprintf(stderr, "  %-16s %s", st->name,
                st->changed ? "" : st->nstats ? "no change: " : "no change");
        for (int k = 0; k < st->nstats; k++)
            fprintf(stderr, "%s%s %ld", k ? ", " : "", st->stats[k].name, st->stats[k].count);
        if (st->changed && st->level == PASS_LIR)
            fprintf(stderr, "%s(%d instructions, +%d -%d lines)", st->nstats ? "  " : "",
                    st->ninstrs, st->lines_added, st->lines_removed);
        else if (st->changed)
            fprintf(stderr, "%s(%d nodes, +%d -%d lines)", st->nstats ? "  " : "", st->nnodes,
                    st->lines_added, st->lines_removed);
        fputc('\n', stderr);
        if (st->level == PASS_SCHEDULE) {
            fprintf(stderr, "  %-16s peak live bytes: given order %lld, chosen order %lld\n", "",
                    (long long)st->peak_before, (long long)st->peak_after);
            if (st->one_order)
                fprintf(stderr, "  %-16s (the only order: every node uses the one before it)\n",
                        "");
        }
        if (st->planned)
            fprintf(stderr, "  %-16s arena %lld bytes, lower bound %lld bytes, naive %lld bytes\n",
                    "", (long long)st->arena_bytes, (long long)st->lower_bound,
                    (long long)st->naive_bytes);
    }
}

static int opt_option(OptionId id, const char *v, void *ctx, DiagList *d) {
    OptArgs *oa = ctx;
    switch (id) {
    case OPT_PRINT_AFTER_ALL: oa->print_after_all = true; break;
    case OPT_PRINT_AFTER: oa->print_after = v; break;
    case OPT_PRINT_BEFORE: oa->print_before = v; break;
    case OPT_PRINT_CHANGED:
        if (v && strcmp(v, "diff")) {
            diag_error(d, NULL, "opt: --print-changed takes nothing or '=diff', not '=%s'", v);
            return -1;
        }
        oa->print_changed = v ? CHANGED_DIFF : CHANGED_FULL;
        break;
    case OPT_DUMP_DIR: oa->dump_dir = v; break;
    case OPT_TIME_PASSES: oa->time_passes = true; break;
    case OPT_STATS: oa->stats = true; break;
    case OPT_SPLIT_INPUT_FILE: oa->split = true; break;
    case OPT_EMIT: {
        static const char *const emits[] = {"graph", "lir", "llvm", "llvm-opt", "asm"};
        oa->emit = v;
        for (size_t k = 0; k < sizeof emits / sizeof emits[0]; k++)
            if (!strcmp(oa->emit, emits[k]))
                return 1;
        diag_error(d, NULL, "opt: --emit takes graph, lir, llvm, llvm-opt or asm, not '%s'",
                   oa->emit);
        return -1;
    }
    default: return 0;
    }
    return 1;
}

static bool opt_one(Session *s, const OptArgs *oa, DiagList *d) {
    const char *emit = oa->emit ? oa->emit : s->from_lir ? "lir" : "graph";
    bool native = strcmp(emit, "graph") && strcmp(emit, "lir");
    bool ok = native ? session_want_codegen(s) : strcmp(emit, "lir") || session_want_lir(s);
    if (ok && s->from_lir && !strcmp(emit, "graph")) {
        diag_error(d, NULL, "opt: --emit=graph: '%s' is low-level IR, which has no graph "
                   "(--emit=lir, llvm, llvm-opt or asm)", s->path);
        ok = false;
    }
    /* The steps named are checked against the pipeline before it runs. */
    bool *after = calloc((size_t)session_nplanned(s) + 1, sizeof *after);
    bool *before = calloc((size_t)session_nplanned(s) + 1, sizeof *before);
    ok = ok && mark_steps(s, oa->print_after, "opt: --print-after", after, d) &&
         mark_steps(s, oa->print_before, "opt: --print-before", before, d);
    bool ran = ok;
    ok = ok && session_run(s);
    if (ran)
        print_steps(s, oa, after, before);
    free(after);
    free(before);
    if (ran && oa->dump_dir)
        ok = dump_dir(s, oa->dump_dir, d) && ok;
    if (ok) {
        if (!strcmp(emit, "asm")) {
            StrBuf sb;
            sb_init(&sb);
            ok = s->module && s->opt.backend->emit(s->module, true, &sb, d);
            fputs(sb_str(&sb), stdout);
            sb_free(&sb);
        } else {
            fputs(emitted(s, emit), stdout);
        }
    }
    fflush(stdout);
    if (oa->time_passes)
        print_timing(s);
    if (oa->stats)
        print_stats(s);
    diag_append(d, &s->diags);
    session_free(s);
    return ok;
}

int cmd_opt(int argc, char **argv) {
    DiagList d;
    diag_init(&d, NULL);
    CommonArgs ca = {0};
    OptArgs oa = {0};
    bool split = false;
    int status = 1;
    if (!args_parse(&ca, argc, argv, "opt", opt_option, &oa, &d))
        goto done;
    if (oa.emit && strcmp(oa.emit, "graph") && strcmp(oa.emit, "lir")) {
        char what[64];
        snprintf(what, sizeof what, "opt: --emit=%s", oa.emit);
        if (!args_want_compiling(&ca, what, &d))
            goto done;
    }
    split = oa.split;
    if (split && oa.dump_dir) {
        diag_error(&d, NULL, "opt: --dump-dir takes one model, not the cases of "
                   "--split-input-file (their steps would share file names)");
        goto done;
    }
    if (!split) {
        KnownInput known[MAX_CLI_INPUTS];
        Session *s = args_open_session(&ca, "-O2", known, &d);
        status = s && opt_one(s, &oa, &d) ? 0 : 1;
        goto done;
    }
    size_t len;
    char *text = file_read_all(ca.model, &len, &d);
    if (text && memchr(text, 0, len)) {
        diag_error(&d, NULL, "opt: --split-input-file: '%s' contains a NUL byte: a binary file, "
                   "not text IR", ca.model);
        free(text);
        text = NULL;
    }
    if (!text)
        goto done;
    char **chunks;
    int n = args_split_chunks(text, &chunks);
    status = 0;
    for (int i = 0; i < n; i++) {
        if (i)
            printf("// -----\n");
        Session *s = args_open_session_text(&ca, "-O2", chunks[i], &d);
        if (!s || !opt_one(s, &oa, &d))
            status = 1;
        fflush(stdout);
        cli_report(&d); /* in order with the chunk's output */
        diag_clear(&d);
        free(chunks[i]);
    }
    free(chunks);
    free(text);
done:
    cli_report(&d);
    args_free(&ca);
    diag_free(&d);
    return status;
}

int cmd_targets(int argc, char **argv) {
    if (argc > 1) {
        fprintf(stderr, "error: targets: takes no arguments, got '%s'\n", argv[1]);
        return 1;
    }
    for (int i = 0; backend_at(i); i++) {
        const Backend *b = backend_at(i);
        printf("%-12s %s\n", b->name, b->summary);
        if (!b->list_targets)
            continue;
        StrBuf sb;
        sb_init(&sb);
        b->list_targets(&sb);
        /* Indented under its backend. */
        for (const char *line = sb_str(&sb); *line;) {
            const char *end = strchr(line, '\n');
            size_t n = end ? (size_t)(end - line) : strlen(line);
            printf("  %.*s\n", (int)n, line);
            line += n + (end != NULL);
        }
        sb_free(&sb);
    }
    return 0;
}

int cmd_passes(int argc, char **argv) {
    if (argc > 1) {
        fprintf(stderr, "error: passes: takes no arguments, got '%s'\n", argv[1]);
        return 1;
    }
    for (int i = 0; i < pass_count(); i++) {
        const PassInfo *p = pass_at(i);
        printf("%-16s %-9s %s\n", p->name, pass_level_name(p->level), p->description);
    }
    printf("\npipelines:\n");
    const char *levels[] = {"-O0", "-O1", "-O2"};
    for (int l = 0; l < 3; l++) {
        const char *const *names = pipeline_by_level(levels[l]);
        printf("  %s:", levels[l]);
        for (int i = 0; names[i]; i++)
            printf("%s%s", i ? "," : " ", names[i]);
        printf("%s\n", names[0] ? "" : " (none: the imported graph as is)");
    }
    return 0;
}
