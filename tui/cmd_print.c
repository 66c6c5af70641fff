/* glowc print: a model as high-level text IR. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/print.h"
#include "tui/cli.h"

int cmd_print(int argc, char **argv) {
    DiagList d;
    diag_init(&d, NULL);
    PrintOptions po = PRINT_DEFAULTS;
    const char *path = NULL;
    DimBinding dims[32];
    int ndims = 0;
    int status = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--dim") && i + 1 < argc && ndims < 32) {
            if (!cli_parse_dim(argv[++i], &dims[ndims++], &d))
                goto done;
        } else if (!strcmp(argv[i], "--dense-limit") && i + 1 < argc) {
            po.dense_limit = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--no-loc")) {
            po.no_loc = true;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            diag_error(&d, NULL, "print: unknown option '%s'", argv[i]);
            goto done;
        } else if (!path) {
            path = argv[i];
        } else {
            diag_error(&d, NULL, "print: more than one model given");
            goto done;
        }
    }
    if (!path) {
        diag_error(&d, NULL, "print: no model given (usage: glowc print MODEL.onnx|FILE.hl)");
        goto done;
    }
    CliLoadOptions lo = {.dims = dims, .ndims = ndims};
    Module *m = cli_load_model(path, &lo, &d);
    if (m) {
        StrBuf sb;
        sb_init(&sb);
        print_module(m, &po, &sb);
        fwrite(sb_str(&sb), 1, sb.len, stdout);
        sb_free(&sb);
        module_destroy(m);
        status = 0;
    }
done:
    cli_report(&d);
    for (int i = 0; i < ndims; i++)
        free((char *)dims[i].name);
    diag_free(&d);
    return status;
}
