/* SIGINT, SIGTERM and SIGHUP for the interactive front ends: a handler
 * that only records the signal (the one global the explorer has: a signal
 * handler cannot reach anything else), so that the REPL and the TUI restore
 * the terminal and leave on their own path. Installed without SA_RESTART, so
 * a blocking read returns EINTR and the caller sees the flag at once. */
#ifndef GLOWC_TUI_TERM_SIGNAL_H
#define GLOWC_TUI_TERM_SIGNAL_H

#include <signal.h>
#include <stdbool.h>

enum { TERM_NSIGNALS = 3 };

/* The handlers that were there before, to put back. */
typedef struct TermSignals {
    struct sigaction saved[TERM_NSIGNALS];
    bool installed[TERM_NSIGNALS];
} TermSignals;

/* Installs the handlers. `interrupt` says whether SIGINT counts too (the
 * TUI) or is left alone (the REPL's line editor reads ^C itself). */
void term_signal_install(TermSignals *ts, bool interrupt);
/* Puts the old handlers back. */
void term_signal_restore(TermSignals *ts);
/* The signal caught since installation (0: none). */
int term_signal_caught(void);
/* Once the terminal is restored: puts the old handlers back and, if a
 * signal was caught, ends the process the way it would have (re-raised). */
void term_signal_finish(TermSignals *ts);

#endif
