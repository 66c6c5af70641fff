/* The README's bundle example: classify one 8x8 digit with the bundled model. */
#include <stdio.h>
#include <stdlib.h>
#include "digits.h"

int main(int argc, char **argv) {
    if (argc != 3)
        return fprintf(stderr, "usage: %s digits.weights IMAGE.raw\n", argv[0]), 2;
    uint8_t *weights = aligned_alloc(DIGITS_ALIGNMENT, DIGITS_WEIGHTS_SIZE);
    uint8_t *mutables = aligned_alloc(DIGITS_ALIGNMENT, DIGITS_MUTABLE_SIZE);
    uint8_t *scratch = aligned_alloc(DIGITS_ALIGNMENT, DIGITS_ACTIVATIONS_SIZE + DIGITS_ALIGNMENT);
    FILE *w = fopen(argv[1], "rb"), *x = fopen(argv[2], "rb");
    if (!w || !x || fread(weights, 1, DIGITS_WEIGHTS_SIZE, w) != DIGITS_WEIGHTS_SIZE ||
        fread(mutables + DIGITS_INPUT_IMAGE_OFFSET, 1, DIGITS_INPUT_IMAGE_SIZE, x) != DIGITS_INPUT_IMAGE_SIZE)
        return fprintf(stderr, "cannot read the weights or the image\n"), 1;
    if (digits(weights, mutables, scratch, NULL) != 0)
        return fprintf(stderr, "the model failed\n"), 1;
    const float *logits = (const float *)(mutables + DIGITS_OUTPUT_LOGITS_OFFSET);
    int best = 0;
    for (int i = 1; i < 10; i++)
        best = logits[i] > logits[best] ? i : best;
    printf("%d\n", best);
    return 0;
}
