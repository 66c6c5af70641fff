/* Options shared by the subcommands that compile: the pipeline (-O0/-O1/-O2
 * or --passes), symbolic dimensions, inputs, debugging switches. */
#ifndef GLOWC_TUI_ARGS_H
#define GLOWC_TUI_ARGS_H

#include "passes/quant_profile.h"
#include "passes/session.h"
#include "tui/cli.h"
#include "tui/options.h"

enum { MAX_CLI_INPUTS = 64 };

typedef struct CommonArgs {
    const char *model;
    const char *pipeline; /* "-O0" .. "-O2" or a pass list; NULL: the command's default */
    DimBinding dims[MAX_CLI_INPUTS];
    int ndims;
    const char *input_names[MAX_CLI_INPUTS];
    const char *input_files[MAX_CLI_INPUTS];
    Tensor *input_values[MAX_CLI_INPUTS];
    bool input_stream[MAX_CLI_INPUTS]; /* --stream: the leading axis is the step axis (run) */
    bool input_late[MAX_CLI_INPUTS];   /* --late-input: never read at compile time */
    int ninputs;
    const char *break_pass;
    bool no_verify; /* --no-verify: no verifier between passes */
    const char *backend;
    const char *target, *target_cpu, *target_features; /* --target, ... (cpu backend) */
    bool runs_native; /* the command runs native code here: the target must be the host */
    int threads;
    bool fallback;
    uint64_t max_memory; /* --max-memory; 0: the machine's physical memory */
    bool training;       /* --train (or the train command): differentiate first */
    TrainSpec train;     /* --loss, --lr, --momentum, --weight-decay */
    bool lr_given;
    Arena *input_arena;  /* the --input values args_ensure_inputs read (args_free) */
    const char *quantize; /* --quantize=PROFILE.json */
    QuantConfig quant;    /* its options; quant.profile once read (args_parse) */
    double min_sqnr;      /* --min-sqnr (dB), for --keep-float=auto */
    bool min_sqnr_given;
    char *keep_auto_list; /* --keep-float=auto: the nodes it chose (args_parse) */
    QProfile profile;
    bool no_winograd;     /* --no-winograd: -O2 leaves 3x3 convolutions direct */
    bool f32_highest;     /* --f32-precision=highest: no bf16x3 tile products */
    bool no_cache;        /* --no-cache: compile the kernel engine afresh, keep nothing */
    char cache_dir[1024]; /* cli_cache_dir's answer, when cache_dir_set */
    bool cache_dir_set;
} CommonArgs;

/* A command's own option `id` (tui/options.def) with its value (NULL for a
 * flag): returns 1, or -1 after a diagnostic when the value is malformed
 * (0: not handled, a bug the parser reports). */
typedef int (*ArgFn)(OptionId id, const char *value, void *ctx, DiagList *d);

/* The whole command line of command `cmd` (tui/commands.def): the options
 * it declares (common ones here, its own through `own`, may be NULL), and
 * one model (optional when its operands say "[MODEL]"). False after a
 * diagnostic. */
bool args_parse(CommonArgs *ca, int argc, char **argv, const char *cmd, ArgFn own, void *ctx,
                DiagList *d);

/* --target, --target-cpu and --target-features are ones the backend that
 * generates code supports (the named one if it compiles, else the default
 * compiling one); with `here`, and a compiling backend named, the target must
 * also be this machine. False after a diagnostic listing the valid ones. */
bool args_check_target(const CommonArgs *ca, bool here, DiagList *d);
/* Takes common option `id` with its value; false if it is not a common one.
 * Sets *bad (with a diagnostic) when the value is malformed. */
bool args_common(CommonArgs *ca, OptionId id, const char *value, bool *bad, DiagList *d);
void args_free(CommonArgs *ca);
/* Reads the --input files (.npy, or .pb TensorProto) into `a`. */
bool args_load_inputs(CommonArgs *ca, Arena *a, DiagList *d);
/* Reads the --input values not read yet, so that every command compiles the
 * model specialised to them (an input that decides a shape or an If's
 * branch), not only those that run it. */
bool args_ensure_inputs(CommonArgs *ca, DiagList *d);
/* Session options from the arguments (known inputs in `known`). */
SessionOptions args_session_options(const CommonArgs *ca, KnownInput *known);
/* What needs native code (`what`: "compile", "opt: --emit=asm"): the
 * --backend named must compile; none named is the default compiling one. */
bool args_want_compiling(CommonArgs *ca, const char *what, DiagList *d);
/* Opens the session and sets its pipeline (default `dflt`); NULL after
 * reporting when the model cannot be loaded. */
Session *args_open_session(CommonArgs *ca, const char *dflt, KnownInput *known, DiagList *d);
/* Same, with session options the caller adjusted. */
Session *args_open_session_with(CommonArgs *ca, const SessionOptions *so, const char *dflt,
                                DiagList *d);
/* Same, from a graph imported before (session_open_module). */
Session *args_open_session_from(CommonArgs *ca, const SessionOptions *so, const Module *m,
                                const char *dflt, DiagList *d);
/* Same, from .hl text (one chunk of --split-input-file). */
Session *args_open_session_text(CommonArgs *ca, const char *dflt, const char *text,
                                DiagList *d);
/* --split-input-file: the parts of `text` between lines "// -----", each
 * padded with blank lines so that line numbers stay those of the file.
 * Returns the count; free each chunk and the array. */
int args_split_chunks(const char *text, char ***chunks);
/* One tensor per parameter of f: the given input, or the fixed-seed
 * generator's (announced on stderr when `announce`). */
Tensor **args_bind_inputs(const CommonArgs *ca, const Session *s, Arena *a, bool announce,
                          DiagList *d);
/* Fills t with the fixed-seed generator: floats uniform in [-1, 1), integers
 * in [0, 10), booleans fair. */
void args_fill_random(Tensor *t, uint64_t seed);

#endif
