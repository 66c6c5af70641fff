/* Reading and writing whole files (see file.h). */
#include "core/file.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* A directory opens and then fails to read, and a device such as /dev/zero
 * never ends: both are refused before reading. A terminal is read (a text
 * file typed on /dev/stdin). */
static bool readable_kind(FILE *f, const char *path, DiagList *d) {
    struct stat st;
    if (fstat(fileno(f), &st))
        return true; /* the read will say why */
    if (S_ISDIR(st.st_mode)) {
        diag_error(d, NULL, "cannot read '%s': %s", path, strerror(EISDIR));
        return false;
    }
    if ((S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) && !isatty(fileno(f))) {
        diag_error(d, NULL, "cannot read '%s': a device, not a file", path);
        return false;
    }
    return true;
}

bool file_map(const char *path, FileMap *f, DiagList *d) {
    *f = (FileMap){0};
    int fd = open(path, O_RDONLY);
    struct stat st;
    if (fd >= 0 && !fstat(fd, &st) && S_ISREG(st.st_mode) && st.st_size > 0 &&
        (uint64_t)st.st_size <= SIZE_MAX) {
        void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p != MAP_FAILED) {
            close(fd);
            *f = (FileMap){p, (size_t)st.st_size, true};
            return true;
        }
    }
    if (fd >= 0)
        close(fd);
    char *buf = file_read_all(path, &f->len, d);
    f->data = buf;
    return buf != NULL;
}

void file_unmap(FileMap *f) {
    if (f->mapped)
        munmap((void *)f->data, f->len);
    else
        free((void *)f->data);
    *f = (FileMap){0};
}

char *file_read_all(const char *path, size_t *len, DiagList *d) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        diag_error(d, NULL, "cannot open '%s': %s", path, strerror(errno));
        return NULL;
    }
    if (!readable_kind(f, path, d)) {
        fclose(f);
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap)
            break;
        char *nb = cap > SIZE_MAX / 4 ? NULL : realloc(buf, (cap *= 2) + 1);
        if (!nb)
            free(buf);
        buf = nb;
    }
    int err = ferror(f) ? errno : 0;
    fclose(f);
    if (!buf) {
        diag_error(d, NULL, "cannot read '%s': out of memory", path);
        return NULL;
    }
    if (err) {
        diag_error(d, NULL, "cannot read '%s': %s", path, strerror(err));
        free(buf);
        return NULL;
    }
    buf[n] = 0;
    *len = n;
    return buf;
}

static char *temp_name(const char *path) {
    size_t n = strlen(path) + 24;
    char *tmp = malloc(n);
    if (tmp)
        snprintf(tmp, n, "%s.tmp%d", path, (int)getpid());
    return tmp;
}

static bool write_one(const char *tmp, const FileOut *o, DiagList *d) {
    FILE *f = fopen(tmp, "wb");
    bool ok = f && fwrite(o->data, 1, o->len, f) == o->len;
    int err = errno;
    if (f && fclose(f) && ok) {
        ok = false;
        err = errno;
    }
    if (!ok)
        diag_error(d, NULL, "cannot write '%s': %s", o->path, strerror(err));
    return ok;
}

/* What would fail only after other files moved: rename() over a directory,
 * and two files of the set at one path (they would share a temporary). */
static bool can_place(const FileOut *files, int i, DiagList *d) {
    struct stat st;
    if (!stat(files[i].path, &st) && S_ISDIR(st.st_mode)) {
        diag_error(d, NULL, "cannot write '%s': %s", files[i].path, strerror(EISDIR));
        return false;
    }
    for (int j = 0; j < i; j++) {
        if (!strcmp(files[i].path, files[j].path)) {
            diag_error(d, NULL, "cannot write '%s' twice", files[i].path);
            return false;
        }
    }
    return true;
}

bool file_write_all(const FileOut *files, int n, DiagList *d) {
    char **tmps = calloc((size_t)n + 1, sizeof *tmps);
    bool ok = tmps != NULL;
    for (int i = 0; ok && i < n; i++)
        ok = can_place(files, i, d);
    for (int i = 0; ok && i < n; i++) {
        tmps[i] = temp_name(files[i].path);
        if (!tmps[i])
            diag_error(d, NULL, "out of memory");
        ok = tmps[i] && write_one(tmps[i], &files[i], d);
    }
    for (int i = 0; ok && i < n; i++) {
        if (rename(tmps[i], files[i].path)) {
            diag_error(d, NULL, "cannot write '%s': %s", files[i].path, strerror(errno));
            ok = false;
        } else {
            free(tmps[i]);
            tmps[i] = NULL;
        }
    }
    if (!tmps)
        diag_error(d, NULL, "out of memory");
    for (int i = 0; tmps && i < n; i++) {
        if (tmps[i])
            remove(tmps[i]);
        free(tmps[i]);
    }
    free(tmps);
    return ok;
}
