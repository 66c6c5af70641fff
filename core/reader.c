/* The lexical layer of the text formats (see reader.h). */
#include "core/reader.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void rd_init(Reader *r, const char *text, size_t len, uint64_t max_memory, DiagList *d,
             Arena *a) {
    r->text = r->p = r->line_start = text;
    r->budget = max_memory ? max_memory : UINT64_MAX;
    r->end = text + len;
    r->line = 1;
    r->d = d;
    r->arena = a;
}

/* Line and column of `at`: on the current line in the common case, else found
 * by counting from the start (only on the error path). */
bool rd_is_binary(const char *text, size_t len, const char *filename, DiagList *d) {
    if (!memchr(text, 0, len))
        return false;
    const char *saved = d->file; /* the file is named once, as the location */
    d->file = saved ? saved : filename;
    diag_error(d, NULL, "contains a NUL byte: a binary file, not text IR");
    d->file = saved;
    return true;
}

SrcLoc rd_loc(const Reader *ps, const char *at) {
    if (at >= ps->line_start)
        return (SrcLoc){ps->line, (int)(at - ps->line_start) + 1};
    int line = 1;
    const char *ls = ps->text;
    for (const char *q = ps->text; q < at; q++) {
        if (*q == '\n') {
            line++;
            ls = q + 1;
        }
    }
    return (SrcLoc){line, (int)(at - ls) + 1};
}

static char *rd_line_text(Reader *ps, const char *at) {
    const char *ls = at;
    while (ls > ps->text && ls[-1] != '\n')
        ls--;
    const char *le = at;
    while (le < ps->end && *le != '\n')
        le++;
    return arena_strndup(ps->arena, ls, (size_t)(le - ls));
}

__attribute__((noreturn, format(printf, 3, 4))) void rd_error(Reader *ps, const char *at,
                                                                     const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    diag_add(ps->d, DIAG_ERROR, NULL, rd_loc(ps, at), rd_line_text(ps, at), "%s", msg);
    longjmp(ps->fail, 1);
}

/* ---- lexical helpers ------------------------------------------------------ */

void rd_skip_ws(Reader *ps) {
    while (ps->p < ps->end) {
        char c = *ps->p;
        if (c == '\n') {
            ps->p++;
            ps->line++;
            ps->line_start = ps->p;
        } else if (c == ' ' || c == '\t' || c == '\r') {
            ps->p++;
        } else if (c == '/' && ps->p + 1 < ps->end && ps->p[1] == '/') {
            while (ps->p < ps->end && *ps->p != '\n')
                ps->p++;
        } else {
            break;
        }
    }
}

bool rd_peek(Reader *ps, char c) {
    rd_skip_ws(ps);
    return ps->p < ps->end && *ps->p == c;
}

bool rd_accept(Reader *ps, char c) {
    if (!rd_peek(ps, c))
        return false;
    ps->p++;
    return true;
}

void rd_expect(Reader *ps, char c, const char *what) {
    if (rd_accept(ps, c))
        return;
    if (ps->p >= ps->end)
        rd_error(ps, ps->p, "expected '%c' %s, found the end of the file", c, what);
    rd_error(ps, ps->p, "expected '%c' %s", c, what);
}

bool rd_is_ident_start(char c) {
    return isalpha((unsigned char)c) || c == '_';
}

bool rd_is_ident_char(char c) {
    return isalnum((unsigned char)c) || c == '_' || c == '.';
}

/* An identifier at the cursor (after whitespace); its length, 0 if none. */
size_t rd_peek_ident(Reader *ps) {
    rd_skip_ws(ps);
    const char *q = ps->p;
    if (q >= ps->end || !rd_is_ident_start(*q))
        return 0;
    while (q < ps->end && rd_is_ident_char(*q))
        q++;
    return (size_t)(q - ps->p);
}

bool rd_keyword(Reader *ps, const char *kw) {
    size_t n = rd_peek_ident(ps);
    if (n != strlen(kw) || memcmp(ps->p, kw, n))
        return false;
    ps->p += n;
    return true;
}

void rd_expect_keyword(Reader *ps, const char *kw) {
    if (!rd_keyword(ps, kw))
        rd_error(ps, ps->p, "expected '%s'", kw);
}

/* A double-quoted string with C escapes. */
char *rd_string(Reader *ps) {
    rd_skip_ws(ps);
    const char *start = ps->p;
    if (ps->p >= ps->end || *ps->p != '"')
        rd_error(ps, ps->p, "expected a string");
    ps->p++;
    StrBuf sb;
    sb_init(&sb);
    while (ps->p < ps->end && *ps->p != '"') {
        char c = *ps->p++;
        if (c == '\n') {
            sb_free(&sb);
            rd_error(ps, start, "unterminated string");
        }
        if (c == '\\' && ps->p < ps->end) {
            char e = *ps->p++;
            if (e == 'n')
                c = '\n';
            else if (e == 't')
                c = '\t';
            else if (e == 'x' && ps->end - ps->p >= 2 && isxdigit((unsigned char)ps->p[0]) &&
                     isxdigit((unsigned char)ps->p[1])) {
                char hex[3] = {ps->p[0], ps->p[1], 0};
                c = (char)strtol(hex, NULL, 16);
                ps->p += 2;
            } else
                c = e;
        }
        if (c == 0) {
            sb_free(&sb);
            rd_error(ps, start, "NUL character in string");
        }
        sb_putc(&sb, c);
    }
    if (ps->p >= ps->end) {
        sb_free(&sb);
        rd_error(ps, start, "unterminated string");
    }
    ps->p++;
    char *s = arena_strdup(ps->arena, sb_str(&sb));
    sb_free(&sb);
    return s;
}

int64_t rd_int(Reader *ps, const char *what) {
    rd_skip_ws(ps);
    const char *start = ps->p;
    char buf[32];
    size_t n = 0;
    if (ps->p < ps->end && (*ps->p == '-' || *ps->p == '+'))
        buf[n++] = *ps->p++;
    while (ps->p < ps->end && isdigit((unsigned char)*ps->p) && n < sizeof buf - 1)
        buf[n++] = *ps->p++;
    buf[n] = 0;
    if (n == 0 || !isdigit((unsigned char)buf[n - 1]))
        rd_error(ps, start, "expected an integer %s", what);
    if (ps->p < ps->end && isdigit((unsigned char)*ps->p))
        rd_error(ps, start, "integer too long");
    errno = 0;
    long long v = strtoll(buf, NULL, 10);
    if (errno == ERANGE)
        rd_error(ps, start, "integer out of range");
    return v;
}

/* A number in any of the printer's forms: integer, decimal, nan, inf. */
double rd_number(Reader *ps, bool *is_int, const char *what) {
    rd_skip_ws(ps);
    const char *start = ps->p;
    char buf[64];
    size_t n = 0;
    while (ps->p < ps->end && n < sizeof buf - 1 &&
           (isalnum((unsigned char)*ps->p) || strchr("+-.", *ps->p)))
        buf[n++] = *ps->p++;
    buf[n] = 0;
    const char *s = buf + (buf[0] == '-' || buf[0] == '+');
    if (!strcmp(s, "nan") || !strcmp(s, "inf")) {
        *is_int = false;
        double v = !strcmp(s, "nan") ? NAN : INFINITY;
        return buf[0] == '-' ? -v : v;
    }
    char *endp;
    double v = strtod(buf, &endp);
    if (n == 0 || *endp || !(isdigit((unsigned char)*s) || *s == '.'))
        rd_error(ps, start, "expected a number %s", what);
    *is_int = !strpbrk(buf, ".eE");
    return v;
}

/* ---- types ---------------------------------------------------------------- */

ElemKind rd_elem(Reader *ps) {
    size_t n = rd_peek_ident(ps);
    ElemKind k;
    if (!n || !elem_from_name(ps->p, n, &k))
        rd_error(ps, ps->p, "expected an element kind (f32, i64, ...)");
    ps->p += n;
    return k;
}

/* A name of the attribute key's value set (core/enums.def, acts.def). */
static int rd_enum(Reader *ps, AttrKey key) {
    EnumSet set = attr_key_set(key);
    size_t n = rd_peek_ident(ps);
    int v = n ? enum_by_name(set, ps->p, n) : 0;
    if (!v) {
        char names[512];
        enum_set_names(set, names, sizeof names);
        rd_error(ps, ps->p, "expected a %s (%s)", attr_key_name(key), names);
    }
    ps->p += n;
    return v;
}

/* The quantization after a type's dimensions: `scale=S, offset=Z` (per
 * tensor) or `axis=A` (per channel), then the closing '>'. */
static void rd_type_quant(Reader *ps, Type *t, const char *type_at) {
    rd_skip_ws(ps);
    bool is_int;
    if (rd_keyword(ps, "axis")) {
        rd_expect(ps, '=', "after axis");
        t->quant = QUANT_CHANNEL;
        rd_skip_ws(ps);
        const char *at = ps->p;
        int64_t a = rd_int(ps, "for the channel axis");
        if (a < 0 || a >= t->rank)
            rd_error(ps, at, "channel axis %lld is not a dimension of a rank-%d type",
                     (long long)a, t->rank);
        t->qaxis = (int32_t)a;
    } else {
        rd_expect_keyword(ps, "scale");
        rd_expect(ps, '=', "after scale");
        t->quant = QUANT_TENSOR;
        t->scale = (float)rd_number(ps, &is_int, "for the scale");
        rd_expect(ps, ',', "between scale and offset");
        rd_skip_ws(ps);
        rd_expect_keyword(ps, "offset");
        rd_expect(ps, '=', "after offset");
        rd_skip_ws(ps);
        const char *at = ps->p;
        int64_t z = rd_int(ps, "for the offset");
        if (z < INT32_MIN || z > INT32_MAX)
            rd_error(ps, at, "offset %lld out of range", (long long)z);
        t->offset = (int32_t)z;
    }
    rd_skip_ws(ps);
    rd_expect(ps, '>', "to end the type");
    const char *problem = type_quant_problem(t);
    if (problem)
        rd_error(ps, type_at, "%s", problem);
}

Type rd_type(Reader *ps) {
    rd_skip_ws(ps);
    const char *type_at = ps->p;
    Type t = {.elem = rd_elem(ps)};
    if (ps->p >= ps->end || *ps->p != '<')
        rd_error(ps, ps->p, "expected '<' after element kind");
    ps->p++;
    if (ps->p < ps->end && *ps->p == '>') {
        ps->p++;
        return t;
    }
    if (ps->p < ps->end && !isdigit((unsigned char)*ps->p) && *ps->p != '?' && rd_peek_ident(ps)) {
        rd_type_quant(ps, &t, type_at); /* a quantized scalar: i8<scale=.., offset=..> */
        return t;
    }
    for (;;) {
        const char *at = ps->p;
        /* `?<=N`: a bounded-dynamic dimension, N its bound. */
        bool dyn = ps->end - ps->p >= 3 && !memcmp(ps->p, "?<=", 3);
        if (dyn)
            ps->p += 3;
        else if (ps->p < ps->end && *ps->p == '?')
            rd_error(ps, at, "a dynamic dimension needs its bound: '?<=N'");
        if (ps->p >= ps->end || !isdigit((unsigned char)*ps->p))
            rd_error(ps, at, "expected a dimension");
        int64_t v = 0;
        while (ps->p < ps->end && isdigit((unsigned char)*ps->p)) {
            if (v > (INT64_MAX - 9) / 10)
                rd_error(ps, at, "dimension too large");
            v = v * 10 + (*ps->p++ - '0');
        }
        if (t.rank == MAX_RANK)
            rd_error(ps, at, "more than %d dimensions", MAX_RANK);
        if (dyn)
            t.dyn |= (uint8_t)(1u << t.rank);
        t.dims[t.rank++] = v;
        if (ps->p < ps->end && *ps->p == 'x') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == '>') {
            ps->p++;
            break;
        }
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            rd_type_quant(ps, &t, type_at);
            break;
        }
        rd_error(ps, ps->p, "expected 'x', ',' or '>' in type");
    }
    int64_t numel;
    if (!type_numel_checked(&t, &numel))
        rd_error(ps, ps->p - 1, "type has too many elements");
    return t;
}


uint64_t rd_label_hash(const char *name, int id) {
    uint64_t h = 1469598103934665603ull;
    if (!name)
        return ((uint64_t)id + 1) * 0x9e3779b97f4a7c15ull;
    for (; *name; name++)
        h = (h ^ (unsigned char)*name) * 1099511628211ull;
    return h;
}

RdLabel rd_label(Reader *ps) {
    rd_skip_ws(ps);
    RdLabel l = {.at = ps->p};
    if (ps->p >= ps->end || *ps->p != '%')
        rd_error(ps, ps->p, "expected a value (%%name or %%number)");
    ps->p++;
    if (ps->p < ps->end && isdigit((unsigned char)*ps->p)) {
        int64_t v = 0;
        while (ps->p < ps->end && isdigit((unsigned char)*ps->p)) {
            v = v * 10 + (*ps->p++ - '0');
            if (v > 100000000)
                rd_error(ps, l.at, "value number too large");
        }
        l.id = (int)v;
        return l;
    }
    if (ps->p < ps->end && *ps->p == '"') {
        l.name = rd_string(ps);
        return l;
    }
    size_t n = 0;
    while (ps->p + n < ps->end && rd_is_ident_char(ps->p[n]))
        n++;
    if (!n || !rd_is_ident_start(ps->p[0]))
        rd_error(ps, ps->p, "expected a name or number after '%%'");
    l.name = arena_strndup(ps->arena, ps->p, n);
    ps->p += n;
    return l;
}

static void rd_store_number(Reader *ps, Tensor *t, int64_t i, const char *at) {
    ElemKind k = t->type.elem;
    if (k == ELEM_STR) {
        rd_skip_ws(ps);
        const char *start = ps->p;
        if (ps->p >= ps->end || *ps->p != '"')
            rd_error(ps, start, "expected a quoted string for a str element");
        char *s = rd_string(ps);
        if (!utf8_valid(s, strlen(s)))
            rd_error(ps, start, "string is not valid UTF-8");
        ((uint64_t *)t->data)[i] = (uint64_t)(uintptr_t)s; /* s lives in the module's arena */
        return;
    }
    if (k == ELEM_BOOL && (rd_keyword(ps, "true") || rd_keyword(ps, "false"))) {
        tensor_set_i64(t, i, ps->p[-1] == 'e' && ps->p[-2] == 'u');
        return;
    }
    bool is_int;
    rd_skip_ws(ps);
    const char *start = ps->p;
    if (elem_is_int(k) || k == ELEM_BOOL) {
        if (k == ELEM_U64) { /* beyond int64: digits only, no sign */
            uint64_t v = 0;
            if (ps->p >= ps->end || !isdigit((unsigned char)*ps->p))
                rd_error(ps, start, "expected an unsigned integer");
            for (; ps->p < ps->end && isdigit((unsigned char)*ps->p); ps->p++) {
                unsigned digit = (unsigned)(*ps->p - '0');
                if (v > (UINT64_MAX - digit) / 10)
                    rd_error(ps, start, "integer out of range");
                v = v * 10 + digit;
            }
            ((uint64_t *)t->data)[i] = v;
            return;
        }
        int64_t v = rd_int(ps, "element");
        tensor_set_i64(t, i, v);
        int64_t back = tensor_get_i64(t, i);
        if (back != v)
            rd_error(ps, start, "%lld does not fit in %s", (long long)v, elem_name(k));
        return;
    }
    double v = rd_number(ps, &is_int, "element");
    (void)at;
    tensor_set_f64(t, i, v);
}

/* An opaque constant has no data in the text: only its type is kept, so a
 * dump of a large model reads back without allocating its weights. */
static Tensor *rd_opaque(Reader *ps, const Type *t) {
    Tensor *x = arena_alloc(ps->arena, sizeof *x);
    x->type = *t;
    rd_expect(ps, '<', "after opaque");
    rd_skip_ws(ps);
    const char *at = ps->p;
    char *h = rd_string(ps);
    size_t n = strlen(h);
    if (!n || n > 16 || strspn(h, "0123456789abcdefABCDEF") != n)
        rd_error(ps, at, "expected a hexadecimal hash");
    x->elided_hash = strtoull(h, NULL, 16);
    rd_expect(ps, '>', "to end opaque");
    return x;
}

/* The tensor for constant data of type t, within the budget. */
static Tensor *rd_new_constant(Reader *ps, const Type *t, const char *at) {
    uint64_t bytes = type_bytes(t); /* rd_type checked the count */
    if (bytes > ps->budget)
        rd_error(ps, at, "constant of %llu bytes exceeds the memory budget (%llu bytes left)",
                 (unsigned long long)bytes, (unsigned long long)ps->budget);
    Tensor *x = tensor_new(ps->arena, t);
    if (!x)
        rd_error(ps, at, "constant too large");
    ps->budget -= bytes;
    return x;
}

Tensor *rd_constant_data(Reader *ps, const Type *t) {
    rd_skip_ws(ps);
    const char *at = ps->p;
    int64_t numel = type_numel(t);
    Tensor *x;
    if (rd_keyword(ps, "splat")) {
        x = rd_new_constant(ps, t, at);
        rd_expect(ps, '<', "after splat");
        uint64_t bits[2] = {0}; /* the value, also for a tensor of no elements */
        Tensor v = {.type = type_scalar(t->elem), .data = bits};
        rd_store_number(ps, &v, 0, ps->p);
        size_t es = elem_size(t->elem);
        for (int64_t i = 0; i < numel; i++)
            memcpy((char *)x->data + (size_t)i * es, bits, es);
        rd_expect(ps, '>', "to end splat");
    } else if (rd_keyword(ps, "dense")) {
        x = rd_new_constant(ps, t, at);
        rd_expect(ps, '<', "after dense");
        rd_expect(ps, '[', "to start the elements");
        const char *start = ps->p;
        int64_t i = 0;
        if (!rd_peek(ps, ']')) {
            do {
                rd_skip_ws(ps); /* point at the element, not the space before it */
                if (i == numel)
                    rd_error(ps, ps->p, "more than %lld elements", (long long)numel);
                rd_store_number(ps, x, i++, ps->p);
            } while (rd_accept(ps, ','));
        }
        if (i != numel)
            rd_error(ps, start, "%lld elements given, type has %lld", (long long)i,
                     (long long)numel);
        rd_expect(ps, ']', "to end the elements");
        rd_expect(ps, '>', "to end dense");
    } else if (rd_keyword(ps, "opaque")) {
        x = rd_opaque(ps, t);
    } else {
        rd_error(ps, ps->p, "expected constant data: dense<[...]>, splat<v> or opaque<\"hash\">");
    }
    return x;
}

void rd_attr(Reader *ps, Node *n, RdAttrAllowed allowed, void *ctx, const char *what) {
    rd_skip_ws(ps);
    const char *at = ps->p;
    size_t len = rd_peek_ident(ps);
    AttrKey key;
    if (!len)
        rd_error(ps, at, "expected an attribute name");
    if (!attr_key_from_name(ps->p, len, &key) || !allowed(key, ctx))
        rd_error(ps, at, "%s has no attribute '%.*s'", what, (int)len, ps->p);
    ps->p += len;
    if (node_has_attr(n, key))
        rd_error(ps, at, "attribute '%s' given twice", attr_key_name(key));
    rd_expect(ps, '=', "after the attribute name");
    rd_skip_ws(ps);
    const char *vat = ps->p;
    switch (attr_key_type(key)) {
    case AT_INT: node_set_int(n, key, rd_int(ps, "attribute value")); break;
    case AT_FLOAT: {
        bool is_int;
        node_set_float(n, key, (float)rd_number(ps, &is_int, "attribute value"));
        break;
    }
    case AT_STR: node_set_str(n, key, rd_string(ps)); break;
    case AT_ELEM: node_set_elem(n, key, rd_elem(ps)); break;
    case AT_ENUM: node_set_enum(n, key, rd_enum(ps, key)); break;
    case AT_INTS:
    case AT_FLOATS: {
        rd_expect(ps, '[', "to start a list");
        int64_t iv[64];
        float fv[64];
        int k = 0;
        if (!rd_peek(ps, ']')) {
            do {
                rd_skip_ws(ps);
                if (k == 64)
                    rd_error(ps, ps->p, "list too long");
                if (attr_key_type(key) == AT_INTS) {
                    iv[k++] = rd_int(ps, "in list");
                } else {
                    bool is_int;
                    fv[k++] = (float)rd_number(ps, &is_int, "in list");
                }
            } while (rd_accept(ps, ','));
        }
        rd_expect(ps, ']', "to end the list");
        if (attr_key_type(key) == AT_INTS)
            node_set_ints(n, key, k, iv);
        else
            node_set_floats(n, key, k, fv);
        break;
    }
    }
    (void)vat;
}

void rd_attrs(Reader *ps, Node *n, RdAttrAllowed allowed, void *ctx, const char *what) {
    if (!rd_accept(ps, '{'))
        return;
    while (!rd_accept(ps, '}')) {
        if (ps->p >= ps->end)
            rd_error(ps, ps->p, "expected '}' to end the attributes");
        rd_attr(ps, n, allowed, ctx, what);
        rd_accept(ps, ',');
    }
}

const char *rd_loc_name(Reader *ps) {
    if (!rd_keyword(ps, "loc"))
        return NULL;
    rd_expect(ps, '(', "after loc");
    const char *s = rd_string(ps);
    rd_expect(ps, ')', "to end loc");
    return s;
}

