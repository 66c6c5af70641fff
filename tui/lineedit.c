/* The REPL's line editor: raw mode for one line, redrawn in full on every
 * key (a line is short; simplicity beats minimal output). */
#include "tui/lineedit.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

typedef struct Line {
    char *buf;
    size_t len, cap, pos;
    int hist; /* which history entry is shown (nhistory: the line being typed) */
    char *typed; /* the line being typed, while browsing history */
} Line;

enum { KEY_NONE = -1, KEY_UP = 1000, KEY_DOWN, KEY_LEFT, KEY_RIGHT, KEY_HOME, KEY_END, KEY_DEL };

void lineedit_init(LineEdit *le, int in, int out) {
    memset(le, 0, sizeof *le);
    le->in = in;
    le->out = out;
}

void lineedit_free(LineEdit *le) {
    for (int i = 0; i < le->nhistory; i++)
        free(le->history[i]);
    free(le->history);
    memset(le, 0, sizeof *le);
}

void lineedit_remember(LineEdit *le, const char *line) {
    if (!line[0] || (le->nhistory && !strcmp(le->history[le->nhistory - 1], line)))
        return;
    if (le->nhistory == le->cap) {
        le->cap = le->cap ? 2 * le->cap : 32;
        le->history = realloc(le->history, (size_t)le->cap * sizeof *le->history);
    }
    le->history[le->nhistory++] = strdup(line);
}

static void put(const LineEdit *le, const char *s, size_t n) {
    while (n > 0) {
        ssize_t w = write(le->out, s, n);
        if (w <= 0 && errno != EINTR)
            return;
        if (w > 0) {
            s += w;
            n -= (size_t)w;
        }
    }
}

static void puts_term(const LineEdit *le, const char *s) {
    put(le, s, strlen(s));
}

static void redraw(const LineEdit *le, const char *prompt, const Line *l) {
    char move[32];
    puts_term(le, "\r");
    puts_term(le, prompt);
    put(le, l->buf, l->len);
    puts_term(le, "\x1b[K\r");
    snprintf(move, sizeof move, "\x1b[%zuC", strlen(prompt) + l->pos);
    if (strlen(prompt) + l->pos)
        puts_term(le, move);
}

static int read_byte(const LineEdit *le) {
    unsigned char c;
    ssize_t n = read(le->in, &c, 1);
    return n == 1 ? c : -2; /* -2: end of input, error or a signal */
}

/* ESC [ A and friends, ESC O H, ESC [ 3 ~. */
static int read_escape(const LineEdit *le) {
    int a = read_byte(le);
    if (a != '[' && a != 'O')
        return KEY_NONE;
    int b = read_byte(le);
    switch (b) {
    case 'A': return KEY_UP;
    case 'B': return KEY_DOWN;
    case 'C': return KEY_RIGHT;
    case 'D': return KEY_LEFT;
    case 'H': return KEY_HOME;
    case 'F': return KEY_END;
    default: break;
    }
    if (b >= '0' && b <= '9' && read_byte(le) == '~')
        return b == '3' ? KEY_DEL : b == '1' || b == '7' ? KEY_HOME : b == '4' || b == '8' ? KEY_END
                                                                                            : KEY_NONE;
    return KEY_NONE;
}

static void insert(Line *l, char c) {
    if (l->len + 2 > l->cap) {
        l->cap = l->cap ? 2 * l->cap : 128;
        l->buf = realloc(l->buf, l->cap);
    }
    memmove(l->buf + l->pos + 1, l->buf + l->pos, l->len - l->pos);
    l->buf[l->pos++] = c;
    l->len++;
}

static void erase(Line *l, size_t from, size_t to) {
    memmove(l->buf + from, l->buf + to, l->len - to);
    l->len -= to - from;
    l->pos = from;
}

static void set_text(Line *l, const char *s) {
    l->len = l->pos = 0;
    for (; *s; s++)
        insert(l, *s);
}

static void browse(LineEdit *le, Line *l, int dir) {
    int to = l->hist + dir;
    if (to < 0 || to > le->nhistory)
        return;
    if (l->hist == le->nhistory) {
        free(l->typed);
        l->typed = strndup(l->buf ? l->buf : "", l->len);
    }
    l->hist = to;
    set_text(l, to == le->nhistory ? (l->typed ? l->typed : "") : le->history[to]);
}

static size_t word_start(const Line *l) {
    size_t p = l->pos;
    while (p > 0 && l->buf[p - 1] == ' ')
        p--;
    while (p > 0 && l->buf[p - 1] != ' ')
        p--;
    return p;
}

/* 1: the line is done, 0: go on, -1: end of input. */
static int edit_key(LineEdit *le, Line *l, int key, const char *prompt) {
    switch (key) {
    case '\r':
    case '\n': return 1;
    case -2: return -1;
    case 4: /* ^D */
        if (!l->len)
            return -1;
        if (l->pos < l->len)
            erase(l, l->pos, l->pos + 1);
        return 0;
    case 3: /* ^C: abandon the line */
        puts_term(le, "^C");
        l->len = l->pos = 0;
        return 1;
    case 127:
    case 8:
        if (l->pos > 0)
            erase(l, l->pos - 1, l->pos);
        return 0;
    case KEY_DEL:
        if (l->pos < l->len)
            erase(l, l->pos, l->pos + 1);
        return 0;
    case 1:
    case KEY_HOME: l->pos = 0; return 0;
    case 5:
    case KEY_END: l->pos = l->len; return 0;
    case 2:
    case KEY_LEFT: l->pos -= l->pos > 0; return 0;
    case 6:
    case KEY_RIGHT: l->pos += l->pos < l->len; return 0;
    case 11: l->len = l->pos; return 0;         /* ^K */
    case 21: erase(l, 0, l->pos); return 0;     /* ^U */
    case 23: erase(l, word_start(l), l->pos); return 0; /* ^W */
    case 16:
    case KEY_UP: browse(le, l, -1); return 0;
    case 14:
    case KEY_DOWN: browse(le, l, 1); return 0;
    case 12: puts_term(le, "\x1b[H\x1b[2J"); (void)prompt; return 0;
    default:
        if (key >= 32 && key < 256 && key != 127)
            insert(l, (char)key);
        return 0;
    }
}

char *lineedit_read(LineEdit *le, const char *prompt) {
    struct termios saved, raw;
    if (tcgetattr(le->in, &saved))
        return NULL;
    raw = saved;
    raw.c_iflag &= ~(tcflag_t)(BRKINT | ICRNL | INPCK | ISTRIP | IXON);
    raw.c_lflag &= ~(tcflag_t)(ECHO | ICANON | IEXTEN | ISIG);
    raw.c_cc[VMIN] = 1;
    raw.c_cc[VTIME] = 0;
    tcsetattr(le->in, TCSAFLUSH, &raw);
    Line l = {.hist = le->nhistory};
    insert(&l, 0);
    l.len = l.pos = 0;
    int status = 0;
    while (status == 0) {
        redraw(le, prompt, &l);
        int c = read_byte(le);
        status = edit_key(le, &l, c == 27 ? read_escape(le) : c, prompt);
    }
    redraw(le, prompt, &l);
    puts_term(le, "\r\n");
    tcsetattr(le->in, TCSAFLUSH, &saved);
    free(l.typed);
    if (status < 0) {
        free(l.buf);
        return NULL;
    }
    l.buf[l.len] = 0;
    return l.buf;
}
