/* The subcommands' options as tables (tui/options.def, tui/commands.def):
 * one lookup that every parser uses, and the --help text printed from the
 * same tables, so that a command accepts exactly what its help lists. */
#ifndef GLOWC_TUI_OPTIONS_H
#define GLOWC_TUI_OPTIONS_H

#include <stdbool.h>

#include "core/diag.h"
#include "core/strbuf.h"

typedef enum {
#define OPTION(id, spelling, value, help) OPT_##id,
#include "tui/options.def"
    OPT_NONE
} OptionId;

typedef struct OptionInfo {
    const char *spelling; /* "--emit", "-o" */
    const char *value;    /* NULL: a flag; "X": a value; "[=X]": an optional value */
    const char *help;
} OptionInfo;

typedef struct CommandSpec {
    const char *name;
    const char *operands;
    const char *summary;
    const OptionId *options; /* ends with OPT_NONE */
} CommandSpec;

const OptionInfo *option_info(OptionId id);
/* The command called `name`, NULL if none; and all of them. */
const CommandSpec *command_spec(const char *name);
int command_count(void);
const CommandSpec *command_at(int i);
bool command_takes(const CommandSpec *c, OptionId id);

/* Reads the option at argv[*i] if it is one (starts with '-' and is not
 * "-"): *id and *value (NULL for a flag, or an optional value not given),
 * advancing *i past a separate value. Returns 1 for an option of c's,
 * 0 when argv[*i] is an operand, -1 after "CMD: unknown option" or a
 * missing value. */
int option_next(const CommandSpec *c, int argc, char **argv, int *i, OptionId *id,
                const char **value, DiagList *d);

/* "usage: glowc CMD [OPTIONS] OPERANDS", the summary, and a line per option. */
void command_help(const CommandSpec *c, StrBuf *out);
/* The one-line usage: "glowc CMD [OPTIONS] OPERANDS". */
void command_usage(const CommandSpec *c, StrBuf *out);

#endif
