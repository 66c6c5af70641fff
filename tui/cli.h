/* The glowc command line: one function per subcommand, and the helpers they
 * share (reading files, reporting diagnostics, loading a model). */
#ifndef GLOWC_TUI_CLI_H
#define GLOWC_TUI_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include "core/diag.h"
#include "core/graph.h"
#include "core/onnx/onnx.h"

int cmd_print(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_conform(int argc, char **argv);
int cmd_opt(int argc, char **argv);
int cmd_passes(int argc, char **argv);
int cmd_targets(int argc, char **argv);
int cmd_bisect(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_mem(int argc, char **argv);
int cmd_compile(int argc, char **argv);
int cmd_dot(int argc, char **argv);
int cmd_repl(int argc, char **argv);
int cmd_explore(int argc, char **argv);
int cmd_update_checks(int argc, char **argv);
int cmd_profile(int argc, char **argv);
int cmd_quantize(int argc, char **argv);
int cmd_train(int argc, char **argv);

/* Prints the diagnostics to stderr; returns 1 when there were errors. */
int cli_report(const DiagList *d);
bool cli_has_suffix(const char *s, const char *suffix);
/* Writes `len` bytes to path through a temporary file and a rename, so a
 * failed run never leaves a half-written file. */
bool cli_write_file(const char *path, const void *data, size_t len, DiagList *d);

/* "64M", "2G", "1048576": a positive size in bytes, suffixes in powers of
 * 1024 (--max-memory). */
bool cli_parse_size(const char *arg, uint64_t *out);
/* The machine's physical memory in bytes: the default --max-memory. */
uint64_t cli_physical_memory(void);

/* Where the cpu backend keeps its compiled kernels (backends/cpu/engine.c):
 * $GLOWC_CACHE_DIR, else $XDG_CACHE_HOME/glowc, else $HOME/.cache/glowc;
 * NULL when none is set (then nothing is cached). In buf. */
const char *cli_cache_dir(char *buf, size_t len);

/* A whole decimal integer in [lo, hi] ("2x", "" and overflow are not). */
bool cli_parse_int(const char *arg, long long lo, long long hi, long long *out);
/* A finite number >= 0 (--rtol, --atol). */
bool cli_parse_tolerance(const char *arg, double *out);

/* "NAME=VALUE" for --dim. */
bool cli_parse_dim(const char *arg, DimBinding *out, DiagList *d);

#endif
