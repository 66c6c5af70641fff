/* Helpers shared by the subcommands: files and diagnostics. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tui/cli.h"

int cli_report(const DiagList *d) {
    StrBuf sb;
    sb_init(&sb);
    diag_render(d, &sb);
    fputs(sb_str(&sb), stderr);
    sb_free(&sb);
    return d->errors ? 1 : 0;
}

char *cli_read_file(const char *path, size_t *len, DiagList *d) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        diag_error(d, NULL, "cannot open '%s': %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (n < cap) {
            if (ferror(f)) {
                diag_error(d, NULL, "cannot read '%s': %s", path, strerror(errno));
                free(buf);
                buf = NULL;
            }
            break;
        }
        cap *= 2;
        char *nb = realloc(buf, cap + 1);
        if (!nb)
            free(buf);
        buf = nb;
    }
    fclose(f);
    if (!buf) {
        if (!diag_has_errors(d))
            diag_error(d, NULL, "'%s': out of memory", path);
        return NULL;
    }
    buf[n] = 0;
    *len = n;
    return buf;
}

bool cli_has_suffix(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

bool cli_write_file(const char *path, const void *data, size_t len, DiagList *d) {
    size_t plen = strlen(path);
    char *tmp = malloc(plen + 16);
    if (!tmp) {
        diag_error(d, NULL, "out of memory");
        return false;
    }
    snprintf(tmp, plen + 16, "%s.tmp%d", path, (int)getpid());
    FILE *f = fopen(tmp, "wb");
    bool ok = f && fwrite(data, 1, len, f) == len;
    if (f && fclose(f))
        ok = false;
    if (ok && rename(tmp, path))
        ok = false;
    if (!ok) {
        diag_error(d, NULL, "cannot write '%s': %s", path, strerror(errno));
        remove(tmp);
    }
    free(tmp);
    return ok;
}
