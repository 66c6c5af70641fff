/* glowc print: a model as high-level text IR. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/print.h"
#include "tui/args.h"

int cmd_print(int argc, char **argv) {
    DiagList d;
    diag_init(&d, NULL);
    PrintOptions po = PRINT_DEFAULTS;
    CommonArgs ca = {0};
    int status = 1;
    for (int i = 1; i < argc; i++) {
        bool bad;
        if (args_common(&ca, argc, argv, &i, &bad, &d)) {
            if (bad)
                goto done;
        } else if (!strcmp(argv[i], "--dense-limit") && i + 1 < argc) {
            po.dense_limit = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--no-loc")) {
            po.no_loc = true;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            diag_error(&d, NULL, "print: unknown option '%s'", argv[i]);
            goto done;
        } else if (!ca.model) {
            ca.model = argv[i];
        } else {
            diag_error(&d, NULL, "print: more than one model given");
            goto done;
        }
    }
    if (!ca.model) {
        diag_error(&d, NULL, "print: no model given (usage: glowc print MODEL.onnx|FILE.hl)");
        goto done;
    }
    KnownInput known[MAX_CLI_INPUTS];
    Session *s = args_open_session(&ca, "-O0", known, &d);
    if (!s)
        goto done;
    bool ok = session_run(s);
    if (ok) {
        StrBuf sb;
        sb_init(&sb);
        print_module(s->work, &po, &sb);
        fwrite(sb_str(&sb), 1, sb.len, stdout);
        sb_free(&sb);
        status = 0;
    }
    diag_append(&d, &s->diags);
    session_free(s);
done:
    cli_report(&d);
    args_free(&ca);
    diag_free(&d);
    return status;
}
