/* The arithmetic of string elements (kind str), shared by the interpreter's
 * kernels and libjit's so that both give the same bytes: Cast between str and
 * numbers, and StringNormalizer's case change and stopword test. Static
 * inline over plain char buffers; no allocation, no locale.
 *
 * Cast follows ONNX's reference (numpy's astype): a float prints as the
 * fewest significant digits that read back to the same value of its kind,
 * positional for 1e-4 <= |v| < 1e16 (with ".0" when integral), else
 * "1.5e-05"; NaN and infinities print as "NaN", "INF", "-INF", the spellings
 * ONNX parses ("INF", "+INF", "-INF", "NaN", any case, and "1e5"-style
 * numbers read with strtod). Bool prints "True"/"False". Order: str_cmp.
 *
 * Case change is ONNX's en_US: simple one-to-one mappings of ASCII, Latin-1,
 * Latin Extended-A, Greek and Cyrillic, each of which keeps a character's
 * UTF-8 length, so a string's case change has its length. Characters
 * outside those blocks keep their case. */
#ifndef GLOWC_CORE_STR_OPS_H
#define GLOWC_CORE_STR_OPS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

enum { STR_NUM_MAX = 48 }; /* the longest number str_format_* writes, NUL included */

/* Does the shortest printing of v read back as v in the caller's kind? */
typedef bool (*StrRoundTrip)(double v, double parsed);

/* v in the positional or scientific form above, in buf[STR_NUM_MAX];
 * max_digits: 9 for f32, 17 for f64, 5 for f16 / bf16 (a bound; the
 * round-trip test picks the fewest). */
static inline void str_format_float(char *buf, double v, int max_digits, StrRoundTrip same) {
    if (v != v) {
        snprintf(buf, STR_NUM_MAX, "NaN");
        return;
    }
    if (v == __builtin_inf() || v == -__builtin_inf()) {
        snprintf(buf, STR_NUM_MAX, v > 0 ? "INF" : "-INF");
        return;
    }
    char e[STR_NUM_MAX];
    int p = 1;
    for (; p < max_digits; p++) {
        snprintf(e, sizeof e, "%.*e", p - 1, v);
        if (same(v, strtod(e, NULL)))
            break;
    }
    snprintf(e, sizeof e, "%.*e", p - 1, v);
    /* e is [-]d[.ddd]e(+|-)XX: its digits and its exponent */
    const char *s = e;
    bool neg = *s == '-';
    s += neg;
    char digits[24];
    int nd = 0;
    for (; *s != 'e'; s++)
        if (*s != '.')
            digits[nd++] = *s;
    while (nd > 1 && digits[nd - 1] == '0')
        nd--;
    int exp10 = atoi(s + 1);
    double mag = v < 0 ? -v : v;
    if (v != 0 && (mag < 1e-4 || mag >= 1e16)) {
        int k = snprintf(buf, STR_NUM_MAX, "%s%c", neg ? "-" : "", digits[0]);
        if (nd > 1)
            k += snprintf(buf + k, STR_NUM_MAX - k, ".%.*s", nd - 1, digits + 1);
        snprintf(buf + k, STR_NUM_MAX - k, "e%c%02d", exp10 < 0 ? '-' : '+',
                 exp10 < 0 ? -exp10 : exp10);
        return;
    }
    int k = 0;
    if (neg)
        buf[k++] = '-';
    if (exp10 < 0) {
        buf[k++] = '0';
        buf[k++] = '.';
        for (int z = 0; z < -exp10 - 1; z++)
            buf[k++] = '0';
        for (int i = 0; i < nd; i++)
            buf[k++] = digits[i];
    } else {
        for (int i = 0; i <= exp10; i++)
            buf[k++] = i < nd ? digits[i] : '0';
        buf[k++] = '.';
        if (nd > exp10 + 1)
            for (int i = exp10 + 1; i < nd; i++)
                buf[k++] = digits[i];
        else
            buf[k++] = '0';
    }
    buf[k] = 0;
}

static inline void str_format_int(char *buf, int64_t v, bool is_unsigned) {
    if (is_unsigned)
        snprintf(buf, STR_NUM_MAX, "%llu", (unsigned long long)(uint64_t)v);
    else
        snprintf(buf, STR_NUM_MAX, "%lld", (long long)v);
}

static inline char str_ascii_lower(char c) {
    return c >= 'A' && c <= 'Z' ? (char)(c + 32) : c;
}

/* The error of a cast from a string that is no number (element index,
 * the string): one text for the interpreter and native code. */
#define STR_NOT_A_NUMBER "element %lld, \"%s\", is not a number"

/* s as a number: strtod's syntax, plus ONNX's "INF"/"+INF" (strtod takes
 * those too) and numpy's "True"/"False"; surrounding spaces allowed. false
 * when s is not a number (the value is then NaN). */
static inline bool str_parse_f64(const char *s, double *out) {
    const char *t = s;
    while (*t == ' ' || *t == '\t')
        t++;
    static const char *const words[2] = {"true", "false"};
    for (int w = 0; w < 2; w++) {
        int i = 0;
        while (words[w][i] && str_ascii_lower(t[i]) == words[w][i])
            i++;
        if (!words[w][i] && !t[i]) {
            *out = w == 0;
            return true;
        }
    }
    char *end;
    double v = strtod(t, &end);
    while (*end == ' ' || *end == '\t')
        end++;
    if (end == t || *end) {
        *out = __builtin_nan("");
        return false;
    }
    *out = v;
    return true;
}

/* An integer string read exactly (beyond 2^53 too); other numbers by way of
 * double, truncated toward zero by the caller's store. */
static inline bool str_parse_i64(const char *s, int64_t *out, bool *exact) {
    char *end;
    long long v = strtoll(s, &end, 10);
    if (end != s && !*end) {
        *out = v;
        *exact = true;
        return true;
    }
    *exact = false;
    return false;
}

/* ---- UTF-8 and case ---------------------------------------------------- */

/* The code point at s (valid UTF-8, checked where strings enter); *len its
 * bytes. */
static inline uint32_t str_utf8_at(const unsigned char *s, int *len) {
    if (s[0] < 0x80) {
        *len = 1;
        return s[0];
    }
    if (s[0] < 0xe0) {
        *len = 2;
        return (uint32_t)(s[0] & 0x1f) << 6 | (s[1] & 0x3f);
    }
    if (s[0] < 0xf0) {
        *len = 3;
        return (uint32_t)(s[0] & 0x0f) << 12 | (uint32_t)(s[1] & 0x3f) << 6 | (s[2] & 0x3f);
    }
    *len = 4;
    return (uint32_t)(s[0] & 0x07) << 18 | (uint32_t)(s[1] & 0x3f) << 12 |
           (uint32_t)(s[2] & 0x3f) << 6 | (s[3] & 0x3f);
}

/* Latin Extended-A pairs its letters upper-lower: 1 where the upper
 * case is the even code point, 0 where it is the odd one, -1 for the
 * letters without a pair in the block (dotted/dotless i, kra, 'n, long s). */
static inline int str_latin_a_even_upper(uint32_t c) {
    if (c < 0x100 || c > 0x17e || c == 0x130 || c == 0x131 || c == 0x138 || c == 0x149 ||
        c == 0x178)
        return -1;
    return (c >= 0x139 && c <= 0x148) || c >= 0x179 ? 0 : 1;
}

/* c in upper case (upper) or lower case; unchanged outside the blocks
 * above. Every mapping stays within its UTF-8 length. */
static inline uint32_t str_case(uint32_t c, bool upper) {
    int even_upper = str_latin_a_even_upper(c);
    if (even_upper >= 0) {
        bool is_upper = (int)(c & 1) != even_upper;
        if (is_upper == upper)
            return c;
        return even_upper ? c ^ 1 : (c & 1 ? c + 1 : c - 1);
    }
    if (upper) {
        if ((c >= 'a' && c <= 'z') || (c >= 0xe0 && c <= 0xfe && c != 0xf7) ||
            (c >= 0x3b1 && c <= 0x3cb && c != 0x3c2) || (c >= 0x430 && c <= 0x44f))
            return c - 32;
        if (c == 0xff)
            return 0x178;
        if (c >= 0x450 && c <= 0x45f)
            return c - 80;
        return c;
    }
    if ((c >= 'A' && c <= 'Z') || (c >= 0xc0 && c <= 0xde && c != 0xd7) ||
        (c >= 0x391 && c <= 0x3ab && c != 0x3a2) || (c >= 0x410 && c <= 0x42f))
        return c + 32;
    if (c == 0x178)
        return 0xff;
    if (c >= 0x400 && c <= 0x40f)
        return c + 80;
    return c;
}

/* Writes cp as UTF-8 of exactly len bytes (its length before the case
 * change, which str_case keeps). */
static inline void str_utf8_put(unsigned char *d, uint32_t c, int len) {
    if (len == 1) {
        d[0] = (unsigned char)c;
    } else if (len == 2) {
        d[0] = (unsigned char)(0xc0 | c >> 6);
        d[1] = (unsigned char)(0x80 | (c & 0x3f));
    } else if (len == 3) {
        d[0] = (unsigned char)(0xe0 | c >> 12);
        d[1] = (unsigned char)(0x80 | (c >> 6 & 0x3f));
        d[2] = (unsigned char)(0x80 | (c & 0x3f));
    } else {
        d[0] = (unsigned char)(0xf0 | c >> 18);
        d[1] = (unsigned char)(0x80 | (c >> 12 & 0x3f));
        d[2] = (unsigned char)(0x80 | (c >> 6 & 0x3f));
        d[3] = (unsigned char)(0x80 | (c & 0x3f));
    }
}

/* dst (as long as src, plus its NUL) = src with its case changed; mode 0
 * keeps it, 1 lowers, 2 raises (CASE_NONE, CASE_LOWER, CASE_UPPER minus 1). */
static inline void str_change_case(char *dst, const char *src, int mode) {
    const unsigned char *s = (const unsigned char *)src;
    unsigned char *d = (unsigned char *)dst;
    while (*s) {
        int len;
        uint32_t c = str_utf8_at(s, &len);
        if (mode)
            c = str_case(c, mode == 2);
        str_utf8_put(d, c, len);
        s += len;
        d += len;
    }
    *d = 0;
}

static inline int64_t str_len(const char *s) {
    int64_t n = 0;
    while (s[n])
        n++;
    return n;
}

/* <0, 0, >0 as a sorts before, with or after b: by their bytes as unsigned
 * (strcmp's order; for UTF-8, code point order, as numpy sorts strings).
 * Comparisons of strings and Unique's order, in the interpreter and libjit. */
static inline int str_cmp(const char *a, const char *b) {
    const unsigned char *x = (const unsigned char *)a, *y = (const unsigned char *)b;
    while (*x && *x == *y) {
        x++;
        y++;
    }
    return (*x > *y) - (*x < *y);
}

/* a == b, or equal once both are lowered (case_sensitive false). */
static inline bool str_same(const char *a, const char *b, bool case_sensitive) {
    const unsigned char *x = (const unsigned char *)a, *y = (const unsigned char *)b;
    while (*x && *y) {
        int lx, ly;
        uint32_t cx = str_utf8_at(x, &lx), cy = str_utf8_at(y, &ly);
        if (!case_sensitive) {
            cx = str_case(cx, false);
            cy = str_case(cy, false);
        }
        if (cx != cy)
            return false;
        x += lx;
        y += ly;
    }
    return !*x && !*y;
}

/* Is s one of the n stopwords? */
static inline bool str_is_stopword(const char *s, const char *const *stop, int64_t n,
                                   bool case_sensitive) {
    for (int64_t i = 0; i < n; i++)
        if (str_same(s, stop[i] ? stop[i] : "", case_sensitive))
            return true;
    return false;
}

#endif
