/* The explorer's core, shared by the REPL and the terminal UI: a session
 * and what a person does with it -- load a model, choose a pipeline, move
 * between steps, view a step (graph, DOT, LIR, memory map, LLVM IR, diff,
 * statistics), run it, compare it layer by layer with the import, follow a
 * node through the steps, bisect, write SVG. Everything is written once
 * here, as text into a StrBuf (errors as diagnostics), so that the two
 * front ends differ only in how they show it. It talks to the session
 * (passes/session.h) and to nothing else of the pipeline, and knows no pass
 * by name. */
#ifndef GLOWC_TUI_EXPLORE_CORE_H
#define GLOWC_TUI_EXPLORE_CORE_H

#include "core/textdiff.h"
#include "dot/graph_dot.h"
#include "tui/args.h"

typedef enum {
    VIEW_GRAPH,
    VIEW_DOT,
    VIEW_LIR,
    VIEW_MEM,
    VIEW_LLVM,
    VIEW_DIFF,
    VIEW_STATS,
    VIEW_PROFILE, /* per-instruction time of the step's native code */
    VIEW_QUANT,   /* --quantize: float against quantized, per value (quant_report.h) */
    VIEW_COUNT
} ExploreView;

/* When a value differs "beyond tolerance": some element has
 * |got - want| > atol + rtol * M, M the largest magnitude of the reference
 * value (the whole tensor's, not the element's). Relative to M, because a
 * value is computed at the scale of its largest elements: an element near
 * zero inside it carries rounding error of that scale (random-weight models
 * give values anywhere from 1e-14 to 1e12). atol (default TOLERANCE_ATOL)
 * covers a value that is all rounding noise: the mean of a normalised row is
 * 0 exactly, computed as +-1e-8, and two summation orders differ by as much. */
#define TOLERANCE_ATOL 1e-6
typedef struct Tolerance {
    double rtol, atol;
    bool atol_given;
} Tolerance;

/* --rtol (rtol true) or --atol set from `v`; false, with an error that
 * names `cmd`, when it is not a number >= 0. */
bool tolerance_set(Tolerance *tol, bool rtol, const char *v, const char *cmd, DiagList *d);

typedef struct Explorer {
    CommonArgs *args;  /* dims, break-pass ... from the command line (not owned) */
    Session *s;        /* NULL when nothing is loaded */
    char *model;       /* the path loaded (or tried) */
    char *pipeline;    /* the pipeline in use: "-O2" or a pass list */
    char *error;       /* why the last load failed, as the diagnostics read */
    Tolerance tol;
    DotContext *dot;   /* Graphviz, kept for the explorer's life */
    bool ansi_diffs;   /* the REPL on a terminal: diffs mark changes in colour */
} Explorer;

void explore_init(Explorer *e, CommonArgs *args, const char *pipeline);
void explore_free(Explorer *e);

/* Loads a model and runs the whole pipeline, every step kept. On failure
 * e->error says why (and so does d); a failing pass still leaves the steps
 * before it, and its own. */
bool explore_load(Explorer *e, const char *path, StrBuf *out, DiagList *d);
/* "-O2" or "a,b,c": runs the model through it from the import again. */
bool explore_set_pipeline(Explorer *e, const char *spec, StrBuf *out, DiagList *d);

int explore_nsteps(const Explorer *e);
int explore_current(const Explorer *e);
const Step *explore_step(const Explorer *e, int k);
/* A step by number, "PASS#K", or a bare pass name: its next run after the
 * current step (wrapping), so that repeating `step cse` visits each cse in
 * turn (session_find_steps). -1 after an error prefixed by `what`. */
int explore_find_step(const Explorer *e, const char *arg, const char *what, DiagList *d);
bool explore_goto(Explorer *e, const char *arg, StrBuf *out, DiagList *d);
/* Moves by delta steps (clamped); with changed_only, to the next/previous
 * step that changed something. False when it could not move. */
bool explore_move(Explorer *e, int delta, bool changed_only);
void explore_set_current(Explorer *e, int k);

/* One line per step: current marked '>', changed or not, lines +added
 * -removed, sizes. And one step's line alone, for the TUI's left pane. */
void explore_steps(const Explorer *e, StrBuf *out);
void explore_step_brief(const Explorer *e, int k, char *buf, size_t size);
/* "step 11/30: fuse-activation". */
void explore_where(const Explorer *e, StrBuf *out);

const char *explore_view_name(ExploreView v);
/* Parses a view name (graph, dot, lir, mem, llvm, diff, stats). */
bool explore_view_from_name(const char *name, ExploreView *out);
/* The current step's view as text. VIEW_DIFF diffs `base` (a view other
 * than VIEW_DIFF; VIEW_COUNT: the step's own IR) against the previous step.
 * `width` sizes the memory chart. */
bool explore_view(const Explorer *e, ExploreView v, ExploreView base, int width, StrBuf *out,
                  DiagList *d);

/* Any two steps' views diffed: ka's against kb's, `base` as for VIEW_DIFF
 * (VIEW_COUNT: the view that shows what kb did). */
bool explore_diff_steps(const Explorer *e, int ka, int kb, ExploreView base, int width,
                        StrBuf *out, DiagList *d);

/* For each line of a unified diff, the line it pairs with: a removed line
 * with the added line that edits it (in order, the first similar one a few
 * lines on), and back; -1 for the others. Malloc'd, n entries. */
int *explore_diff_partners(char *const *lines, int n);
/* The changed bytes of diff line `line` ('-' or '+' first) against its
 * partner, as offsets into `line`; false when the lines share nothing. */
bool explore_changed_span(const char *line, const char *partner, TextSpan *span);
/* A unified diff with the changed part of each paired -/+ line marked:
 * [-removed-] and {+added+} as text, or with ANSI colours and reverse
 * video for a terminal. */
void explore_mark_changes(const char *diff, bool ansi, StrBuf *out);

/* The node called NAME (provenance name, or %label/%id at the current
 * step): its line, operands and users now, and what became of it in every
 * step -- changed, gone, which instructions, which LLVM function. */
bool explore_node(const Explorer *e, const char *name, StrBuf *out, DiagList *d);

/* The node names `node` (and the TUI's o) accepts, for completion: the
 * provenance names of the import's graph and of the current step's graph
 * or program, sorted, each once. A malloc'd array of *n names owned by the
 * session (valid until it is loaded again); NULL when nothing is loaded. */
const char **explore_node_names(const Explorer *e, int *n);

/* Runs the current step on the interpreter (inputs "NAME=FILE.npy"; the
 * others from the fixed-seed generator): its outputs and the largest
 * difference from the import's. */
bool explore_run(const Explorer *e, char *const *inputs, int ninputs, StrBuf *out, DiagList *d);
/* Runs the current step and the import, and lists for every value both
 * compute (matched by provenance) the largest difference, in schedule
 * order, marking the first beyond tolerance. */
bool explore_compare(const Explorer *e, char *const *inputs, int ninputs, StrBuf *out,
                     DiagList *d);
/* The same for step k with a given tolerance (glowc compare, the REPL's
 * --rtol/--atol): 1 if an output is beyond tolerance, 0 if none, -1 if a
 * run failed. A codegen or llvm-opt step runs as native code. */
int explore_compare_step(const Explorer *e, int k, const Tolerance *tol, char *const *inputs,
                         int ninputs, StrBuf *out, DiagList *d);
/* Runs every step that changed something (running the rest of the
 * pipeline as it goes), naming the first whose outputs leave the import's
 * beyond tolerance; this is also `glowc bisect`. 1: a bad step was found,
 * 0: none, -1: the import itself could not run. */
int explore_bisect_session(Session *s, Tensor *const *inputs, const Tolerance *tol,
                           StrBuf *out, DiagList *d);
bool explore_bisect(const Explorer *e, char *const *inputs, int ninputs, StrBuf *out,
                    DiagList *d);

/* The current step as a picture, format by the file's extension (.svg,
 * .png, .dot): the graph, or the low-level program at a low-level step;
 * with mem, the memory map (SVG only). */
bool explore_write_picture(const Explorer *e, const char *path, bool mem, StrBuf *out,
                           DiagList *d);
/* The graph (or with lir, the low-level program) of step k in `fmt`,
 * highlighting what step k changed. A graph view of a low-level step shows
 * the last graph before it. */
bool explore_dot(DotContext *c, const Session *s, int k, bool lir, DotFormat fmt, StrBuf *out,
                 DiagList *d);
/* Writes an executable from the current step's code generation, when the
 * pipeline has one. */
bool explore_compile(const Explorer *e, const char *path, StrBuf *out, DiagList *d);

#endif
