/* glowc: the entry point, which dispatches to a subcommand (the commands
 * and their options are tables: tui/commands.def, tui/options.def). */
#include <stdio.h>
#include <string.h>

#include "tui/cli.h"
#include "tui/options.h"

typedef struct Command {
    const char *name;
    int (*run)(int argc, char **argv);
} Command;

static const Command commands[] = {
#define COMMAND(name, fn, operands, summary, opts) {name, fn},
#include "tui/commands.def"
};

static void usage(FILE *out) {
    fprintf(out, "usage: glowc COMMAND [ARGS]\n\ncommands:\n");
    for (int i = 0; i < command_count(); i++)
        fprintf(out, "  %-13s %s\n", command_at(i)->name, command_at(i)->summary);
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
                    StrBuf sb;
                    sb_init(&sb);
                    command_help(command_spec(commands[i].name), &sb);
                    fputs(sb_str(&sb), stdout);
                    sb_free(&sb);
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
