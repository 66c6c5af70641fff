/* The phase table of --time-passes (timing.h). The session times its steps,
 * the backend the phases that are no step (the kernel engine, machine-code
 * emission, linking); the command times the rest around them. */
#include "tui/timing.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

double timing_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct Row {
    const char *name;
    double seconds;
} Row;

enum { MAX_ROWS = 16 };

static void add(Row *rows, int *n, const char *name, double seconds) {
    if (*n < MAX_ROWS)
        rows[(*n)++] = (Row){name, seconds};
}

void timing_print(const Session *s, double import_s, double first_s) {
    Row rows[MAX_ROWS];
    int n = 0, npasses = 0;
    double passes = 0;
    /* The import step is inside import_s. */
    for (int i = 0; i < s->nsteps; i++)
        if (s->steps[i].level != PASS_CODEGEN && strcmp(s->steps[i].name, "import")) {
            passes += s->steps[i].seconds + s->steps[i].verify_seconds;
            npasses++;
        }
    char passes_name[64];
    snprintf(passes_name, sizeof passes_name, "glowc passes (%d steps, verifier included)",
             npasses);
    add(rows, &n, "import (read and convert the model)", import_s);
    add(rows, &n, passes_name, passes);
    bool has_phases = s->opt.backend && s->opt.backend->phase_seconds;
    double bitcode = has_phases ? session_phase_seconds(s, BACKEND_PHASE_BITCODE) : 0;
    /* codegen's own row leaves out the bitcode parse, a row of its own. */
    if (has_phases)
        add(rows, &n, "libjit bitcode parse (codegen)", bitcode);
    for (int i = 0; i < s->nsteps; i++)
        if (s->steps[i].level == PASS_CODEGEN)
            add(rows, &n, s->steps[i].name,
                s->steps[i].seconds - (strcmp(s->steps[i].name, "codegen") ? 0 : bitcode));
    double loading = 0;
    if (has_phases) {
#define X(id, name)                                                                             \
    if (BACKEND_PHASE_##id != BACKEND_PHASE_BITCODE)                                            \
        add(rows, &n, name, session_phase_seconds(s, BACKEND_PHASE_##id));
        BACKEND_PHASES(X)
#undef X
        /* The JIT builds and loads on the first execution: shown above. */
        if (s->exec)
            loading = session_phase_seconds(s, BACKEND_PHASE_ENGINE) +
                      session_phase_seconds(s, BACKEND_PHASE_EMIT);
    }
    if (first_s >= 0)
        add(rows, &n, "first run", first_s - loading > 0 ? first_s - loading : 0);
    double total = 0;
    for (int i = 0; i < n; i++)
        total += rows[i].seconds;
    fprintf(stderr, "===-------------------------------------------===\n");
    fprintf(stderr, "  phase timing (total %.4f s)\n", total);
    fprintf(stderr, "  %10s %7s  %s\n", "seconds", "share", "phase");
    for (int i = 0; i < n; i++)
        fprintf(stderr, "  %10.4f %6.1f%%  %s\n", rows[i].seconds,
                total > 0 ? 100 * rows[i].seconds / total : 0, rows[i].name);
}
