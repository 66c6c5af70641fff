/* glowc: the entry point, which dispatches to a subcommand. */
#include <stdio.h>
#include <string.h>

#include "tui/cli.h"

static const Command commands[] = {
    {"print", cmd_print, "glowc print [--max-memory=SIZE] MODEL.onnx|FILE.hl",
     "print a model as high-level text IR"},
    {"opt", cmd_opt,
     "glowc opt [-O0|-O1|-O2|--passes=a,b,c] [--print-after-all|--print-after=PASS|"
     "--print-before=PASS] [--no-verify] [--time-passes] [--stats] [--break-pass=PASS] FILE",
     "run a pass pipeline (default -O2) and print the resulting text IR"},
    {"passes", cmd_passes, "glowc passes", "list the passes and the pipelines"},
    {"run", cmd_run,
     "glowc run MODEL [-O0|-O1|-O2|--passes=...] [--input NAME=FILE.npy|.pb]... [--output-dir DIR] "
     "[--dim NAME=VALUE]... [--max-memory=SIZE] [--break-pass=PASS] [--backend=interp|interp-lir|cpu] "
     "[--dump-values DIR] [--no-verify]",
     "run a model on the reference interpreter (default -O0: the imported graph)"},
    {"compare", cmd_compare,
     "glowc compare MODEL [--backend=interp|interp-lir|cpu] [-O0|-O1|-O2|--passes=...] "
     "[--input NAME=FILE.npy]... [--rtol R] [--atol A] [--break-pass=PASS]",
     "compare every value, by ONNX name, with the -O0 interpreter's (exit 1: an output is "
     "beyond tolerance)"},
    {"bisect", cmd_bisect,
     "glowc bisect MODEL [-O2|--passes=...] [--input NAME=FILE.npy]... [--rtol R] [--atol A] "
     "[--break-pass=PASS] [--backend=interp|interp-lir|cpu] [--no-verify]",
     "find the first pass that changes a model's outputs beyond tolerance"},
    {"compile", cmd_compile,
     "glowc compile MODEL (-o EXE | --bundle DIR) [-O0|-O1|-O2] [--target-cpu=NAME] [--no-verify]",
     "compile a model to a standalone executable or a bundle for linking"},
    {"mem", cmd_mem, "glowc mem MODEL [-O1|-O2|--passes=...] [--svg FILE] [--json FILE] [--no-verify]",
     "print the static memory plan (arena, lower bound, naive size)"},
    {"dot", cmd_dot,
     "glowc dot MODEL [-O0|-O1|-O2|--passes=...] [--after=PASS] [--level=graph|lir] "
     "[-o FILE.dot|FILE.svg|FILE.png] [--no-verify]",
     "draw the graph or the low-level IR after a step (DOT, SVG or PNG)"},
    {"repl", cmd_repl, "glowc repl [MODEL] [-O2|--passes=...] [-c SCRIPT] [--no-verify]",
     "step through the pipeline with commands (from the terminal, a script or stdin)"},
    {"explore", cmd_explore, "glowc explore [MODEL] [-O0|-O1|-O2|--passes=...] [--no-verify]",
     "the terminal explorer: every step's graph, DOT, LIR, memory map, diff and stats"},
    {"bench", cmd_bench, "glowc bench MODEL [-O0|-O1|-O2] [--backend=interp|interp-lir|cpu] [--iters N] "
     "[--threads T] [--per-node] [--trace FILE.json] [--no-verify]",
     "time inference runs (median and minimum)"},
    {"conform", cmd_conform, "glowc conform [-O0|-O1|-O2] [--rtol R] [--atol A] [--jobs N] [--no-verify] DIR...",
     "run ONNX backend test folders and compare with their stored outputs"},
};

static void usage(FILE *out) {
    fprintf(out, "usage: glowc COMMAND [ARGS]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\n'glowc COMMAND --help' shows a command's options.\n");
}

int main(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
        !strcmp(argv[1], "help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 1 : 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        if (!strcmp(argv[1], commands[i].name)) {
            for (int j = 2; j < argc; j++) {
                if (!strcmp(argv[j], "--help") || !strcmp(argv[j], "-h")) {
                    printf("usage: %s\n", commands[i].usage);
                    return 0;
                }
            }
            return commands[i].run(argc - 1, argv + 1);
        }
    }
    fprintf(stderr, "glowc: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return 1;
}
