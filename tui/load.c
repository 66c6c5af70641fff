/* Loading a model for a subcommand: .hl text or ONNX, with the interpreter
 * wired in as the importer's constant folder. */
#include <stdlib.h>
#include <string.h>

#include "backends/interp/interp.h"
#include "core/parse.h"
#include "tui/cli.h"

Module *cli_load_model(const char *path, const CliLoadOptions *lo, DiagList *d) {
    const char *saved = d->file;
    d->file = path;
    Module *m = NULL;
    if (cli_has_suffix(path, ".hl")) {
        size_t len;
        char *text = cli_read_file(path, &len, d);
        if (text)
            m = parse_module(text, len, path, d);
        free(text);
    } else {
        ImportOptions opt = {
            .dims = lo ? lo->dims : NULL,
            .ndims = lo ? lo->ndims : 0,
            .known = lo ? lo->known : NULL,
            .nknown = lo ? lo->nknown : 0,
            .fold = interp_fold,
            .max_memory = lo ? lo->max_memory : 0,
            .unsupported = lo ? lo->unsupported : NULL,
        };
        m = onnx_import_file(path, &opt, d);
    }
    d->file = saved;
    return m;
}

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
