/* glowc repl: the explorer as commands, one per line, from the terminal
 * (with line editing), a script (-c) or standard input. Output is plain text
 * on stdout, errors on stderr; reading a script, each command is echoed as
 * "> command" first, so a transcript reads (and FileChecks) in order, and
 * the exit status says whether every command succeeded. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tui/cli.h"
#include "tui/lineedit.h"
#include "tui/repl.h"
#include "tui/term_signal.h"

enum { MAX_WORDS = 64 };

typedef struct Repl {
    Explorer *e;
    bool quit;
} Repl;

typedef bool (*CommandFn)(Repl *r, int argc, char **argv, StrBuf *out, DiagList *d);

typedef struct ReplCommand {
    const char *name;
    CommandFn run;
    int min_args, max_args; /* words after the name; -1: any */
    const char *usage;
    const char *help;
} ReplCommand;

static const ReplCommand *commands(int *n);

/* ---- the commands ---------------------------------------------------------------- */

static bool do_load(Repl *r, int argc, char **argv, StrBuf *out, DiagList *d) {
    return explore_load(r->e, argv[1], out, d);
}

static bool do_pipeline(Repl *r, int argc, char **argv, StrBuf *out, DiagList *d) {
    return explore_set_pipeline(r->e, argv[1], out, d);
}

static bool do_steps(Repl *r, int argc, char **argv, StrBuf *out, DiagList *d) {
    explore_steps(r->e, out);
    return true;
}

static bool do_step(Repl *r, int argc, char **argv, StrBuf *out, DiagList *d) {
    return explore_goto(r->e, argv[1], out, d);
}

static bool move(Repl *r, int dir, int argc, char **argv, StrBuf *out, DiagList *d) {
    long long n = 1;
    if (!r->e->s) {
        diag_error(d, NULL, "no model loaded (use: load FILE)");
        return false;
    }
    if (argc > 1 && !cli_parse_int(argv[1], 1, INT_MAX, &n)) {
        diag_error(d, NULL, "%s takes a positive count, not '%s'", argv[0], argv[1]);
        return false;
    }
    if (!explore_move(r->e, dir * (int)n, false)) {
        diag_error(d, NULL, "already at the %s step", dir > 0 ? "last" : "first");
        return false;
    }
    explore_where(r->e, out);
    sb_putc(out, '\n');
    return true;
}

static bool do_next(Repl *r, int argc, char **argv, StrBuf *out, DiagList *d) {
    return move(r, 1, argc, argv, out, d);
}

static bool do_prev(Repl *r, int argc, char **argv, StrBuf *out, DiagList *d) {
    return move(r, -1, argc, argv, out, d);
}

/* A diff as the REPL prints it: the changed part of each changed line
 * marked, in colour when the REPL writes to a terminal that has it (never
 * in the explorer's pane, which draws its own). */
static void print_diff(const Repl *r, const StrBuf *diff, StrBuf *out) {
    explore_mark_changes(sb_str(diff), r->e->ansi_diffs, out);
}

static bool do_diff(Repl *r, int argc, char **argv, StrBuf *out, DiagList *d) {
    ExploreView base = VIEW_COUNT;
    if (argc > 3 && (!explore_view_from_name(argv[3], &base) || base == VIEW_DIFF)) {
        diag_error(d, NULL, "diff: unknown view '%s'; the views are graph, dot, lir, mem, llvm, "
                            "stats", argv[3]);
        return false;
    }
    int ka = explore_find_step(r->e, argv[1], "diff", d);
    int kb = ka < 0 ? -1 : explore_find_step(r->e, argv[2], "diff", d);
    if (kb < 0)
        return false;
    StrBuf diff;
    sb_init(&diff);
    bool ok = explore_diff_steps(r->e, ka, kb, base, 80, &diff, d);
    print_diff(r, &diff, out);
    sb_free(&diff);
    return ok;
}

static bool do_show(Repl *r, int argc, char **argv, StrBuf *out, DiagList *d) {
    ExploreView v, base = VIEW_COUNT;
    if (!explore_view_from_name(argv[1], &v) || (argc > 2 && !explore_view_from_name(argv[2], &base))) {
        diag_error(d, NULL, "show: unknown view '%s'; the views are graph, dot, lir, mem, llvm, "
                            "diff [VIEW], stats, profile, quant",
                   argc > 2 && explore_view_from_name(argv[1], &v) ? argv[2] : argv[1]);
        return false;
    }
    if (argc > 2 && v != VIEW_DIFF) {
        diag_error(d, NULL, "show: only 'diff' takes a second view (the one to diff)");
        return false;
    }
    if (v != VIEW_DIFF)
        return explore_view(r->e, v, base, 80, out, d);
    StrBuf diff;
    sb_init(&diff);
    bool ok = explore_view(r->e, v, base, 80, &diff, d);
    print_diff(r, &diff, out);
    sb_free(&diff);
    return ok;
}

static bool do_node(Repl *r, int argc, char **argv, StrBuf *out, DiagList *d) {
    return explore_node(r->e, argv[1], out, d);
}

static bool do_svg(Repl *r, int argc, char **argv, StrBuf *out, DiagList *d) {
    bool mem = argc > 2 && !strcmp(argv[2], "--mem");
    if (argc > 2 && !mem) {
        diag_error(d, NULL, "svg: unknown option '%s' (svg FILE [--mem])", argv[2]);
        return false;
    }
    return explore_write_picture(r->e, argv[1], mem, out, d);
}

/* "--input NAME=FILE" (or --input=NAME=FILE) pairs: the NAME=FILE parts. */
static bool input_specs(int argc, char **argv, char **specs, int *n, DiagList *d) {
    *n = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--input") && i + 1 < argc)
            specs[(*n)++] = argv[++i];
        else if (!strncmp(argv[i], "--input=", 8))
            specs[(*n)++] = argv[i] + 8;
        else {
            diag_error(d, NULL, "%s: expected --input NAME=FILE.npy, got '%s'", argv[0], argv[i]);
            return false;
        }
    }
    return true;
}

static bool do_run(Repl *r, int argc, char **argv, StrBuf *out, DiagList *d) {
    char *specs[MAX_WORDS];
    int n;
    return input_specs(argc, argv, specs, &n, d) && explore_run(r->e, specs, n, out, d);
}

/* compare [--rtol R] [--atol A] [--input ...]: the tolerance options are
 * taken out, the rest are inputs. */
static bool do_compare(Repl *r, int argc, char **argv, StrBuf *out, DiagList *d) {
    char *specs[MAX_WORDS], *rest[MAX_WORDS];
    int n, nrest = 0;
    Tolerance tol = r->e->tol;
    for (int i = 0; i < argc; i++) {
        bool rtol = !strcmp(argv[i], "--rtol");
        if ((!rtol && strcmp(argv[i], "--atol")) || i == 0) {
            rest[nrest++] = argv[i];
            continue;
        }
        if (!tolerance_set(&tol, rtol, i + 1 < argc ? argv[i + 1] : NULL, "compare", d))
            return false;
        i++;
    }
    if (!input_specs(nrest, rest, specs, &n, d))
        return false;
    if (!r->e->s)
        return explore_compare(r->e, specs, n, out, d); /* which says there is no model */
    return explore_compare_step(r->e, r->e->s->current, &tol, specs, n, out, d) >= 0;
}

static bool do_bisect(Repl *r, int argc, char **argv, StrBuf *out, DiagList *d) {
    char *specs[MAX_WORDS];
    int n;
    return input_specs(argc, argv, specs, &n, d) && explore_bisect(r->e, specs, n, out, d);
}

static bool do_compile(Repl *r, int argc, char **argv, StrBuf *out, DiagList *d) {
    if (strcmp(argv[1], "-o")) {
        diag_error(d, NULL, "compile: usage: compile -o FILE");
        return false;
    }
    return explore_compile(r->e, argv[2], out, d);
}

static void list_commands(StrBuf *out) {
    int n;
    const ReplCommand *c = commands(&n);
    for (int i = 0; i < n; i++)
        sb_printf(out, "  %-34s %s\n", c[i].usage, c[i].help);
}

static bool do_help(Repl *r, int argc, char **argv, StrBuf *out, DiagList *d) {
    sb_append(out, "commands:\n");
    list_commands(out);
    sb_append(out, "A step is a number, PASS#K (the K-th run of PASS) or a pass name (its next\n"
                   "run). 'show diff' diffs the step's own IR (or VIEW) against the step before;\n"
                   "the changed part of a changed line is marked [-so-] and {+so+}. Lines\n"
                   "starting with # are comments.\n");
    return true;
}

static bool do_quit(Repl *r, int argc, char **argv, StrBuf *out, DiagList *d) {
    r->quit = true;
    return true;
}

static const ReplCommand command_table[] = {
    {"load", do_load, 1, 1, "load FILE", "load a model (.onnx, .hl, .lir) and run the pipeline"},
    {"pipeline", do_pipeline, 1, 1, "pipeline -O0|-O1|-O2|a,b,c", "choose the pipeline and run it"},
    {"steps", do_steps, 0, 0, "steps", "list the steps (* marks the current one)"},
    {"step", do_step, 1, 1, "step N|NAME", "go to a step"},
    {"next", do_next, 0, 1, "next [N]", "go N steps forward"},
    {"prev", do_prev, 0, 1, "prev [N]", "go N steps back"},
    {"show", do_show, 1, 2, "show VIEW, show diff [VIEW]",
     "a view of the current step: graph dot lir mem llvm stats profile quant"},
    {"diff", do_diff, 2, 3, "diff A B [VIEW]",
     "step A's view (default: what B did) against step B's"},
    {"node", do_node, 1, 1, "node NAME", "a node, its operands and users, its history"},
    {"svg", do_svg, 1, 2, "svg FILE [--mem]",
     "write the current step's graph (or memory map) as .svg/.png/.dot"},
    {"run", do_run, 0, -1, "run [--input NAME=FILE.npy]...",
     "run the current step; outputs and difference from step 0"},
    {"compare", do_compare, 0, -1, "compare [--rtol R] [--atol A] [--input NAME=FILE.npy]...",
     "every value of the current step against step 0"},
    {"bisect", do_bisect, 0, -1, "bisect [--input NAME=FILE.npy]...",
     "the first step whose outputs leave step 0's"},
    {"compile", do_compile, 2, 2, "compile -o FILE", "write the generated code (needs codegen)"},
    {"help", do_help, 0, 1, "help", "this list"},
    {"quit", do_quit, 0, 0, "quit", "leave (also: exit, end of input)"},
    {"exit", do_quit, 0, 0, "exit", "leave"},
};

static const ReplCommand *commands(int *n) {
    *n = (int)(sizeof command_table / sizeof command_table[0]);
    return command_table;
}

/* ---- dispatch -------------------------------------------------------------------- */

/* Levenshtein distance, for "did you mean". */
static int distance(const char *a, const char *b) {
    int la = (int)strlen(a), lb = (int)strlen(b);
    if (la > 30 || lb > 30)
        return 99;
    int row[32];
    for (int j = 0; j <= lb; j++)
        row[j] = j;
    for (int i = 1; i <= la; i++) {
        int diag = row[0];
        row[0] = i;
        for (int j = 1; j <= lb; j++) {
            int up = row[j];
            int best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

static void unknown_command(const char *word, DiagList *d) {
    int n;
    const ReplCommand *c = commands(&n);
    StrBuf names;
    sb_init(&names);
    const char *near = NULL;
    for (int i = 0; i < n; i++) {
        sb_printf(&names, "%s%s", i ? ", " : "", c[i].name);
        if (!near && distance(word, c[i].name) <= 2)
            near = c[i].name;
    }
    if (near)
        diag_error(d, NULL, "unknown command '%s' (did you mean '%s'?); the commands are: %s", word,
                   near, sb_str(&names));
    else
        diag_error(d, NULL, "unknown command '%s'; the commands are: %s", word, sb_str(&names));
    sb_free(&names);
}

/* Splits a line into words: blanks separate, "double quotes" group. */
static int split_words(char *line, char **words) {
    int n = 0;
    char *p = line;
    while (*p && n < MAX_WORDS) {
        while (*p == ' ' || *p == '\t')
            p++;
        if (!*p || *p == '#')
            break;
        bool quoted = *p == '"';
        char *w = quoted ? ++p : p;
        while (*p && (quoted ? *p != '"' : *p != ' ' && *p != '\t'))
            p++;
        if (*p)
            *p++ = 0;
        words[n++] = w;
    }
    return n;
}

static bool dispatch(Repl *r, int argc, char **argv, StrBuf *out, DiagList *d) {
    int n;
    const ReplCommand *c = commands(&n);
    for (int i = 0; i < n; i++) {
        if (strcmp(argv[0], c[i].name))
            continue;
        int nargs = argc - 1;
        if (nargs < c[i].min_args || (c[i].max_args >= 0 && nargs > c[i].max_args)) {
            diag_error(d, NULL, "usage: %s", c[i].usage);
            return false;
        }
        return c[i].run(r, argc, argv, out, d);
    }
    unknown_command(argv[0], d);
    return false;
}

bool repl_execute(Explorer *e, char *line, StrBuf *out, DiagList *d, bool *quit) {
    char *words[MAX_WORDS];
    int argc = split_words(line, words);
    if (!argc)
        return true;
    Repl r = {e, false};
    bool ok = dispatch(&r, argc, words, out, d);
    if (r.quit)
        *quit = true;
    return ok;
}

const char *repl_command_name(int i) {
    int n;
    const ReplCommand *c = commands(&n);
    return i >= 0 && i < n ? c[i].name : NULL;
}

/* Runs one line; false if its command failed. */
static bool run_line(Repl *r, char *line, bool echo) {
    size_t len = strlen(line);
    while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
        line[--len] = 0;
    if (echo && line[0] && line[strspn(line, " \t")] != '#')
        printf("> %s\n", line + strspn(line, " \t"));
    StrBuf out;
    sb_init(&out);
    DiagList d;
    diag_init(&d, NULL);
    bool ok = repl_execute(r->e, line, &out, &d, &r->quit);
    fputs(sb_str(&out), stdout);
    fflush(stdout);
    cli_report(&d);
    fflush(stderr);
    sb_free(&out);
    diag_free(&d);
    return ok;
}

/* ---- input sources --------------------------------------------------------------- */

/* A script that cannot be read (a directory) is an error, not an empty one. */
static bool run_stream(Repl *r, FILE *f, const char *name) {
    bool ok = true;
    char *line = NULL;
    size_t cap = 0;
    while (!r->quit && getline(&line, &cap, f) >= 0)
        ok &= run_line(r, line, true);
    free(line);
    if (ferror(f)) {
        fprintf(stderr, "error: repl: cannot read script '%s': %s\n", name, strerror(errno));
        return false;
    }
    return ok;
}

static void run_terminal(Repl *r) {
    LineEdit le;
    lineedit_init(&le, STDIN_FILENO, STDOUT_FILENO);
    TermSignals ts;
    term_signal_install(&ts, false);
    printf("glowc repl: 'help' lists the commands, 'quit' leaves\n");
    fflush(stdout);
    while (!r->quit && !term_signal_caught()) {
        StrBuf prompt;
        sb_init(&prompt);
        sb_append(&prompt, "glowc");
        if (r->e->s)
            sb_printf(&prompt, " [%d %s]", r->e->s->current, r->e->s->steps[r->e->s->current].name);
        sb_append(&prompt, "> ");
        char *line = lineedit_read(&le, sb_str(&prompt));
        sb_free(&prompt);
        if (!line)
            break;
        lineedit_remember(&le, line);
        run_line(r, line, false);
        free(line);
    }
    lineedit_free(&le);
    term_signal_finish(&ts);
}

static int script_option(OptionId id, const char *v, void *ctx, DiagList *d) {
    if (id != OPT_SCRIPT)
        return 0;
    *(const char **)ctx = v;
    return 1;
}

int cmd_repl(int argc, char **argv) {
    DiagList d;
    diag_init(&d, NULL);
    CommonArgs ca = {0};
    const char *script = NULL;
    int status = 1;
    if (!args_parse(&ca, argc, argv, "repl", script_option, &script, &d))
        goto done;
    FILE *in = script ? fopen(script, "r") : NULL;
    if (script && !in) {
        diag_error(&d, NULL, "repl: cannot open script '%s': %s", script, strerror(errno));
        goto done;
    }
    Explorer e;
    Repl r = {&e, false};
    explore_init(&e, &ca, ca.pipeline);
    const char *term = getenv("TERM");
    e.ansi_diffs = isatty(STDOUT_FILENO) && !getenv("NO_COLOR") && term && strcmp(term, "dumb");
    bool ok = true;
    if (ca.model) {
        StrBuf out;
        sb_init(&out);
        ok = explore_load(&e, ca.model, &out, &d);
        fputs(sb_str(&out), stdout);
        fflush(stdout);
        sb_free(&out);
        cli_report(&d);
        diag_clear(&d);
    }
    if (in)
        ok &= run_stream(&r, in, script);
    else if (isatty(STDIN_FILENO) && isatty(STDOUT_FILENO))
        run_terminal(&r);
    else
        ok &= run_stream(&r, stdin, "standard input");
    if (in)
        fclose(in);
    explore_free(&e);
    status = ok ? 0 : 1;
done:
    cli_report(&d);
    args_free(&ca);
    diag_free(&d);
    return status;
}
