/* The REPL's commands, one line at a time, over an explorer: what `glowc
 * repl` reads and what the terminal UI's `:` command line takes, through
 * the one dispatcher (tui/repl.c). */
#ifndef GLOWC_TUI_REPL_H
#define GLOWC_TUI_REPL_H

#include "tui/explore_core.h"

/* Runs one command line ("step 3", "svg out.svg --mem"; the line is split
 * in place). Output into out, errors into d; false if the command failed.
 * *quit is set by quit and exit. A blank line or a comment does nothing. */
bool repl_execute(Explorer *e, char *line, StrBuf *out, DiagList *d, bool *quit);
/* The i-th command's name, NULL past the last (for completion). */
const char *repl_command_name(int i);

#endif
