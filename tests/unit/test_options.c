/* Unit tests for tui/options: every subcommand's --help lists exactly the
 * options it accepts. The help is printed from the option tables; these
 * tests hold the tables, the help text and the parsers together: each
 * option in a command's help parses (option_next) and reaches the
 * command's own code (run with a missing model, it must fail on the model,
 * never on the option), and each option a command does not list is
 * refused as unknown and absent from its help. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tui/cli.h"
#include "tui/options.h"

/* The subcommands by name (main.c's table is static to it). */
static const struct {
    const char *name;
    int (*run)(int, char **);
} commands[] = {
#define COMMAND(name, fn, operands, summary, opts) {name, fn},
#include "tui/commands.def"
};

static char *help_of(const CommandSpec *c) {
    StrBuf sb;
    sb_init(&sb);
    command_help(c, &sb);
    return sb_take(&sb);
}

/* The option spelled `spelling` appears in `help` as a whole option: at
 * the start of an option line, followed by '=', ' ', '[' or the line end. */
static bool help_lists(const char *help, const char *spelling) {
    size_t n = strlen(spelling);
    for (const char *p = help; (p = strstr(p, spelling)); p += n) {
        bool starts = p >= help + 2 && p[-1] == ' ' && p[-2] == ' ' &&
                      (p == help + 2 || p[-3] == '\n');
        char after = p[n];
        if (starts && (after == '=' || after == ' ' || after == '[' || after == '\n'))
            return true;
    }
    return false;
}

static void test_help_lists_every_option_and_only_those(void **state) {
    (void)state;
    for (int i = 0; i < command_count(); i++) {
        const CommandSpec *c = command_at(i);
        char *help = help_of(c);
        for (OptionId id = 0; id < OPT_NONE; id++) {
            bool takes = command_takes(c, id), listed = help_lists(help, option_info(id)->spelling);
            if (takes != listed)
                fail_msg("%s: option %s is %s but %s in --help", c->name,
                         option_info(id)->spelling, takes ? "accepted" : "not accepted",
                         listed ? "listed" : "not listed");
        }
        free(help);
    }
}

/* Every option-like word that starts a line of the help parses as an
 * option of that command (nothing in the help that the parser lacks). */
static void test_every_help_line_parses(void **state) {
    (void)state;
    for (int i = 0; i < command_count(); i++) {
        const CommandSpec *c = command_at(i);
        char *help = help_of(c);
        for (char *line = strtok(help, "\n"); line; line = strtok(NULL, "\n")) {
            if (strncmp(line, "  -", 3))
                continue;
            char word[64];
            size_t n = strcspn(line + 2, "=[ ");
            snprintf(word, sizeof word, "%.*s", (int)n, line + 2);
            char *argv[] = {(char *)c->name, word, "value", NULL};
            int at = 1;
            OptionId id;
            const char *v;
            DiagList d;
            diag_init(&d, NULL);
            int r = option_next(c, 3, argv, &at, &id, &v, &d);
            if (r != 1 || strcmp(option_info(id)->spelling, word))
                fail_msg("%s --help lists '%s', which its parser does not take", c->name, word);
            diag_free(&d);
        }
        free(help);
    }
}

static void test_unknown_options_refused(void **state) {
    (void)state;
    for (int i = 0; i < command_count(); i++) {
        const CommandSpec *c = command_at(i);
        for (OptionId id = 0; id < OPT_NONE; id++) {
            if (command_takes(c, id))
                continue;
            char *argv[] = {(char *)c->name, (char *)option_info(id)->spelling, "1", NULL};
            int at = 1;
            OptionId got;
            const char *v;
            DiagList d;
            diag_init(&d, NULL);
            assert_int_equal(option_next(c, 3, argv, &at, &got, &v, &d), -1);
            assert_int_equal(d.errors, 1);
            diag_free(&d);
        }
    }
}

static void test_every_option_belongs_to_a_command(void **state) {
    (void)state;
    for (OptionId id = 0; id < OPT_NONE; id++) {
        bool used = false;
        for (int i = 0; i < command_count(); i++)
            used |= command_takes(command_at(i), id);
        if (!used)
            fail_msg("option %s is declared but no command takes it", option_info(id)->spelling);
    }
}

/* The options the issue found missing from --help. */
static void test_known_gaps_listed(void **state) {
    (void)state;
    char *opt = help_of(command_spec("opt")), *print = help_of(command_spec("print"));
    assert_true(help_lists(opt, "--emit"));
    assert_true(help_lists(opt, "--split-input-file"));
    assert_true(help_lists(print, "--no-loc"));
    assert_true(help_lists(print, "--dense-limit"));
    assert_true(help_lists(print, "--dim"));
    free(opt);
    free(print);
}

static void test_values(void **state) {
    (void)state;
    const CommandSpec *c = command_spec("opt");
    DiagList d;
    diag_init(&d, NULL);
    OptionId id;
    const char *v;
    int at = 1;
    char *a1[] = {"opt", "--emit=lir", NULL};
    assert_int_equal(option_next(c, 2, a1, &at, &id, &v, &d), 1);
    assert_int_equal(id, OPT_EMIT);
    assert_string_equal(v, "lir");
    at = 1;
    char *a2[] = {"opt", "--emit", "llvm", NULL};
    assert_int_equal(option_next(c, 3, a2, &at, &id, &v, &d), 1);
    assert_string_equal(v, "llvm");
    assert_int_equal(at, 2);
    at = 1;
    char *a3[] = {"opt", "--emit", NULL}; /* no value left */
    assert_int_equal(option_next(c, 2, a3, &at, &id, &v, &d), -1);
    at = 1;
    char *a4[] = {"opt", "--print-changed", "x.hl", NULL}; /* optional value: only with = */
    assert_int_equal(option_next(c, 3, a4, &at, &id, &v, &d), 1);
    assert_null(v);
    assert_int_equal(at, 1);
    at = 1;
    char *a5[] = {"opt", "--print-changed=diff", NULL};
    assert_int_equal(option_next(c, 2, a5, &at, &id, &v, &d), 1);
    assert_string_equal(v, "diff");
    at = 1;
    char *a6[] = {"opt", "--stats=yes", NULL}; /* a flag takes no value */
    assert_int_equal(option_next(c, 2, a6, &at, &id, &v, &d), -1);
    at = 1;
    char *a7[] = {"opt", "x.hl", NULL}; /* an operand */
    assert_int_equal(option_next(c, 2, a7, &at, &id, &v, &d), 0);
    diag_free(&d);
}

/* A value each option accepts (most take any number). */
static const char *value_for(OptionId id) {
    switch (id) {
    case OPT_DIM: return "N=1";
    case OPT_INPUT: return "x=/nonexistent/x.npy";
    case OPT_BACKEND: return "interp";
    case OPT_FALLBACK: return "interp";
    case OPT_MAX_MEMORY: return "1G";
    case OPT_EMIT: return "graph";
    case OPT_LEVEL: return "graph";
    case OPT_BREAK_PASS: return "cse";
    case OPT_PASSES: return "cse";
    default: return "1";
    }
}

/* Runs the command with one option and a model that does not exist; its
 * stderr must not call the option unknown or unimplemented. */
static void test_commands_take_their_options(void **state) {
    (void)state;
    char path[] = "/tmp/glowc-test-options.XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    int saved = dup(STDERR_FILENO), saved_out = dup(STDOUT_FILENO);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        const CommandSpec *c = command_spec(commands[i].name);
        if (!strcmp(c->name, "explore") || !strcmp(c->name, "repl"))
            continue; /* they wait for a terminal or read stdin */
        for (const OptionId *o = c->options; *o != OPT_NONE; o++) {
            const OptionInfo *info = option_info(*o);
            char *argv[4];
            int argc = 0;
            argv[argc++] = (char *)c->name;
            char joined[128];
            if (info->value && info->value[0] != '[' && info->spelling[1] == '-') {
                snprintf(joined, sizeof joined, "%s=%s", info->spelling, value_for(*o));
                argv[argc++] = joined;
            } else if (info->value && info->value[0] != '[') {
                argv[argc++] = (char *)info->spelling;
                argv[argc++] = (char *)value_for(*o);
            } else {
                argv[argc++] = (char *)info->spelling;
            }
            argv[argc++] = "/nonexistent/model.hl";
            fflush(NULL);
            assert_int_equal(ftruncate(fd, 0), 0);
            lseek(fd, 0, SEEK_SET);
            dup2(fd, STDERR_FILENO);
            dup2(fd, STDOUT_FILENO);
            int status = commands[i].run(argc, argv);
            fflush(NULL);
            dup2(saved, STDERR_FILENO);
            dup2(saved_out, STDOUT_FILENO);
            char out[4096] = {0};
            lseek(fd, 0, SEEK_SET);
            ssize_t n = read(fd, out, sizeof out - 1);
            out[n > 0 ? n : 0] = 0;
            if (strstr(out, "unknown option") || strstr(out, "not implemented") ||
                strstr(out, "needs a value") || strstr(out, "takes no value"))
                fail_msg("glowc %s %s: %s", c->name, argv[1], out);
            assert_int_not_equal(status, 0); /* the model is missing */
        }
    }
    close(fd);
    unlink(path);
    close(saved);
    close(saved_out);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_help_lists_every_option_and_only_those),
        cmocka_unit_test(test_every_help_line_parses),
        cmocka_unit_test(test_unknown_options_refused),
        cmocka_unit_test(test_every_option_belongs_to_a_command),
        cmocka_unit_test(test_known_gaps_listed),
        cmocka_unit_test(test_values),
        cmocka_unit_test(test_commands_take_their_options),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
