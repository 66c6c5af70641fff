/* glowc print: a model as high-level text IR. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/print.h"
#include "tui/args.h"

static int print_option(OptionId id, const char *v, void *ctx, DiagList *d) {
    PrintOptions *po = ctx;
    long long n;
    if (id == OPT_DENSE_LIMIT) {
        if (!cli_parse_int(v, 0, INT_MAX, &n)) {
            diag_error(d, NULL, "print: --dense-limit takes a count of elements >= 0, not '%s'", v);
            return -1;
        }
        po->dense_limit = (int)n;
    } else if (id == OPT_NO_LOC)
        po->no_loc = true;
    else
        return 0;
    return 1;
}

int cmd_print(int argc, char **argv) {
    DiagList d;
    diag_init(&d, NULL);
    PrintOptions po = PRINT_DEFAULTS;
    CommonArgs ca = {0};
    int status = 1;
    if (!args_parse(&ca, argc, argv, "print", print_option, &po, &d))
        goto done;
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
