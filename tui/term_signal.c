/* Signals that must not leave the terminal in raw or curses mode. */
#include "tui/term_signal.h"

#include <string.h>

/* Written by the handler, read by the front ends' loops. */
static volatile sig_atomic_t caught;

static const int watched[TERM_NSIGNALS] = {SIGINT, SIGTERM, SIGHUP};

static void on_signal(int sig) {
    caught = sig;
}

void term_signal_install(TermSignals *ts, bool interrupt) {
    memset(ts, 0, sizeof *ts);
    caught = 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0; /* no SA_RESTART: reads return EINTR */
    for (int i = 0; i < TERM_NSIGNALS; i++) {
        ts->installed[i] = interrupt || watched[i] != SIGINT;
        if (ts->installed[i])
            sigaction(watched[i], &sa, &ts->saved[i]);
    }
}

void term_signal_restore(TermSignals *ts) {
    for (int i = 0; i < TERM_NSIGNALS; i++) {
        if (ts->installed[i])
            sigaction(watched[i], &ts->saved[i], NULL);
        ts->installed[i] = false;
    }
}

int term_signal_caught(void) {
    return caught;
}

void term_signal_finish(TermSignals *ts) {
    term_signal_restore(ts);
    int sig = caught;
    if (!sig)
        return;
    signal(sig, SIG_DFL);
    raise(sig);
}
