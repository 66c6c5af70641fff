/* glowc opt: runs a pipeline over a model and prints the result as text IR;
 * glowc passes: lists the passes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu.h"
#include "core/file.h"
#include "core/print.h"
#include "tui/args.h"

typedef struct OptArgs {
    const char *emit; /* graph, lir, llvm, llvm-opt or asm */
    bool split;       /* --split-input-file */
    bool print_after_all;
    const char *print_after, *print_before;
    bool time_passes, stats;
} OptArgs;

/* A step shows the IR at its own level. */
static const char *step_text(const Step *st) {
    const char *t = st->level == PASS_CODEGEN ? st->llvm_text
                    : st->level == PASS_LIR   ? st->lir_text
                                              : st->text;
    return t ? t : "";
}

/* The last step that has the IR --emit asks for. */
static const char *emitted(const Session *s, const char *emit) {
    for (int i = s->nsteps - 1; i >= 0; i--) {
        const Step *st = &s->steps[i];
        if (!strcmp(emit, "graph") && st->text)
            return st->text;
        if (!strcmp(emit, "lir") && st->lir_text)
            return st->lir_text;
        if (!strcmp(emit, "llvm") && st->llvm_text && !strcmp(st->name, "codegen"))
            return st->llvm_text;
        if (!strcmp(emit, "llvm-opt") && st->llvm_text && !strcmp(st->name, "llvm-opt"))
            return st->llvm_text;
    }
    return "";
}

static void print_step_text(const Step *st) {
    printf("// after %s\n", st->name);
    fputs(step_text(st), stdout);
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
        fprintf(stderr, "  %-16s %s", st->name, st->changed ? "" : "no change");
        for (int k = 0; k < st->nstats; k++)
            fprintf(stderr, "%s%s %ld", k ? ", " : "", st->stats[k].name, st->stats[k].count);
        if (st->changed && st->level == PASS_LIR)
            fprintf(stderr, "%s(%d instructions, +%d -%d lines)", st->nstats ? "  " : "",
                    st->ninstrs, st->lines_added, st->lines_removed);
        else if (st->changed)
            fprintf(stderr, "%s(%d nodes, +%d -%d lines)", st->nstats ? "  " : "", st->nnodes,
                    st->lines_added, st->lines_removed);
        fputc('\n', stderr);
        if (!strcmp(st->name, "schedule")) {
            fprintf(stderr, "  %-16s peak live bytes: given order %lld, chosen order %lld\n", "",
                    (long long)st->peak_before, (long long)st->peak_after);
            if (st->one_order)
                fprintf(stderr, "  %-16s (the only order: every node uses the one before it)\n",
                        "");
        }
        if (st->lir && st->lir->allocated && !strcmp(st->name, "allocate"))
            fprintf(stderr, "  %-16s arena %lld bytes, lower bound %lld bytes, naive %lld bytes\n",
                    "", (long long)st->arena_bytes, (long long)st->lower_bound,
                    (long long)st->naive_bytes);
    }
}

static void print_steps(const Session *s, const OptArgs *oa) {
    for (int i = 1; i < s->nsteps; i++) {
        const Step *st = &s->steps[i];
        if (oa->print_before && !strcmp(oa->print_before, st->name)) {
            printf("// before %s\n", st->name);
            fputs(step_text(&s->steps[i - 1]), stdout);
        }
        bool after = oa->print_after_all || (oa->print_after && !strcmp(oa->print_after, st->name));
        if (!after)
            continue;
        if (st->changed || st->failed)
            print_step_text(st);
        else
            printf("// after %s: no change\n", st->name);
    }
}

static int opt_option(int argc, char **argv, int *i, void *ctx, DiagList *d) {
    OptArgs *oa = ctx;
    const char *a = argv[*i];
    if (!strcmp(a, "--print-after-all")) {
        oa->print_after_all = true;
    } else if (!strncmp(a, "--print-after=", 14) || !strncmp(a, "--print-before=", 15)) {
        bool after = a[8] == 'a';
        const char *name = strchr(a, '=') + 1;
        if (!pass_lookup(name, after ? "opt: --print-after" : "opt: --print-before", d))
            return -1;
        *(after ? &oa->print_after : &oa->print_before) = name;
    } else if (!strcmp(a, "--time-passes")) {
        oa->time_passes = true;
    } else if (!strcmp(a, "--stats")) {
        oa->stats = true;
    } else if (!strcmp(a, "--split-input-file")) {
        oa->split = true;
    } else if (!strncmp(a, "--emit=", 7)) {
        static const char *const emits[] = {"graph", "lir", "llvm", "llvm-opt", "asm"};
        oa->emit = a + 7;
        for (size_t k = 0; k < sizeof emits / sizeof emits[0]; k++)
            if (!strcmp(oa->emit, emits[k]))
                return 1;
        diag_error(d, NULL, "opt: --emit takes graph, lir, llvm, llvm-opt or asm, not '%s'",
                   oa->emit);
        return -1;
    } else {
        return 0;
    }
    (void)argc;
    return 1;
}

/* --print-after=P and --print-before=P name a pass of the pipeline: one
 * that is not would print nothing. */
static bool in_pipeline(const Session *s, const char *option, const char *name, DiagList *d) {
    if (!name)
        return true;
    for (int i = 0; i < s->npipeline; i++)
        if (!strcmp(s->pipeline[i], name))
            return true;
    StrBuf sb;
    sb_init(&sb);
    for (int i = 0; i < s->npipeline; i++)
        sb_printf(&sb, "%s%s", i ? ", " : "", s->pipeline[i]);
    diag_error(d, NULL, "opt: %s=%s: the pipeline has no pass '%s' (its passes: %s)", option, name,
               name, s->npipeline ? sb_str(&sb) : "none");
    sb_free(&sb);
    return false;
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
    ok = ok && in_pipeline(s, "--print-after", oa->print_after, d) &&
         in_pipeline(s, "--print-before", oa->print_before, d);
    ok = ok && session_run(s);
    print_steps(s, oa);
    if (ok && !oa->print_after_all && !oa->print_after && !oa->print_before) {
        if (!strcmp(emit, "asm")) {
            StrBuf sb;
            sb_init(&sb);
            ok = s->cpu && cpu_emit(s->cpu, true, &sb, d);
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
        if (ca.backend && strcmp(ca.backend, "cpu")) {
            diag_error(&d, NULL, "opt: --emit=%s comes from the cpu backend, not '%s'", oa.emit,
                       ca.backend);
            goto done;
        }
        ca.backend = "cpu";
    }
    split = oa.split;
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
