/* Helpers shared by the subcommands: files and diagnostics. */
#include <stdio.h>
#include <string.h>

#include "core/file.h"
#include "tui/cli.h"

int cli_report(const DiagList *d) {
    StrBuf sb;
    sb_init(&sb);
    diag_render(d, &sb);
    fputs(sb_str(&sb), stderr);
    sb_free(&sb);
    return d->errors ? 1 : 0;
}

bool cli_has_suffix(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

bool cli_write_file(const char *path, const void *data, size_t len, DiagList *d) {
    FileOut f = {path, data, len};
    return file_write_all(&f, 1, d);
}
