/* Parsing of --dim bindings. */
#include <stdlib.h>
#include <string.h>

#include "tui/cli.h"

bool cli_parse_dim(const char *arg, DimBinding *out, DiagList *d) {
    const char *eq = strchr(arg, '=');
    char *end;
    long long v = eq ? strtoll(eq + 1, &end, 10) : 0;
    if (!eq || eq == arg || !eq[1] || *end || v < 0) {
        diag_error(d, NULL, "--dim expects NAME=VALUE with VALUE >= 0, got '%s'", arg);
        return false;
    }
    out->name = strndup(arg, (size_t)(eq - arg));
    out->value = v;
    return true;
}
