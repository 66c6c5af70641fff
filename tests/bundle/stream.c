/* A recurrent model streamed through its bundle: the caller feeds one step
 * of the input per call and copies the state output into the state input
 * between calls, which is all a bundle needs to run a model that carries
 * state (silero VAD, keyword spotters). Built against the cell model of
 * fixtures/run/inputs/stream.py (h' = tanh(x W + h U), y = sum(h')), with
 * -I the bundle folder. Prints each step's y and the last state, one value
 * per line (%.9g: float32 round-trips).
 * Usage: stream WEIGHTS X.raw STEPS */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cell.h"

#define ROUND(n) (((size_t)(n) + CELL_ALIGNMENT - 1) / CELL_ALIGNMENT * CELL_ALIGNMENT + CELL_ALIGNMENT)

int main(int argc, char **argv) {
    if (argc != 4)
        return 2;
    int steps = atoi(argv[3]);
    uint8_t *weights = aligned_alloc(CELL_WEIGHTS_ALIGNMENT, ROUND(CELL_WEIGHTS_SIZE));
    uint8_t *mut = aligned_alloc(CELL_MUTABLE_ALIGNMENT, ROUND(CELL_MUTABLE_SIZE));
    uint8_t *acts = aligned_alloc(CELL_ACTIVATIONS_ALIGNMENT, ROUND(CELL_ACTIVATIONS_SIZE));
    uint8_t *xs = malloc((size_t)steps * CELL_INPUT_X_SIZE);
    FILE *w = fopen(argv[1], "rb"), *x = fopen(argv[2], "rb");
    if (!weights || !mut || !acts || !xs || !w || !x || steps < 1 ||
        fread(weights, 1, CELL_WEIGHTS_SIZE, w) != CELL_WEIGHTS_SIZE ||
        fread(xs, 1, (size_t)steps * CELL_INPUT_X_SIZE, x) != (size_t)steps * CELL_INPUT_X_SIZE) {
        fprintf(stderr, "stream: cannot read the weights or %d steps of x\n", steps);
        return 1;
    }
    fclose(w);
    fclose(x);
    LibjitRuntime *rt = cell_runtime_new(2);
    memset(mut + CELL_INPUT_H_OFFSET, 0, CELL_INPUT_H_SIZE); /* h = 0 */
    for (int k = 0; k < steps; k++) {
        memcpy(mut + CELL_INPUT_X_OFFSET, xs + (size_t)k * CELL_INPUT_X_SIZE, CELL_INPUT_X_SIZE);
        if (cell(weights, mut, acts, rt) != 0)
            return 1;
        float y;
        memcpy(&y, mut + CELL_OUTPUT_Y_OFFSET, sizeof y);
        printf("%.9g\n", y);
        /* the state output is the next call's state input */
        memcpy(mut + CELL_INPUT_H_OFFSET, mut + CELL_OUTPUT_H_NEXT_OFFSET, CELL_INPUT_H_SIZE);
    }
    for (int i = 0; i < CELL_INPUT_H_COUNT; i++) {
        float h;
        memcpy(&h, mut + CELL_INPUT_H_OFFSET + i * sizeof h, sizeof h);
        printf("%.9g\n", h);
    }
    cell_runtime_free(rt);
    free(xs);
    free(weights);
    free(mut);
    free(acts);
    return 0;
}
