/* The low-level IR: per-kind facts, building and editing. */
#include "core/lir.h"

#include <string.h>

typedef struct InstrInfo {
    const char *name;
    int nouts, nins;
    bool defines;
} InstrInfo;

static const InstrInfo memory_instrs[IK_FIRST_COMPUTE] = {
#define INSTR(E, nm, nouts, nins, defines) [IK_##E] = {#nm, nouts, nins, defines},
#include "core/instrs.def"
};

const char *instr_kind_name(InstrKind k) {
    if (k < IK_FIRST_COMPUTE)
        return memory_instrs[k].name;
    return node_kind_name(NODE_OF_IK(k));
}

bool instr_kind_from_name(const char *name, size_t len, InstrKind *out) {
    for (int k = 0; k < IK_FIRST_COMPUTE; k++) {
        if (strlen(memory_instrs[k].name) == len && !memcmp(memory_instrs[k].name, name, len)) {
            *out = (InstrKind)k;
            return true;
        }
    }
    NodeKind nk;
    if (!node_kind_from_name(name, len, &nk) || nk == NK_PLACEHOLDER || nk == NK_CONSTANT)
        return false;
    *out = IK_OF_NODE(nk);
    return true;
}

bool instr_is_compute(InstrKind k) {
    return k >= IK_FIRST_COMPUTE;
}

int instr_memory_nouts(InstrKind k) {
    return k < IK_FIRST_COMPUTE ? memory_instrs[k].nouts : -1;
}

int instr_memory_nins(InstrKind k) {
    return k < IK_FIRST_COMPUTE ? memory_instrs[k].nins : -1;
}

bool instr_is_control(InstrKind k) {
    return k == IK_BEGINIF || k == IK_ELSE || k == IK_ENDIF || k == IK_BEGINLOOP ||
           k == IK_ENDLOOP;
}

bool lir_has_control(const LirProgram *p) {
    for (const LirInstr *i = p->first; i; i = i->next)
        if (instr_is_control(i->kind))
            return true;
    return false;
}

bool instr_defines(InstrKind k) {
    return k < IK_FIRST_COMPUTE && memory_instrs[k].defines;
}

/* Elementwise kinds read element i before writing element i, so an output
 * may overwrite an input of the same type. */
bool instr_allows_inplace(InstrKind k) {
    if (!instr_is_compute(k))
        return false;
    NodeKind n = NODE_OF_IK(k);
    return node_kind_has(n, NF_EW);
}

LirProgram *lir_new(const char *source) {
    Arena *a = arena_new();
    LirProgram *p = arena_alloc(a, sizeof *p);
    p->arena = a;
    p->source = arena_strdup(a, source ? source : "");
    return p;
}

void lir_destroy(LirProgram *p) {
    if (p)
        arena_destroy(p->arena);
}

static LirBuf *new_buf(LirProgram *p, LirBufKind kind, const char *name, const Type *t) {
    LirBuf *b = arena_alloc(p->arena, sizeof *b);
    b->id = p->next_id++;
    b->kind = kind;
    b->name = arena_strdup(p->arena, name ? name : "");
    b->type = *t;
    b->address = -1;
    if (p->nbufs == p->bufs_cap) {
        int cap = p->bufs_cap ? p->bufs_cap * 2 : 64;
        p->bufs = arena_grow(p->arena, p->bufs, (size_t)p->nbufs, (size_t)cap, sizeof *p->bufs);
        p->bufs_cap = cap;
    }
    p->bufs[p->nbufs++] = b;
    return b;
}

LirBuf *lir_add_weight(LirProgram *p, LirBufKind kind, const char *name, const Type *t,
                       Tensor *payload) {
    LirBuf *b = new_buf(p, kind, name, t);
    b->payload = payload;
    return b;
}

static void link_before(LirProgram *p, LirInstr *pos, LirInstr *i) {
    if (!pos) {
        i->prev = p->last;
        if (p->last)
            p->last->next = i;
        else
            p->first = i;
        p->last = i;
    } else {
        i->next = pos;
        i->prev = pos->prev;
        if (pos->prev)
            pos->prev->next = i;
        else
            p->first = i;
        pos->prev = i;
    }
    p->ninstrs++;
}

LirInstr *lir_insert(LirProgram *p, LirInstr *pos, InstrKind k, int nops, LirBuf *const *ops,
                     const OperandRole *roles) {
    LirInstr *i = arena_alloc(p->arena, sizeof *i);
    i->kind = k;
    i->nops = nops;
    i->ops = arena_alloc_array(p->arena, (size_t)(nops ? nops : 1), sizeof *i->ops);
    i->roles = arena_alloc_array(p->arena, (size_t)(nops ? nops : 1), sizeof *i->roles);
    for (int j = 0; j < nops; j++) {
        i->ops[j] = ops[j];
        i->roles[j] = roles[j];
    }
    i->name = "";
    i->prog = p;
    link_before(p, pos, i);
    return i;
}

LirBuf *lir_alloc(LirProgram *p, LirInstr *pos, const Type *t, const char *name) {
    LirInstr *i = lir_insert(p, pos, IK_ALLOC, 0, NULL, NULL);
    i->name = arena_strdup(p->arena, name ? name : "");
    i->result = new_buf(p, LB_ALLOC, name, t);
    i->result->def = i;
    return i->result;
}

LirBuf *lir_view(LirProgram *p, LirInstr *pos, LirBuf *base, int64_t offset, const Type *t,
                 const char *name) {
    LirBuf *storage = lir_storage(base);
    if (base->kind == LB_VIEW)
        offset += base->offset; /* views of views flatten to views of storage */
    OperandRole r = ROLE_IN;
    LirInstr *i = lir_insert(p, pos, IK_TENSORVIEW, 1, &storage, &r);
    i->name = arena_strdup(p->arena, name ? name : "");
    i->result = new_buf(p, LB_VIEW, name, t);
    i->result->def = i;
    i->result->base = storage;
    i->result->offset = offset;
    instr_set_int(i, AK_offset, offset);
    return i->result;
}

/* Takes i out of p's list (it keeps its storage and its result). */
static void unlink_instr(LirProgram *p, LirInstr *i) {
    if (i->prev)
        i->prev->next = i->next;
    else
        p->first = i->next;
    if (i->next)
        i->next->prev = i->prev;
    else
        p->last = i->prev;
    i->prev = i->next = NULL;
    p->ninstrs--;
}

void lir_remove(LirProgram *p, LirInstr *i) {
    if (i->dead)
        return;
    i->dead = true;
    if (i->result)
        i->result->dead = true;
    unlink_instr(p, i);
}

void lir_move_before(LirProgram *p, LirInstr *i, LirInstr *pos) {
    if (i == pos)
        return;
    unlink_instr(p, i);
    link_before(p, pos, i);
}

void lir_replace_buf(LirProgram *p, LirBuf *from, LirBuf *to) {
    for (LirInstr *i = p->first; i; i = i->next)
        for (int j = 0; j < i->nops; j++)
            if (i->ops[j] == from)
                i->ops[j] = to;
    for (int b = 0; b < p->nbufs; b++) {
        LirBuf *v = p->bufs[b];
        if (v->kind == LB_VIEW && v->base == from && !v->dead) {
            /* a view of `from` becomes a view of `to`'s storage */
            LirBuf *s = lir_storage(to);
            v->offset += to->kind == LB_VIEW ? to->offset : 0;
            v->base = s;
            if (v->def) {
                v->def->ops[0] = s;
                instr_set_int(v->def, AK_offset, v->offset);
            }
        }
    }
}

void lir_number(LirProgram *p) {
    int k = 0;
    for (LirInstr *i = p->first; i; i = i->next)
        i->index = k++;
}

LirBuf *lir_storage(LirBuf *b) {
    return b->kind == LB_VIEW ? b->base : b;
}

LirInstr *lir_find_dealloc(LirProgram *p, const LirBuf *alloc) {
    for (LirInstr *i = p->first; i; i = i->next)
        if (i->kind == IK_DEALLOC && i->ops[0] == alloc)
            return i;
    return NULL;
}

const Attr *instr_attr(const LirInstr *i, AttrKey key) {
    for (int k = 0; k < i->nattrs; k++)
        if (i->attrs[k].key == key)
            return &i->attrs[k];
    return NULL;
}

/* Instruction attributes live in the same records as node attributes; the
 * setters go through a shim so there is one implementation of each. */
static Node *attr_shim(LirProgram *p, LirInstr *i, Node *n, Function *f, Module *m) {
    memset(n, 0, sizeof *n);
    memset(f, 0, sizeof *f);
    memset(m, 0, sizeof *m);
    m->arena = p->arena;
    f->module = m;
    n->func = f;
    n->attrs = i->attrs;
    n->nattrs = i->nattrs;
    return n;
}

static LirProgram *program_of(LirInstr *i) {
    return i->prog;
}

void instr_set_int(LirInstr *i, AttrKey key, int64_t v) {
    Node n;
    Function f;
    Module m;
    attr_shim(program_of(i), i, &n, &f, &m);
    node_set_int(&n, key, v);
    i->attrs = n.attrs;
    i->nattrs = n.nattrs;
}

void instr_set_ints(LirInstr *i, AttrKey key, int count, const int64_t *v) {
    Node n;
    Function f;
    Module m;
    attr_shim(program_of(i), i, &n, &f, &m);
    node_set_ints(&n, key, count, v);
    i->attrs = n.attrs;
    i->nattrs = n.nattrs;
}

void instr_copy_attrs(LirProgram *p, LirInstr *i, const Attr *attrs, int n) {
    i->attrs = arena_alloc_array(p->arena, (size_t)(n ? n : 1), sizeof(Attr));
    i->nattrs = n;
    for (int k = 0; k < n; k++) {
        i->attrs[k] = attrs[k];
        switch (attr_key_type(attrs[k].key)) {
        case AT_STR: i->attrs[k].s = arena_strdup(p->arena, attrs[k].s); break;
        case AT_INTS:
            i->attrs[k].ints.v = arena_grow(p->arena, attrs[k].ints.v, (size_t)attrs[k].ints.n,
                                            (size_t)attrs[k].ints.n + 1, sizeof(int64_t));
            break;
        case AT_FLOATS:
            i->attrs[k].floats.v = arena_grow(p->arena, attrs[k].floats.v,
                                              (size_t)attrs[k].floats.n,
                                              (size_t)attrs[k].floats.n + 1, sizeof(float));
            break;
        default: break;
        }
    }
}

Node *instr_as_node(LirProgram *p, const LirInstr *i, Arena *a) {
    Module *m = arena_alloc(a, sizeof *m);
    Function *f = arena_alloc(a, sizeof *f);
    Node *n = arena_alloc(a, sizeof *n);
    m->arena = a;
    m->source = p->source;
    m->text = p->text;
    f->module = m;
    f->name = "main";
    n->func = f;
    n->kind = NODE_OF_IK(i->kind);
    n->name = i->name;
    n->loc = i->loc;
    n->attrs = i->attrs;
    n->nattrs = i->nattrs;
    int nres = 0;
    while (nres < i->nops && i->roles[nres] != ROLE_IN)
        nres++;
    n->nres = nres;
    n->nops = i->nops - nres;
    n->res = arena_alloc_array(a, (size_t)(nres ? nres : 1), sizeof(Value));
    n->ops = arena_alloc_array(a, (size_t)(n->nops ? n->nops : 1), sizeof(Value *));
    for (int k = 0; k < nres; k++) {
        n->res[k].def = n;
        n->res[k].index = k;
        n->res[k].type = i->ops[k]->type;
    }
    for (int k = 0; k < n->nops; k++) {
        Value *v = arena_alloc(a, sizeof *v);
        v->type = i->ops[nres + k]->type;
        v->def = n; /* never followed: shape rules read types only */
        n->ops[k] = v;
    }
    return n;
}

LirProgram *lir_clone(const LirProgram *src) {
    LirProgram *p = lir_new(src->source);
    p->text = src->text;
    LirBuf **map = arena_alloc_array(p->arena, (size_t)src->next_id + 1, sizeof(LirBuf *));
    for (int b = 0; b < src->nbufs; b++) {
        const LirBuf *o = src->bufs[b];
        LirBuf *c = new_buf(p, o->kind, o->name, &o->type);
        *c = *o;
        c->label = o->label ? arena_strdup(p->arena, o->label) : NULL;
        c->name = arena_strdup(p->arena, o->name);
        c->def = NULL;
        map[o->id] = c;
    }
    for (int b = 0; b < p->nbufs; b++)
        if (p->bufs[b]->base)
            p->bufs[b]->base = map[p->bufs[b]->base->id];
    for (const LirInstr *i = src->first; i; i = i->next) {
        LirBuf *ops[256];
        int n = i->nops < 256 ? i->nops : 256;
        for (int k = 0; k < n; k++)
            ops[k] = map[i->ops[k]->id];
        LirInstr *c = lir_insert(p, NULL, i->kind, n, ops, i->roles);
        instr_copy_attrs(p, c, i->attrs, i->nattrs);
        c->name = arena_strdup(p->arena, i->name);
        c->loc = i->loc;
        c->index = i->index;
        if (i->result) {
            c->result = map[i->result->id];
            c->result->def = c;
        }
    }
    p->next_id = src->next_id;
    p->allocated = src->allocated;
    p->arena_bytes = src->arena_bytes;
    p->const_bytes = src->const_bytes;
    p->mutable_bytes = src->mutable_bytes;
    p->lower_bound = src->lower_bound;
    p->naive_bytes = src->naive_bytes;
    return p;
}
