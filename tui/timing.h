/* --time-passes for compile, run and bench: every phase from reading the
 * model to the first result, in one table on stderr. */
#ifndef GLOWC_TUI_TIMING_H
#define GLOWC_TUI_TIMING_H

#include "passes/session.h"

/* A monotonic clock in seconds. */
double timing_now(void);
/* The table for s: import_s the model's loading and import (session open),
 * first_s the first execution (loading native code included; < 0: none). */
void timing_print(const Session *s, double import_s, double first_s);

#endif
