/* glowc update-checks: writes the CHECK lines of a .hl or .lir fixture from
 * what its RUN lines print now, as LLVM's update_test_checks.py does, for a
 * person to review (git diff) rather than to trust. A RUN line it
 * understands has the shape
 *     [not] glowc SUBCOMMAND ARGS... %s [2>&1] | FileCheck %s [--check-prefix=P]
 * It runs that glowc (this binary) on the file, cuts the output at the
 * "// -----" lines when the command splits its input (--split-input-file),
 * and puts before each case's IR a block of P lines: P-LABEL at each
 * function, P-NEXT for the lines after, P-EMPTY for blank ones, numeric
 * value ids captured ([[V7:%[0-9]+]]) so that a renumbering does not break
 * them. The case's old P lines go. Other RUN lines are left alone, with a
 * note. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/file.h"
#include "tui/args.h"

enum { MAX_RUN_WORDS = 64, MAX_RUNS = 16 };

typedef struct RunLine {
    int line;                    /* 1-based, for messages */
    char *words[MAX_RUN_WORDS];  /* glowc's arguments, "%s" as is */
    int nwords;
    bool expect_fail, merge_stderr, split;
    char prefix[64];
} RunLine;

typedef struct Lines {
    char **v;
    int n, cap;
} Lines;

static void lines_push(Lines *l, char *s) {
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 64;
        l->v = realloc(l->v, (size_t)l->cap * sizeof *l->v);
    }
    l->v[l->n++] = s;
}

static void lines_free(Lines *l) {
    for (int i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
}

static Lines split_lines(const char *text) {
    Lines l = {0};
    for (const char *p = text; *p;) {
        size_t n = strcspn(p, "\n");
        lines_push(&l, strndup(p, n));
        p += n + (p[n] == '\n');
    }
    return l;
}

static bool is_separator(const char *l) {
    return !strncmp(l, "// -----", 8);
}

/* ---- RUN lines ---------------------------------------------------------------------- */

static int split_words(char *s, char **w, int max) {
    int n = 0;
    for (char *tok = strtok(s, " \t"); tok && n < max; tok = strtok(NULL, " \t"))
        w[n++] = tok;
    return n;
}

/* Parses "// RUN: ..." into r; false (with *why) when it is not the shape
 * this command rewrites. */
static bool parse_run(const char *line, RunLine *r, char **copy, const char **why) {
    const char *body = strstr(line, "RUN:") + 4;
    if (strchr(body, '\\')) {
        *why = "continued on the next line";
        return false;
    }
    const char *bar = strchr(body, '|');
    if (!bar || strchr(bar + 1, '|')) {
        *why = "not 'glowc ... | FileCheck %s'";
        return false;
    }
    *copy = strndup(body, (size_t)(bar - body));
    char *check = strdup(bar + 1), *cw[8];
    int nc = split_words(check, cw, 8);
    bool ok = nc >= 2 && !strcmp(cw[0], "FileCheck") && !strcmp(cw[1], "%s");
    snprintf(r->prefix, sizeof r->prefix, "CHECK");
    for (int i = 2; ok && i < nc; i++) {
        if (!strncmp(cw[i], "--check-prefix=", 15))
            snprintf(r->prefix, sizeof r->prefix, "%s", cw[i] + 15);
        else
            ok = false; /* other FileCheck options change what the checks mean */
    }
    free(check);
    if (!ok) {
        *why = "FileCheck takes options other than --check-prefix=P";
        return false;
    }
    char *w[MAX_RUN_WORDS];
    int n = split_words(*copy, w, MAX_RUN_WORDS), i = 0;
    r->expect_fail = n > 0 && !strcmp(w[0], "not");
    i += r->expect_fail;
    if (i >= n || strcmp(w[i], "glowc")) {
        *why = "it does not run glowc";
        return false;
    }
    for (i++; i < n; i++) {
        if (!strcmp(w[i], "2>&1")) {
            r->merge_stderr = true;
        } else if (strchr(w[i], '>') || strchr(w[i], '<') ||
                   (strchr(w[i], '%') && strcmp(w[i], "%s"))) {
            *why = "it redirects or uses a lit substitution other than %s";
            return false;
        } else {
            r->split |= !strcmp(w[i], "--split-input-file");
            r->words[r->nwords++] = w[i];
        }
    }
    return true;
}

/* ---- running glowc ---------------------------------------------------------------- */

/* Runs this glowc with the RUN line's words (%s: path); its stdout (and
 * stderr when merged) into out. False after a diagnostic. */
static bool run_glowc(const RunLine *r, const char *path, StrBuf *out, DiagList *d) {
    char exe[4096];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0) {
        diag_error(d, NULL, "update-checks: cannot find the glowc binary: %s", strerror(errno));
        return false;
    }
    exe[len] = 0;
    char *argv[MAX_RUN_WORDS + 2];
    argv[0] = exe;
    for (int i = 0; i < r->nwords; i++)
        argv[i + 1] = !strcmp(r->words[i], "%s") ? (char *)path : r->words[i];
    argv[r->nwords + 1] = NULL;
    int fds[2];
    if (pipe(fds)) {
        diag_error(d, NULL, "update-checks: pipe: %s", strerror(errno));
        return false;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], STDOUT_FILENO);
        if (r->merge_stderr)
            dup2(fds[1], STDERR_FILENO);
        else
            freopen("/dev/null", "w", stderr);
        close(fds[0]);
        close(fds[1]);
        execv(exe, argv);
        _exit(127);
    }
    close(fds[1]);
    char buf[65536];
    ssize_t got;
    while ((got = read(fds[0], buf, sizeof buf)) > 0)
        sb_append_n(out, buf, (size_t)got);
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    bool failed = !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    if (WIFSIGNALED(status) || failed != r->expect_fail) {
        diag_error(d, NULL, "%s:%d: the RUN line %s (exit status %d): its checks would fail too",
                   path, r->line, r->expect_fail ? "succeeded where 'not' expects a failure"
                                                 : "failed",
                   WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
        return false;
    }
    return true;
}

/* ---- CHECK lines --------------------------------------------------------------------- */

static bool is_check_of(const char *line, const char *prefix) {
    const char *p = line + strspn(line, " \t");
    if (strncmp(p, "//", 2))
        return false;
    p += 2;
    p += strspn(p, " ");
    size_t n = strlen(prefix);
    if (strncmp(p, prefix, n))
        return false;
    p += n;
    return *p == ':' || (*p == '-' && strchr(p, ':'));
}

/* Appends s with FileCheck's pattern syntax made literal, the file's path
 * as {{.*}}, and numeric value ids captured on first use. */
static void check_text(const char *s, const char *path, bool label, bool *seen, int nseen,
                       StrBuf *out) {
    size_t plen = strlen(path);
    for (const char *p = s; *p;) {
        if (plen && !strncmp(p, path, plen)) {
            sb_append(out, "{{.*}}");
            p += plen;
        } else if ((p[0] == '[' && p[1] == '[') || (p[0] == '{' && p[1] == '{')) {
            sb_printf(out, "{{\\%c\\%c}}", p[0], p[1]);
            p += 2;
        } else if (!label && p[0] == '%' && p[1] >= '0' && p[1] <= '9') {
            char *end;
            long id = strtol(p + 1, &end, 10);
            if (id < nseen && seen[id])
                sb_printf(out, "[[V%ld]]", id);
            else
                sb_printf(out, "[[V%ld:%%[0-9]+]]", id);
            if (id < nseen)
                seen[id] = true;
            p = end;
        } else {
            sb_putc(out, *p++);
        }
    }
}

enum { MAX_IDS = 1 << 16 };

static void checks_for(const char *output, const char *prefix, const char *path, StrBuf *out) {
    Lines l = split_lines(output);
    bool *seen = calloc(MAX_IDS, sizeof *seen);
    int n = l.n;
    while (n > 0 && !l.v[n - 1][strspn(l.v[n - 1], " \t")])
        n--; /* blank lines at the end say nothing */
    for (int i = 0; i < n; i++) {
        const char *s = l.v[i];
        bool blank = !s[strspn(s, " \t")];
        bool label = !strncmp(s, "func @", 6) || !strcmp(s, "declare {");
        if (label)
            memset(seen, 0, MAX_IDS * sizeof *seen); /* -enable-var-scope */
        if (blank) {
            sb_printf(out, "// %s-EMPTY:\n", prefix);
            continue;
        }
        sb_printf(out, "// %s%s: ", prefix, label ? "-LABEL" : i ? "-NEXT" : "");
        check_text(s, path, label, seen, MAX_IDS, out);
        sb_putc(out, '\n');
    }
    free(seen);
    lines_free(&l);
}

/* ---- the rewrite ----------------------------------------------------------------------- */

typedef struct Case {
    int first, end; /* lines [first, end) of the file */
    StrBuf checks;
} Case;

/* Where a case's checks go: before its first line that is not a comment
 * or blank (its IR), or at its end. */
static int insert_point(const Lines *f, const Case *c) {
    for (int i = c->first; i < c->end; i++) {
        const char *p = f->v[i] + strspn(f->v[i], " \t");
        if (*p && strncmp(p, "//", 2))
            return i;
    }
    return c->end;
}

static bool update(const char *path, const char *out_path, DiagList *d) {
    size_t len;
    char *text = file_read_all(path, &len, d);
    if (!text)
        return false;
    Lines f = split_lines(text);
    free(text);
    Case cases[256];
    int ncases = 0;
    cases[0].first = 0;
    for (int i = 0; i <= f.n; i++) {
        if (ncases == 256) {
            diag_error(d, NULL, "%s: more than 256 cases", path);
            lines_free(&f);
            return false;
        }
        if (i == f.n || is_separator(f.v[i])) {
            cases[ncases].end = i;
            sb_init(&cases[ncases].checks);
            ncases++;
            if (ncases < 256)
                cases[ncases].first = i + 1;
        }
    }
    RunLine runs[MAX_RUNS];
    char *copies[MAX_RUNS];
    int nruns = 0;
    bool ok = true;
    for (int i = 0; i < f.n && nruns < MAX_RUNS; i++) {
        if (!strstr(f.v[i], "RUN:") || strncmp(f.v[i] + strspn(f.v[i], " \t"), "//", 2))
            continue;
        RunLine *r = memset(&runs[nruns], 0, sizeof *runs);
        r->line = i + 1;
        const char *why = NULL;
        copies[nruns] = NULL;
        if (!parse_run(f.v[i], r, &copies[nruns], &why)) {
            fprintf(stderr, "%s:%d: note: RUN line left alone: %s\n", path, i + 1, why);
            free(copies[nruns]);
            continue;
        }
        StrBuf output;
        sb_init(&output);
        ok = run_glowc(r, path, &output, d) && ok;
        /* With --split-input-file, glowc prints "// -----" between cases. */
        Lines parts = {0};
        StrBuf part;
        sb_init(&part);
        Lines ol = split_lines(sb_str(&output));
        for (int k = 0; k <= ol.n; k++) {
            if (k == ol.n || (r->split && is_separator(ol.v[k]))) {
                lines_push(&parts, sb_take(&part));
                sb_init(&part);
            } else {
                sb_printf(&part, "%s\n", ol.v[k]);
            }
        }
        sb_free(&part);
        lines_free(&ol);
        if (ok && parts.n != (r->split ? ncases : 1)) {
            diag_error(d, NULL, "%s:%d: the RUN line printed %d case%s for %d in the file", path,
                       i + 1, parts.n, parts.n == 1 ? "" : "s", r->split ? ncases : 1);
            ok = false;
        }
        for (int k = 0; ok && k < parts.n; k++)
            checks_for(parts.v[k], r->prefix, path, &cases[k].checks);
        lines_free(&parts);
        sb_free(&output);
        nruns++;
    }
    if (ok && !nruns) {
        diag_error(d, NULL, "%s: no RUN line of the shape 'glowc ... %%s | FileCheck %%s'", path);
        ok = false;
    }
    StrBuf out;
    sb_init(&out);
    for (int c = 0; ok && c < ncases; c++) {
        int at = insert_point(&f, &cases[c]);
        for (int i = cases[c].first; i <= cases[c].end; i++) {
            if (i == at && cases[c].checks.len)
                sb_append(&out, sb_str(&cases[c].checks));
            if (i == cases[c].end)
                break;
            bool old = false;
            for (int r = 0; r < nruns; r++)
                old |= is_check_of(f.v[i], runs[r].prefix);
            if (!old)
                sb_printf(&out, "%s\n", f.v[i]);
        }
        if (cases[c].end < f.n)
            sb_printf(&out, "%s\n", f.v[cases[c].end]); /* the "// -----" */
    }
    if (ok)
        ok = cli_write_file(out_path, out.data, out.len, d);
    if (ok && strcmp(out_path, path))
        printf("wrote %s\n", out_path);
    else if (ok)
        printf("updated %s\n", path);
    sb_free(&out);
    for (int c = 0; c < ncases; c++)
        sb_free(&cases[c].checks);
    for (int r = 0; r < nruns; r++)
        free(copies[r]);
    lines_free(&f);
    return ok;
}

static int update_option(OptionId id, const char *v, void *ctx, DiagList *d) {
    if (id != OPT_OUTPUT)
        return 0;
    *(const char **)ctx = v;
    return 1;
}

int cmd_update_checks(int argc, char **argv) {
    DiagList d;
    diag_init(&d, NULL);
    CommonArgs ca = {0};
    const char *out = NULL;
    int status = 1;
    if (args_parse(&ca, argc, argv, "update-checks", update_option, &out, &d)) {
        if (!cli_has_suffix(ca.model, ".hl") && !cli_has_suffix(ca.model, ".lir"))
            diag_error(&d, NULL, "update-checks: '%s' is not a .hl or .lir fixture", ca.model);
        else
            status = update(ca.model, out ? out : ca.model, &d) ? 0 : 1;
    }
    cli_report(&d);
    args_free(&ca);
    diag_free(&d);
    return status;
}
