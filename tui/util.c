/* Helpers shared by the subcommands: files and diagnostics. */
#include <stdio.h>
#include <stdlib.h>
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

const char *cli_cache_dir(char *buf, size_t len) {
    const char *own = getenv("GLOWC_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME"),
               *home = getenv("HOME");
    if (own && *own)
        snprintf(buf, len, "%s", own);
    else if (xdg && *xdg)
        snprintf(buf, len, "%s/glowc", xdg);
    else if (home && *home)
        snprintf(buf, len, "%s/.cache/glowc", home);
    else
        return NULL;
    return buf;
}
