/* Parsing of option values: --dim bindings, numbers, sizes (--max-memory). */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tui/cli.h"

bool cli_parse_int(const char *arg, long long lo, long long hi, long long *out) {
    char *end;
    errno = 0;
    long long v = strtoll(arg, &end, 10);
    if (!isdigit((unsigned char)arg[arg[0] == '-']) || *end || errno || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

bool cli_parse_tolerance(const char *arg, double *out) {
    char *end;
    errno = 0;
    double v = strtod(arg, &end);
    if (end == arg || *end || errno || !isfinite(v) || v < 0)
        return false;
    *out = v;
    return true;
}

bool cli_parse_dim(const char *arg, DimBinding *out, DiagList *d) {
    const char *eq = strchr(arg, '=');
    long long v;
    if (!eq || eq == arg || !cli_parse_int(eq + 1, 0, INT64_MAX, &v)) {
        diag_error(d, NULL, "--dim expects NAME=VALUE with VALUE >= 0, got '%s'", arg);
        return false;
    }
    out->name = strndup(arg, (size_t)(eq - arg));
    out->value = v;
    return true;
}

bool cli_parse_size(const char *arg, uint64_t *out) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(arg, &end, 10);
    if (end == arg || errno || arg[0] == '-' || !v)
        return false;
    int shift = 0;
    if (*end) {
        const char *units = "KMGT", *u = strchr(units, *end);
        if (!u || end[1])
            return false;
        shift = 10 * (int)(u - units + 1);
    }
    if (v > UINT64_MAX >> shift)
        return false;
    *out = (uint64_t)v << shift;
    return true;
}

uint64_t cli_physical_memory(void) {
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || size <= 0)
        return 0; /* unknown: no limit */
    return (uint64_t)pages * (uint64_t)size;
}
