/* A small line editor for the REPL on a terminal (no readline): the
 * terminal in raw mode for the length of one line, Emacs-style keys,
 * arrows, a history. Keys: left/right ^B ^F, home/end ^A ^E, backspace,
 * delete, ^D (end of input on an empty line), ^K ^U ^W, up/down ^P ^N for
 * history, ^L clears the screen, ^C abandons the line. */
#ifndef GLOWC_TUI_LINEEDIT_H
#define GLOWC_TUI_LINEEDIT_H

#include <stdbool.h>

typedef struct LineEdit {
    int in, out; /* file descriptors of the terminal */
    char **history;
    int nhistory, cap;
} LineEdit;

void lineedit_init(LineEdit *le, int in, int out);
void lineedit_free(LineEdit *le);
/* One line without its newline (malloc'd), or NULL at the end of input or
 * when a signal arrived (term_signal_caught says which). */
char *lineedit_read(LineEdit *le, const char *prompt);
void lineedit_remember(LineEdit *le, const char *line);

#endif
