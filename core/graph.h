/* The high-level IR: a Module holds one Function (main); a Function is a list
 * of typed Nodes in schedule order, plus its parameters (graph inputs,
 * placeholders) and its constants (weights), plus the values it returns.
 *
 * Every Node has a small integer id, unique in its function, which is how the
 * text form refers to it (%12) unless the node has a label (%conv1.weight).
 * Operands point at Values; a Value is one result of a Node. Use lists are not
 * kept: passes that need users compute them (graph_users). */
#ifndef GLOWC_CORE_GRAPH_H
#define GLOWC_CORE_GRAPH_H

#include <stdbool.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/diag.h"
#include "core/tensor.h"
#include "core/types.h"

typedef enum {
#define NODE(E, nm, omin, omax, rmin, rmax, ty, inf, facts, attrs) NK_##E,
#include "core/nodes.def"
    NK_COUNT
} NodeKind;

typedef enum {
#define ATTR(key, T) AK_##key,
#include "core/attrs.def"
    AK_COUNT,
    AK_NONE = AK_COUNT
} AttrKey;

typedef enum { AT_INT, AT_FLOAT, AT_INTS, AT_FLOATS, AT_STR, AT_ELEM, AT_ENUM } AttrType;

/* The sets of named values an ATTR_ENUM key takes (attrs.def). */
typedef enum {
    ES_NONE,
    ES_ACT, /* core/acts.def */
    ES_MODE, ES_CTM, ES_NEAREST, ES_PADDING, ES_DIR, ES_RED, ES_CASE,
} EnumSet;

/* The values of core/enums.def, one enumeration for all sets (0: none). */
typedef enum {
    ENUM_NONE,
#define ENUM(set, E, nm) set##_##E,
#include "core/enums.def"
    ENUM_COUNT
} EnumValue;

/* Fused activations (core/acts.def); ACT_NONE is no activation. */
typedef enum {
    ACT_NONE,
#define ACT(E, nm, node) ACT_##E,
#include "core/acts.def"
    ACT_COUNT
} ActKind;

typedef struct Attr {
    AttrKey key;
    union {
        int64_t i;
        float f;
        const char *s;
        ElemKind elem;
        struct { int n; int64_t *v; } ints;
        struct { int n; float *v; } floats;
    };
} Attr;

typedef struct Node Node;
typedef struct Function Function;

typedef struct Value {
    Node *def;
    int index; /* which result of def */
    Type type;
} Value;

struct Node {
    NodeKind kind;
    int id;
    const char *label; /* text name for %label, or NULL to print %id */
    const char *name;  /* origin name (the ONNX node / tensor name); "" if none */
    SrcLoc loc;        /* where the text parser found it */
    int nops;
    Value **ops;
    int nres;
    Value *res;
    int nattrs;
    Attr *attrs;
    Tensor *payload; /* constants: the weights */
    Node *prev, *next; /* the function's node list (not storage) */
    Function *func;
    int nbodies;       /* REGION kinds: node_kind_bodies(kind) Functions it runs */
    Function **bodies;
    bool dead;         /* removed from its function */
};

struct Function {
    struct Module *module;
    const char *name;
    int nparams;
    Node **params;
    int nconsts, consts_cap;
    Node **consts;
    Node *first, *last; /* compute nodes in schedule order */
    int nnodes;
    int noutputs;
    Value **outputs;
    const char **output_names;
    int next_id;
    Node *owner; /* a region's body: the node that holds it (NULL for main) */
};

typedef struct Module {
    Arena *arena; /* owns every IR object and weight of this module */
    const char *source; /* the file it came from */
    const char *text;   /* its text, when parsed from .hl (for diagnostics) */
    Function *main;
} Module;

/* Per-kind facts from nodes.def. */
const char *node_kind_name(NodeKind k);
bool node_kind_from_name(const char *name, size_t len, NodeKind *out);
int node_kind_ops_min(NodeKind k);
int node_kind_ops_max(NodeKind k); /* -1: variadic */
int node_kind_res_min(NodeKind k);
int node_kind_res_max(NodeKind k);
const AttrKey *node_kind_attrs(NodeKind k); /* ends with AK_NONE */
bool node_kind_has_attr(NodeKind k, AttrKey key);
bool node_kind_is_unary(NodeKind k);   /* the UNARY range */
bool node_kind_is_binary(NodeKind k);  /* the BINARY range */
bool node_kind_is_compare(NodeKind k);
bool node_kind_is_reduce(NodeKind k);
/* Facts of a kind: the facts column of nodes.def. */
typedef enum { NF_EW = 1, NF_VIEW = 2, NF_LOWERS = 4, NF_REGION = 8 } NodeFact;
bool node_kind_has(NodeKind k, NodeFact fact);
/* How many bodies a REGION kind holds (0 for others), and the name of body i
 * in the text form ("then", "else", "body"). */
int node_kind_bodies(NodeKind k);
const char *node_kind_body_name(NodeKind k, int i);
/* n's result is its operand's memory under another type (a VIEW kind with
 * one result: dropout's mask is not). */
bool node_is_view(const Node *n);
/* An operand or a result of n has a bounded-dynamic dimension (passes that
 * rewrite by static sizes leave such nodes alone). */
bool node_is_dynamic(const Node *n);
/* lower.c has a rule for n (a LOWERS kind whose other conditions hold). */
bool node_lowers(const Node *n);
const char *attr_key_name(AttrKey k);
AttrType attr_key_type(AttrKey k);
EnumSet attr_key_set(AttrKey k); /* ES_NONE unless an ATTR_ENUM key */
/* A value of `set` by name (0 if it has none of that name) and back; the
 * names of the whole set, comma-separated, for messages (cut to `size`). */
int enum_by_name(EnumSet set, const char *name, size_t len);
const char *enum_name(EnumSet set, int value);
void enum_set_names(EnumSet set, char *buf, size_t size);
bool attr_key_from_name(const char *name, size_t len, AttrKey *out);

/* Modules and functions. */
Module *module_new(const char *source);
void module_destroy(Module *m);
Function *function_new(Module *m, const char *name);
/* A new body of region node n (body i), owned by the module. */
Function *function_new_body(Node *n, int i);
/* A deep copy of the IR in a new arena. Constant payloads are shared, not
 * copied: they are immutable (a pass that changes a weight makes a new
 * constant), so the copy is cheap and the original must outlive it. */
Module *module_clone(const Module *m);

/* Building. Nodes get the next id; graph_add_node appends to the node list,
 * graph_insert_before inserts before `pos` (NULL: append). Result types are
 * zero until set (infer_node or by hand). */
Node *graph_new_node(Function *f, NodeKind k, int nops, Value *const *ops, int nres);
Node *graph_add_node(Function *f, NodeKind k, int nops, Value *const *ops, int nres);
Node *graph_insert_before(Function *f, Node *pos, NodeKind k, int nops, Value *const *ops,
                          int nres);
Node *graph_add_param(Function *f, const char *name, const Type *t);
/* A copy of compute node n (of any function, bodies deep-copied) inserted in
 * f before pos (NULL: appended), on the operands `ops` of f. */
Node *graph_copy_node(Function *f, Node *pos, const Node *n, Value *const *ops);
Node *graph_add_constant(Function *f, const char *name, Tensor *payload);
void graph_set_outputs(Function *f, int n, Value *const *vals, const char *const *names);
/* Unlinks a compute node or constant (its results must be unused). */
void graph_remove_node(Function *f, Node *n);
/* Every operand (and output) that is `from` becomes `to`; returns the count. */
int graph_replace_uses(Function *f, const Value *from, Value *to);
/* Users of each node's results: counts[id] (array of f->next_id ints, from `a`). */
int *graph_use_counts(Function *f, Arena *a);
/* The one node that reads n's results (however many times), or NULL when
 * none, several, or a result is a graph output. */
Node *graph_only_user(Function *f, const Node *n);
/* The node with this id (param, constant or compute), or NULL. */
Node *graph_find_id(Function *f, int id);
Node *graph_find_name(Function *f, const char *name);

/* Attributes (set replaces a present key). */
const Attr *node_attr(const Node *n, AttrKey key);
bool node_has_attr(const Node *n, AttrKey key);
int64_t node_attr_int(const Node *n, AttrKey key, int64_t dflt);
float node_attr_float(const Node *n, AttrKey key, float dflt);
const char *node_attr_str(const Node *n, AttrKey key, const char *dflt);
/* An ATTR_ENUM attribute's value (an EnumValue or, for act, an ActKind). */
int node_attr_enum(const Node *n, AttrKey key, int dflt);
/* The activation attribute `key`, ACT_NONE when absent. */
ActKind node_attr_act(const Node *n, AttrKey key);
/* Pointer to the list (count in *n), or NULL with *n = 0 when absent. */
const int64_t *node_attr_ints(const Node *n, AttrKey key, int *count);
const float *node_attr_floats(const Node *n, AttrKey key, int *count);
void node_set_int(Node *n, AttrKey key, int64_t v);
void node_set_float(Node *n, AttrKey key, float v);
void node_set_str(Node *n, AttrKey key, const char *s);
void node_set_elem(Node *n, AttrKey key, ElemKind e);
void node_set_enum(Node *n, AttrKey key, int value);
void node_set_act(Node *n, AttrKey key, ActKind act);
/* Gives `to` the fused activation (act, act_alpha, act_beta) that the
 * activation node `act` computes (act_of_kind(act->kind) != ACT_NONE; a
 * clip's bounds are its attributes). */
void node_fuse_act(Node *to, const Node *act);
void node_set_ints(Node *n, AttrKey key, int count, const int64_t *v);
void node_set_floats(Node *n, AttrKey key, int count, const float *v);
void node_remove_attr(Node *n, AttrKey key);
bool attr_equal(const Attr *a, const Attr *b);
uint64_t attr_hash(const Attr *a);

/* Activations by name ("relu"; ACT_NONE if unknown), their names, the one
 * a node kind stands for (ACT_NONE if none), and the scalar form, which
 * the interpreter runs for the fused activation and for the node alike. */
ActKind act_by_name(const char *name, size_t len);
const char *act_name(ActKind act);
ActKind act_of_kind(NodeKind kind);
double act_scalar(ActKind act, double x, double alpha, double beta);

/* The last compute node of f named `name` (the ONNX node whose value it
 * is, when passes split a node in several), or NULL. */
const Node *graph_last_named(const Function *f, const char *name);

/* "node 'Conv_3' (conv)", for diagnostics; allocated in the module arena. */
const char *node_where(const Node *n);
bool node_is_storage(const Node *n);

/* Iterate the compute nodes of f; safe against removal of the current node. */
#define graph_for_each_node(f, n, tmp)                                                  \
    for (Node *n = (f)->first, *tmp = n ? n->next : NULL; n;                              \
         n = tmp, tmp = n ? n->next : NULL)

#endif
