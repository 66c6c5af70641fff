/* The subcommands' option tables, the lookup every parser uses, and the
 * --help text printed from them. */
#include "tui/options.h"

#include <stdio.h>
#include <string.h>

static const OptionInfo options[] = {
#define OPTION(id, spelling, value, help) {spelling, value, help},
#include "tui/options.def"
};

#define UNPAREN(...) __VA_ARGS__
static const CommandSpec commands[] = {
#define COMMAND(name, fn, operands, summary, opts) \
    {name, operands, summary, (const OptionId[])UNPAREN opts},
#include "tui/commands.def"
};

const OptionInfo *option_info(OptionId id) {
    return id < OPT_NONE ? &options[id] : NULL;
}

int command_count(void) {
    return (int)(sizeof commands / sizeof commands[0]);
}

const CommandSpec *command_at(int i) {
    return i >= 0 && i < command_count() ? &commands[i] : NULL;
}

const CommandSpec *command_spec(const char *name) {
    for (int i = 0; i < command_count(); i++)
        if (!strcmp(commands[i].name, name))
            return &commands[i];
    return NULL;
}

bool command_takes(const CommandSpec *c, OptionId id) {
    for (const OptionId *o = c->options; *o != OPT_NONE; o++)
        if (*o == id)
            return true;
    return false;
}

static bool optional_value(const OptionInfo *o) {
    return o->value && o->value[0] == '[';
}

int option_next(const CommandSpec *c, int argc, char **argv, int *i, OptionId *id,
                const char **value, DiagList *d) {
    const char *a = argv[*i];
    if (a[0] != '-' || !a[1])
        return 0;
    for (const OptionId *p = c->options; *p != OPT_NONE; p++) {
        const OptionInfo *o = &options[*p];
        size_t n = strlen(o->spelling);
        if (strncmp(a, o->spelling, n) || (a[n] && a[n] != '='))
            continue;
        bool long_opt = o->spelling[1] == '-';
        *id = *p;
        *value = NULL;
        if (!o->value || optional_value(o)) {
            if (a[n] == '=' && !o->value) {
                diag_error(d, NULL, "%s: %s takes no value ('%s')", c->name, o->spelling, a);
                return -1;
            }
            *value = a[n] ? a + n + 1 : NULL;
            return 1;
        }
        if (a[n] == '=' && long_opt) {
            *value = a + n + 1;
            return 1;
        }
        if (a[n] || *i + 1 >= argc) {
            diag_error(d, NULL, "%s: %s needs a value (%s %s)", c->name, o->spelling, o->spelling,
                       o->value);
            return -1;
        }
        *value = argv[++*i];
        return 1;
    }
    diag_error(d, NULL, "%s: unknown option '%s' (see 'glowc %s --help')", c->name, a, c->name);
    return -1;
}

void command_usage(const CommandSpec *c, StrBuf *out) {
    sb_printf(out, "glowc %s%s%s%s", c->name, c->options[0] != OPT_NONE ? " [OPTIONS]" : "",
              c->operands[0] ? " " : "", c->operands);
}

void command_help(const CommandSpec *c, StrBuf *out) {
    sb_append(out, "usage: ");
    command_usage(c, out);
    sb_printf(out, "\n%s\n", c->summary);
    if (c->options[0] != OPT_NONE)
        sb_append(out, "\noptions:\n");
    for (const OptionId *p = c->options; *p != OPT_NONE; p++) {
        const OptionInfo *o = &options[*p];
        char left[64];
        if (!o->value)
            snprintf(left, sizeof left, "%s", o->spelling);
        else if (optional_value(o))
            snprintf(left, sizeof left, "%s%s", o->spelling, o->value);
        else
            snprintf(left, sizeof left, "%s%s%s", o->spelling, o->spelling[1] == '-' ? "=" : " ",
                     o->value);
        if (strlen(left) > 28)
            sb_printf(out, "  %s\n  %-28s %s\n", left, "", o->help);
        else
            sb_printf(out, "  %-28s %s\n", left, o->help);
    }
}
