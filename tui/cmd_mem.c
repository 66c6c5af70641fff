/* glowc mem: the static memory plan of a model: every activation with its
 * offset, size, live range and origin, the arena against the lower bound
 * and the naive size; optionally as SVG and JSON. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dot/memmap.h"
#include "tui/args.h"

static bool write_text(const char *path, const StrBuf *sb, DiagList *d) {
    return cli_write_file(path, sb->data ? sb->data : "", sb->len, d);
}

int cmd_mem(int argc, char **argv) {
    DiagList d;
    diag_init(&d, NULL);
    CommonArgs ca = {0};
    const char *svg = NULL, *json = NULL;
    int status = 1;
    for (int i = 1; i < argc; i++) {
        bool bad;
        if (args_common(&ca, argc, argv, &i, &bad, &d)) {
            if (bad)
                goto done;
        } else if (!strcmp(argv[i], "--svg") && i + 1 < argc) {
            svg = argv[++i];
        } else if (!strcmp(argv[i], "--json") && i + 1 < argc) {
            json = argv[++i];
        } else if (argv[i][0] == '-' && argv[i][1]) {
            diag_error(&d, NULL, "mem: unknown option '%s'", argv[i]);
            goto done;
        } else if (!ca.model) {
            ca.model = argv[i];
        } else {
            diag_error(&d, NULL, "mem: more than one model given");
            goto done;
        }
    }
    if (!ca.model) {
        diag_error(&d, NULL, "mem: no model given");
        goto done;
    }
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
    StrBuf sb;
    sb_init(&sb);
    memplan_table(&m, &sb);
    bool ok = true;
    if (svg) {
        StrBuf g;
        sb_init(&g);
        memplan_svg(&m, ca.model, &g);
        ok &= write_text(svg, &g, &d);
        sb_free(&g);
    }
    if (json) {
        StrBuf j;
        sb_init(&j);
        memplan_json(&m, &j);
        ok &= write_text(json, &j, &d);
        sb_free(&j);
    }
    fputs(sb_str(&sb), stdout);
    sb_free(&sb);
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
