/* Parser for the low-level text IR (grammar in lir.h), over reader.h; a
 * parsed program is verified before it is returned. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/lir_print.h"
#include "core/lir_verify.h"
#include "core/reader.h"

typedef struct LSym {
    const char *label;
    int id;
    LirBuf *buf;
} LSym;

typedef struct LParser {
    Reader r;
    LirProgram *p;
    LSym *syms;
    int nsyms, cap;
    int *index; /* open addressing over syms: position + 1, 0 when empty */
    size_t index_cap;
    jmp_buf oom;
} LParser;

/* The index slot of label (name, id): where it is, or the empty slot where
 * it would go. A hashed index keeps files with many buffers linear. */
static int *slot(LParser *ps, const char *name, int id) {
    size_t mask = ps->index_cap - 1, i = rd_label_hash(name, id) & mask;
    for (;; i = (i + 1) & mask) {
        int k = ps->index[i];
        if (!k)
            return &ps->index[i];
        const LSym *s = &ps->syms[k - 1];
        if (name ? (s->label && !strcmp(s->label, name)) : (!s->label && s->id == id))
            return &ps->index[i];
    }
}

static LSym *find(LParser *ps, const RdLabel *l) {
    if (!ps->index_cap)
        return NULL;
    int k = *slot(ps, l->name, l->id);
    return k ? &ps->syms[k - 1] : NULL;
}

static void define(LParser *ps, const RdLabel *l, LirBuf *b) {
    if (find(ps, l))
        rd_error(&ps->r, l->at, "buffer redefined");
    if (ps->nsyms == ps->cap) {
        ps->cap = ps->cap ? ps->cap * 2 : 64;
        ps->syms = arena_grow(ps->p->arena, ps->syms, (size_t)ps->nsyms, (size_t)ps->cap,
                              sizeof *ps->syms);
    }
    ps->syms[ps->nsyms++] = (LSym){l->name, l->id, b};
    if ((size_t)ps->nsyms * 2 > ps->index_cap) { /* rebuild, twice as large */
        ps->index_cap = ps->index_cap ? ps->index_cap * 2 : 128;
        ps->index = arena_alloc_array(ps->p->arena, ps->index_cap, sizeof(int));
        for (int i = 0; i < ps->nsyms; i++)
            *slot(ps, ps->syms[i].label, ps->syms[i].id) = i + 1;
    } else {
        *slot(ps, l->name, l->id) = ps->nsyms;
    }
    if (l->name)
        b->label = l->name;
    else
        b->id = l->id;
}

static LirBuf *ref(LParser *ps) {
    RdLabel l = rd_label(&ps->r);
    LSym *s = find(ps, &l);
    if (!s)
        rd_error(&ps->r, l.at, "use of undefined buffer");
    return s->buf;
}

static void parse_weight(LParser *ps) {
    RdLabel l = rd_label(&ps->r);
    rd_expect(&ps->r, '=', "after the weight name");
    rd_expect_keyword(&ps->r, "weight");
    LirBufKind kind;
    if (rd_keyword(&ps->r, "const"))
        kind = LB_CONST;
    else if (rd_keyword(&ps->r, "mutable"))
        kind = rd_keyword(&ps->r, "in") ? LB_IN : (rd_expect_keyword(&ps->r, "out"), LB_OUT);
    else
        rd_error(&ps->r, ps->r.p, "expected 'const' or 'mutable'");
    Type t = rd_type(&ps->r);
    Tensor *data = kind == LB_CONST ? rd_constant_data(&ps->r, &t) : NULL;
    const char *name = rd_loc_name(&ps->r);
    LirBuf *b = lir_add_weight(ps->p, kind, name ? name : l.name ? l.name : "", &t, data);
    define(ps, &l, b);
}

static bool memory_attr_allowed(AttrKey key, void *ctx) {
    InstrKind k = *(const InstrKind *)ctx;
    return (k == IK_TENSORVIEW && key == AK_offset) || (k == IK_INSERT && key == AK_offsets);
}

static bool compute_attr_allowed(AttrKey key, void *ctx) {
    return node_kind_has_attr(NODE_OF_IK(*(const InstrKind *)ctx), key);
}

/* "@in %x, @out %y ..." */
static int parse_operands(LParser *ps, LirBuf **ops, OperandRole *roles, int max) {
    int n = 0;
    while (rd_peek(&ps->r, '@')) {
        const char *at = ps->r.p;
        ps->r.p++;
        OperandRole role;
        if (rd_keyword(&ps->r, "inout"))
            role = ROLE_INOUT;
        else if (rd_keyword(&ps->r, "in"))
            role = ROLE_IN;
        else if (rd_keyword(&ps->r, "out"))
            role = ROLE_OUT;
        else
            rd_error(&ps->r, at, "expected @in, @out or @inout");
        if (n == max)
            rd_error(&ps->r, at, "too many operands");
        roles[n] = role;
        ops[n++] = ref(ps);
        if (!rd_accept(&ps->r, ','))
            break;
    }
    return n;
}

/* An allocated program prints each activation's arena offset after its
 * type ("allocactivation f32<100> @448"). It is read back onto the buffer,
 * but a parsed program is not allocated: allocate places it again, so that
 * a hand-edited offset can never make two live buffers overlap. -1: none. */
static int64_t parse_address(LParser *ps) {
    rd_skip_ws(&ps->r);
    const char *at = ps->r.p;
    if (at[0] != '@' || !(at[1] == '-' || (at[1] >= '0' && at[1] <= '9')))
        return -1;
    ps->r.p++;
    int64_t a = rd_int(&ps->r, "an arena offset");
    if (a < 0)
        rd_error(&ps->r, at, "an arena offset must not be negative");
    return a;
}

static void parse_instr(LParser *ps) {
    RdLabel l = {0};
    bool defines = rd_peek(&ps->r, '%');
    if (defines) {
        l = rd_label(&ps->r);
        rd_expect(&ps->r, '=', "after the buffer name");
    }
    rd_skip_ws(&ps->r);
    const char *kat = ps->r.p;
    size_t klen = rd_peek_ident(&ps->r);
    InstrKind k;
    if (!klen || !instr_kind_from_name(ps->r.p, klen, &k))
        rd_error(&ps->r, kat, "unknown instruction '%.*s'", (int)(klen ? klen : 1), ps->r.p);
    ps->r.p += klen;
    if (defines != instr_defines(k))
        rd_error(&ps->r, kat, defines ? "%s defines no buffer" : "%s must define a buffer",
                 instr_kind_name(k));
    SrcLoc loc = rd_loc(&ps->r, kat);
    Type alloc_type = {0};
    int64_t address = -1;
    if (k == IK_ALLOC) {
        alloc_type = rd_type(&ps->r);
        address = parse_address(ps);
    }
    LirBuf *ops[256];
    OperandRole roles[256];
    int nops = parse_operands(ps, ops, roles, 256);
    /* Attributes parse into a shim node, then move to the instruction. */
    Node shim = {0};
    Function sf = {0};
    Module sm = {.arena = ps->p->arena};
    sf.module = &sm;
    shim.func = &sf;
    rd_attrs(&ps->r, &shim, instr_is_compute(k) ? compute_attr_allowed : memory_attr_allowed, &k,
             instr_kind_name(k));
    Type view_type = {0};
    if (k == IK_TENSORVIEW) {
        rd_expect(&ps->r, ':', "before the view's type");
        view_type = rd_type(&ps->r);
    }
    const char *name = rd_loc_name(&ps->r);
    LirInstr *i;
    if (k == IK_ALLOC) {
        i = lir_alloc(ps->p, NULL, &alloc_type, name)->def;
        if (address >= 0)
            i->result->address = address;
    } else if (k == IK_TENSORVIEW) {
        const Attr *off = NULL;
        for (int a = 0; a < shim.nattrs; a++)
            if (shim.attrs[a].key == AK_offset)
                off = &shim.attrs[a];
        if (nops != 1)
            rd_error(&ps->r, kat, "tensorview takes one @in operand");
        if (ops[0]->kind == LB_VIEW)
            rd_error(&ps->r, kat, "a view's base must be a buffer, not another view");
        i = lir_view(ps->p, NULL, ops[0], off ? off->i : 0, &view_type, name)->def;
        i->roles[0] = roles[0];
    } else {
        i = lir_insert(ps->p, NULL, k, nops, ops, roles);
        instr_copy_attrs(ps->p, i, shim.attrs, shim.nattrs);
        i->name = name ? name : "";
    }
    i->loc = loc;
    if (name)
        i->name = name;
    if (defines)
        define(ps, &l, i->result);
}

/* Named buffers get ids after every numeric one, in order of appearance. */
static void assign_ids(LParser *ps) {
    int next = 0;
    for (int i = 0; i < ps->nsyms; i++)
        if (!ps->syms[i].label && ps->syms[i].id >= next)
            next = ps->syms[i].id + 1;
    for (int i = 0; i < ps->nsyms; i++)
        if (ps->syms[i].label)
            ps->syms[i].buf->id = next++;
    ps->p->next_id = next;
}

LirProgram *lir_parse(const char *text, size_t len, const char *filename, DiagList *d) {
    return lir_parse_limited(text, len, filename, 0, d);
}

LirProgram *lir_parse_limited(const char *text, size_t len, const char *filename,
                              uint64_t max_memory, DiagList *d) {
    if (rd_is_binary(text, len, filename, d))
        return NULL;
    LParser ps = {0};
    ps.p = lir_new(filename);
    ps.p->text = arena_strndup(ps.p->arena, text, len);
    if (!ps.p->text) {
        diag_error(d, NULL, "out of memory");
        lir_destroy(ps.p);
        return NULL;
    }
    rd_init(&ps.r, ps.p->text, len, max_memory, d, ps.p->arena); /* the NUL-terminated copy */
    arena_set_oom_handler(ps.p->arena, &ps.oom);
    if (setjmp(ps.oom)) {
        diag_error(d, NULL, "out of memory while parsing");
        lir_destroy(ps.p);
        return NULL;
    }
    if (setjmp(ps.r.fail)) {
        lir_destroy(ps.p);
        return NULL;
    }
    rd_expect_keyword(&ps.r, "declare");
    rd_expect(&ps.r, '{', "after declare");
    while (!rd_accept(&ps.r, '}')) {
        if (ps.r.p >= ps.r.end)
            rd_error(&ps.r, ps.r.p, "expected '}' to close declare");
        parse_weight(&ps);
    }
    rd_expect_keyword(&ps.r, "program");
    rd_expect(&ps.r, '{', "after program");
    while (!rd_accept(&ps.r, '}')) {
        if (ps.r.p >= ps.r.end)
            rd_error(&ps.r, ps.r.p, "expected '}' to close program");
        parse_instr(&ps);
    }
    rd_skip_ws(&ps.r);
    if (ps.r.p < ps.r.end)
        rd_error(&ps.r, ps.r.p, "expected end of file after the program");
    assign_ids(&ps);
    arena_set_oom_handler(ps.p->arena, NULL);
    if (!lir_verify(ps.p, d)) {
        lir_destroy(ps.p);
        return NULL;
    }
    return ps.p;
}
