/* glowc mem: the static memory plan of a model: every activation with its
 * offset, size, live range and origin, the arena against the lower bound
 * and the naive size; optionally as SVG and JSON. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/file.h"
#include "dot/memmap.h"
#include "tui/args.h"

typedef struct MemArgs {
    const char *svg, *json;
} MemArgs;

static int mem_option(OptionId id, const char *v, void *ctx, DiagList *d) {
    MemArgs *m = ctx;
    if (id == OPT_SVG)
        m->svg = v;
    else if (id == OPT_JSON)
        m->json = v;
    else
        return 0;
    return 1;
}

int cmd_mem(int argc, char **argv) {
    DiagList d;
    diag_init(&d, NULL);
    CommonArgs ca = {0};
    MemArgs ma = {0};
    const char *svg, *json;
    int status = 1;
    if (!args_parse(&ca, argc, argv, "mem", mem_option, &ma, &d))
        goto done;
    svg = ma.svg;
    json = ma.json;
    KnownInput known[MAX_CLI_INPUTS];
    Session *s = args_open_session(&ca, "-O2", known, &d);
    if (!s)
        goto done;
    if (!session_want_lir(s) || !session_run(s)) {
        diag_append(&d, &s->diags);
        session_free(s);
        goto done;
    }
    MemPlan m;
    memplan_from_lir(s->lir, &m);
    StrBuf sb, g, j;
    sb_init(&sb);
    sb_init(&g);
    sb_init(&j);
    memplan_table(&m, &sb);
    /* --svg and --json are written both or neither. */
    FileOut files[2];
    int n = 0;
    if (svg) {
        memplan_svg(&m, ca.model, &g);
        files[n++] = (FileOut){svg, sb_str(&g), g.len};
    }
    if (json) {
        memplan_json(&m, &j);
        files[n++] = (FileOut){json, sb_str(&j), j.len};
    }
    bool ok = file_write_all(files, n, &d);
    if (ok)
        fputs(sb_str(&sb), stdout);
    sb_free(&sb);
    sb_free(&g);
    sb_free(&j);
    memplan_free(&m);
    diag_append(&d, &s->diags);
    session_free(s);
    status = ok ? 0 : 1;
done:
    cli_report(&d);
    args_free(&ca);
    diag_free(&d);
    return status;
}
