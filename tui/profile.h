/* Per-operator time of native code (glowc bench --per-node, --trace, and the
 * explorer's profile view): the instrumented JIT's probe timestamps every
 * instruction on the calling thread and every thread's share of it. */
#ifndef GLOWC_TUI_PROFILE_H
#define GLOWC_TUI_PROFILE_H

#include "core/strbuf.h"
#include "passes/session.h"

typedef struct Profile Profile;

/* Runs instrumented native code `runs` times with the probe on, after
 * `warm` runs without; NULL with a diagnostic if it cannot. `trace`: keep
 * every event of the last run. */
Profile *profile_run(const Backend *be, BackendExec *e, Tensor *const *inputs, int warm, int runs,
                     bool trace, DiagList *d);
void profile_free(Profile *p);
/* The table: one row per instruction that ran, by time, with its node
 * name, kind, output shape, ms, %, GFLOP/s and % of peak (peak_gflops 0:
 * not shown); then the per-node total against the same runs' end-to-end
 * time, and end_to_end_ms (runs without the probe; 0: not shown). */
void profile_print(const Profile *p, double peak_gflops, double end_to_end_ms, StrBuf *out);
/* The sum of the instructions' mean times, ms. */
double profile_total_ms(const Profile *p);
/* The floating-point operations of one run of p, as --per-node counts
 * them: conv, gemm, matmul and fully-connected multiply-adds, two each. */
double profile_program_flops(const LirProgram *p);
/* The last run as a Chrome trace (Trace Event Format, "X" events, one tid
 * per thread, names = ONNX node names), written all or none. */
bool profile_write_trace(const Profile *p, const char *path, DiagList *d);

#endif
