/* The low-level IR (the Glow paper's second IR): a program of instructions
 * over buffers, in an order that is the schedule. Buffers are the weights
 * (constant, or mutable: the inputs and outputs the caller provides), the
 * activations (allocactivation .. deallocactivation) and views of them.
 * Every instruction operand is marked @in, @out or @inout, which is what the
 * memory optimisations reason about.
 *
 *   declare {
 *     %image = weight mutable in f32<1x1x8x8>
 *     %logits = weight mutable out f32<1x10>
 *     %w = weight const f32<8x1x3x3> opaque<"9f3a1c2e5b7d0e11">
 *   }
 *   program {
 *     %a0 = allocactivation f32<1x8x8x8> loc("Conv_0")
 *     conv @out %a0, @in %image, @in %w {kernel=[3,3] ...}
 *     %v1 = tensorview @in %a0 {offset=0} : f32<1x512>
 *     fully_connected @out %logits, @in %v1, ...
 *     deallocactivation @out %a0
 *   }
 */
#ifndef GLOWC_CORE_LIR_H
#define GLOWC_CORE_LIR_H

#include "core/graph.h"

typedef enum {
#define INSTR(E, nm, nouts, nins, defines) IK_##E,
#include "core/instrs.def"
    IK_FIRST_COMPUTE,
    IK_COUNT = IK_FIRST_COMPUTE + NK_COUNT
} InstrKind;

/* The compute instruction of a node kind, and back. */
#define IK_OF_NODE(nk) ((InstrKind)(IK_FIRST_COMPUTE + (nk)))
#define NODE_OF_IK(ik) ((NodeKind)((ik) - IK_FIRST_COMPUTE))

typedef enum { LB_CONST, LB_IN, LB_OUT, LB_ALLOC, LB_VIEW } LirBufKind;
typedef enum { ROLE_IN, ROLE_OUT, ROLE_INOUT } OperandRole;

typedef struct LirInstr LirInstr;
typedef struct LirProgram LirProgram;

typedef struct LirBuf {
    int id;
    const char *label; /* %label, or NULL to print %id */
    const char *name;  /* provenance: the graph value / ONNX name */
    LirBufKind kind;
    Type type;
    Tensor *payload;      /* LB_CONST */
    struct LirBuf *base;  /* LB_VIEW: the viewed buffer (never itself a view) */
    int64_t offset;       /* LB_VIEW: element offset into base */
    LirInstr *def;        /* LB_ALLOC, LB_VIEW: the defining instruction */
    int64_t address;      /* after allocation: byte offset in its memory */
    /* After allocation, a bounded-dynamic activation or output: where its
     * run-time dimensions live (MAX_RANK i64 at this byte offset of the
     * mutable area), written by the instruction that makes it and read by
     * those that take it, in native code. */
    bool has_shape_slot;
    int64_t shape_slot;
    int live_first, live_last; /* after allocation: instruction indices */
    bool dead;
} LirBuf;

struct LirInstr {
    InstrKind kind;
    int nops;
    LirBuf **ops;
    OperandRole *roles;
    int nattrs;
    Attr *attrs;
    LirBuf *result;   /* the buffer an alloc/tensorview defines */
    const char *name; /* provenance: the graph node's name */
    SrcLoc loc;
    int index;        /* position in the program (lir_number) */
    LirProgram *prog;
    LirInstr *prev, *next;
    bool dead;
};

struct LirProgram {
    Arena *arena; /* owns everything; constant payloads may be shared */
    const char *source;
    const char *text;  /* the .lir text, when parsed */
    LirBuf **bufs;     /* declared weights first, in order, then the rest */
    int nbufs, bufs_cap;
    LirInstr *first, *last;
    int ninstrs;
    int next_id;
    /* After allocation: */
    bool allocated;
    int64_t arena_bytes, const_bytes, mutable_bytes;
    int64_t lower_bound, naive_bytes; /* the plan's yardsticks */
};

/* Per-kind facts. */
const char *instr_kind_name(InstrKind k);
bool instr_kind_from_name(const char *name, size_t len, InstrKind *out);
bool instr_is_compute(InstrKind k);
/* The @out and @in operands a memory instruction takes (instrs.def; -1 for
 * compute kinds, whose counts are nodes.def's). */
int instr_memory_nouts(InstrKind k);
int instr_memory_nins(InstrKind k);
bool instr_defines(InstrKind k);
/* beginif, else, endif, beginloop, endloop. */
bool instr_is_control(InstrKind k);
/* Does the program branch or loop? The memory passes that reason about
 * program order as time (copy-elim, share-buffers, shorten-lifetimes,
 * dead-alloc, peephole) leave such a program alone. */
bool lir_has_control(const LirProgram *p);
/* Can an output share its buffer with a same-typed input (elementwise)? */
bool instr_allows_inplace(InstrKind k);

LirProgram *lir_new(const char *source);
/* A deep copy sharing the constant payloads (immutable, like the graph's). */
LirProgram *lir_clone(const LirProgram *p);
void lir_destroy(LirProgram *p);

LirBuf *lir_add_weight(LirProgram *p, LirBufKind kind, const char *name, const Type *t,
                       Tensor *payload);
/* A new instruction before `pos` (NULL: at the end). For allocactivation and
 * tensorview, `result` gets a new buffer of type t. */
LirInstr *lir_insert(LirProgram *p, LirInstr *pos, InstrKind k, int nops, LirBuf *const *ops,
                     const OperandRole *roles);
LirBuf *lir_alloc(LirProgram *p, LirInstr *pos, const Type *t, const char *name);
LirBuf *lir_view(LirProgram *p, LirInstr *pos, LirBuf *base, int64_t offset, const Type *t,
                 const char *name);
void lir_remove(LirProgram *p, LirInstr *i);
/* Moves a live instruction to just before pos (NULL: to the end). */
void lir_move_before(LirProgram *p, LirInstr *i, LirInstr *pos);
/* Every operand that is `from` becomes `to` (also as a view's base). */
void lir_replace_buf(LirProgram *p, LirBuf *from, LirBuf *to);
/* Sets index on every live instruction, 0.. in program order. */
void lir_number(LirProgram *p);
/* The memory a buffer lives in: itself, or its base for a view. */
LirBuf *lir_storage(LirBuf *b);
LirInstr *lir_find_dealloc(LirProgram *p, const LirBuf *alloc);

/* Attribute access on instructions (the same Attr records as nodes). */
const Attr *instr_attr(const LirInstr *i, AttrKey key);
void instr_set_int(LirInstr *i, AttrKey key, int64_t v);
void instr_set_ints(LirInstr *i, AttrKey key, int n, const int64_t *v);
void instr_copy_attrs(LirProgram *p, LirInstr *i, const Attr *attrs, int n);

/* A Node that carries the instruction's kind, attributes and operand and
 * result types, so that shape rules and interpreter kernels written for
 * graph nodes serve instructions too. Storage from `a`. */
Node *instr_as_node(LirProgram *p, const LirInstr *i, Arena *a);

#endif
