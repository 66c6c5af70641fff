/* Whole files in and out, for every layer and for compiled executables:
 * inputs are read whole (pipes too), and outputs are written through a
 * temporary next to each and renamed only when all of them are written, so
 * a failure never leaves a half-written file or half of a set of files. */
#ifndef GLOWC_CORE_FILE_H
#define GLOWC_CORE_FILE_H

#include <stdbool.h>
#include <stddef.h>

#include "core/diag.h"

/* The whole file in a malloc'd buffer with a NUL after the last byte; NULL
 * with "cannot open/read 'PATH': REASON" (a directory is refused by name). */
char *file_read_all(const char *path, size_t *len, DiagList *d);

/* The whole file, read only: mapped when it is a regular file (no copy),
 * else read as file_read_all does (pipes). data is never NULL after
 * success; file_unmap releases it either way. */
typedef struct FileMap {
    const char *data;
    size_t len;
    bool mapped;
} FileMap;
bool file_map(const char *path, FileMap *f, DiagList *d);
void file_unmap(FileMap *f);

typedef struct FileOut {
    const char *path;
    const void *data;
    size_t len;
} FileOut;

/* Writes every file or none: each to a temporary beside it, then, when all
 * are written and no target is a directory, renames them into place. False
 * with "cannot write 'PATH': REASON" naming the file the caller asked for. */
bool file_write_all(const FileOut *files, int n, DiagList *d);

#endif
