/* Runs any bundle from its header alone: reads the weights file and each
 * input (in order of NAME_INPUTS, DIR/inK.raw), calls the entry point,
 * writes each output to DIR/outK.raw. Built with -DBUNDLE_H='"m.h"',
 * -DPREFIX=M (the header's macro prefix) and -DENTRY=m. THREADS: a
 * threaded bundle's runtime with that many threads; "-" or absent: NULL.
 * Usage: runner WEIGHTS DIR [THREADS] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include BUNDLE_H

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define M(x) CAT(PREFIX, x)

static int io(const char *dir, const char *what, int k, uint8_t *at, long size, int write) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s%d.raw", dir, what, k);
    FILE *f = fopen(path, write ? "wb" : "rb");
    long got = f ? (long)(write ? fwrite(at, 1, (size_t)size, f) : fread(at, 1, (size_t)size, f)) : -1;
    if (f && fclose(f))
        got = -1;
    if (got != size) {
        fprintf(stderr, "runner: %s: cannot %s %ld bytes\n", path, write ? "write" : "read", size);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 3)
        return 2;
    /* Sizes rounded up to the alignment: aligned_alloc wants a multiple. */
#define ROUND(n) (((size_t)(n) + M(_ALIGNMENT) - 1) / M(_ALIGNMENT) * M(_ALIGNMENT) + M(_ALIGNMENT))
    uint8_t *weights = aligned_alloc(M(_WEIGHTS_ALIGNMENT), ROUND(M(_WEIGHTS_SIZE)));
    uint8_t *mutables = aligned_alloc(M(_MUTABLE_ALIGNMENT), ROUND(M(_MUTABLE_SIZE)));
    uint8_t *acts = aligned_alloc(M(_ACTIVATIONS_ALIGNMENT), ROUND(M(_ACTIVATIONS_SIZE)));
    if (!weights || !mutables || !acts)
        return 1;
    int bad = 0, k = 0;
    FILE *w = fopen(argv[1], "rb");
    if (!w || fread(weights, 1, M(_WEIGHTS_SIZE), w) != (size_t)M(_WEIGHTS_SIZE))
        return 1;
    fclose(w);
#define READ(name, onnx) bad |= io(argv[2], "in", k++, mutables + M(CAT(_INPUT_, CAT(name, _OFFSET))), M(CAT(_INPUT_, CAT(name, _SIZE))), 0);
    M(_INPUTS)(READ)
    LibjitRuntime *rt = NULL;
#if !M(_NO_THREADS)
    if (argc > 3 && strcmp(argv[3], "-"))
        rt = CAT(ENTRY, _runtime_new)(atoi(argv[3]));
#endif
    if (bad || ENTRY(weights, mutables, acts, rt) != 0)
        return 1;
#if !M(_NO_THREADS)
    CAT(ENTRY, _runtime_free)(rt);
#endif
    k = 0;
#define WRITE(name, onnx) bad |= io(argv[2], "out", k++, mutables + M(CAT(_OUTPUT_, CAT(name, _OFFSET))), M(CAT(_OUTPUT_, CAT(name, _SIZE))), 1);
    M(_OUTPUTS)(WRITE)
    free(weights);
    free(mutables);
    free(acts);
    return bad;
}
