/* schedule: orders the nodes to lower the peak of live activation memory
 * (the bytes of results computed and not yet consumed for the last time),
 * as Glow's scheduler does, instead of keeping the importer's order.
 *
 * Two orders are built and the best of them and the given order is kept:
 *  - depth first from the outputs, operands that need the most memory to
 *    compute first (Glow's child-memory-size heuristic: start the big
 *    subtree while little else is live);
 *  - greedy: among the ready nodes, the one that frees the most bytes net.
 * Weights and inputs are not counted; outputs stay live to the end.
 * Requires a verified graph; invalidates nothing. */
#include <stdlib.h>
#include <string.h>

#include "passes/pass.h"

typedef struct Sched {
    Function *f;
    int n;          /* compute nodes */
    Node **nodes;   /* in the given order */
    int *index;     /* by node id: position in nodes, -1 for storage */
    int64_t *size;  /* bytes of each node's results */
    int *users;     /* distinct consumer count, by position */
    int *cons_at;   /* consumers of position p: cons[cons_at[p] .. cons_at[p+1]) */
    int *cons;
    bool *is_output;
    int *ops; /* operands() scratch: room for the most operands of a node */
} Sched;

static int64_t result_bytes(const Node *n) {
    int64_t b = 0;
    for (int i = 0; i < n->nres; i++)
        b += (int64_t)type_bytes(&n->res[i].type);
    return b;
}

/* Distinct compute operands of node position p, by position, into out
 * (room for the node's operand count). */
static int operands(const Sched *s, int p, int *out) {
    const Node *n = s->nodes[p];
    int k = 0;
    for (int i = 0; i < n->nops; i++) {
        int q = s->index[n->ops[i]->def->id];
        if (q < 0)
            continue;
        bool dup = false;
        for (int j = 0; j < k; j++)
            dup |= out[j] == q;
        if (!dup)
            out[k++] = q;
    }
    return k;
}

static bool sched_init(Sched *s, Function *f) {
    memset(s, 0, sizeof *s);
    s->f = f;
    s->n = f->nnodes;
    s->nodes = calloc((size_t)s->n + 1, sizeof *s->nodes);
    s->index = malloc(((size_t)f->next_id + 1) * sizeof *s->index);
    s->size = calloc((size_t)s->n + 1, sizeof *s->size);
    s->users = calloc((size_t)s->n + 1, sizeof *s->users);
    s->is_output = calloc((size_t)s->n + 1, sizeof *s->is_output);
    if (!s->nodes || !s->index || !s->size || !s->users || !s->is_output)
        return false;
    for (int i = 0; i < f->next_id; i++)
        s->index[i] = -1;
    int p = 0, most = 1;
    for (Node *n = f->first; n; n = n->next, p++) {
        s->nodes[p] = n;
        s->index[n->id] = p;
        s->size[p] = result_bytes(n);
        most = n->nops > most ? n->nops : most;
    }
    s->ops = malloc((size_t)most * sizeof *s->ops);
    if (!s->ops)
        return false;
    int *ops = s->ops;
    for (p = 0; p < s->n; p++) {
        int k = operands(s, p, ops);
        for (int j = 0; j < k; j++)
            s->users[ops[j]]++;
    }
    s->cons_at = calloc((size_t)s->n + 2, sizeof *s->cons_at);
    int total = 0;
    for (p = 0; p < s->n; p++) {
        s->cons_at[p] = total;
        total += s->users[p];
    }
    s->cons_at[s->n] = total;
    s->cons = malloc((size_t)total * sizeof *s->cons + 1);
    int *fill = calloc((size_t)s->n + 1, sizeof *fill);
    if (!s->cons_at || !s->cons || !fill) {
        free(fill);
        return false;
    }
    for (p = 0; p < s->n; p++) {
        int k = operands(s, p, ops);
        for (int j = 0; j < k; j++)
            s->cons[s->cons_at[ops[j]] + fill[ops[j]]++] = p;
    }
    free(fill);
    for (int i = 0; i < f->noutputs; i++) {
        int q = s->index[f->outputs[i]->def->id];
        if (q >= 0)
            s->is_output[q] = true;
    }
    return true;
}

static void sched_free(Sched *s) {
    free(s->nodes);
    free(s->index);
    free(s->size);
    free(s->users);
    free(s->cons_at);
    free(s->cons);
    free(s->is_output);
    free(s->ops);
}

/* Peak live bytes of running the nodes in `order` (positions). */
static int64_t peak_of(const Sched *s, const int *order) {
    int *left = malloc((size_t)(s->n + 1) * sizeof *left);
    memcpy(left, s->users, (size_t)s->n * sizeof *left);
    int64_t live = 0, peak = 0;
    int *ops = s->ops;
    for (int i = 0; i < s->n; i++) {
        int p = order[i];
        live += s->size[p];
        if (live > peak)
            peak = live;
        int k = operands(s, p, ops);
        for (int j = 0; j < k; j++)
            if (--left[ops[j]] == 0 && !s->is_output[ops[j]])
                live -= s->size[ops[j]];
        if (s->users[p] == 0 && !s->is_output[p])
            live -= s->size[p];
    }
    free(left);
    return peak;
}

/* ---- depth first, biggest subtree first --------------------------------- */

static void subtree_mem(const Sched *s, int64_t *mem) {
    int *ops = s->ops;
    for (int p = 0; p < s->n; p++) { /* operands come first in a valid order */
        int64_t m = s->size[p];
        int k = operands(s, p, ops);
        for (int j = 0; j < k; j++)
            if (mem[ops[j]] > m)
                m = mem[ops[j]];
        mem[p] = m;
    }
}

/* Operands of p sorted for the depth-first order: biggest memory first,
 * ties in the given order. */
static int sorted_operands(const Sched *s, const int64_t *mem, int p, int *ops) {
    int k = operands(s, p, ops);
    for (int i = 1; i < k; i++)
        for (int j = i; j > 0 && (mem[ops[j]] > mem[ops[j - 1]] ||
                                  (mem[ops[j]] == mem[ops[j - 1]] && ops[j] < ops[j - 1])); j--) {
            int t = ops[j];
            ops[j] = ops[j - 1];
            ops[j - 1] = t;
        }
    return k;
}

/* Post-order from p, with an explicit stack (a chain of many thousand
 * nodes must not exhaust the C stack). Each frame's sorted operands live
 * in `opbuf` at the frame's base (at most the total operand count). */
typedef struct DfsFrame {
    int p, k, next, base;
} DfsFrame;

static void dfs_visit(const Sched *s, const int64_t *mem, int root, bool *done, int *order,
                      int *len, DfsFrame *stack, int *opbuf) {
    if (done[root])
        return;
    done[root] = true; /* a DAG: marking early cannot skip a needed operand */
    int top = 0;
    stack[0] = (DfsFrame){root, sorted_operands(s, mem, root, opbuf), 0, 0};
    while (top >= 0) {
        DfsFrame *f = &stack[top];
        if (f->next < f->k) {
            int c = opbuf[f->base + f->next++];
            if (done[c])
                continue;
            done[c] = true;
            int base = f->base + f->k;
            stack[++top] = (DfsFrame){c, sorted_operands(s, mem, c, opbuf + base), 0, base};
        } else {
            order[(*len)++] = f->p;
            top--;
        }
    }
}

static void dfs_order(const Sched *s, int *order) {
    int64_t *mem = calloc((size_t)s->n + 1, sizeof *mem);
    bool *done = calloc((size_t)s->n + 1, sizeof *done);
    DfsFrame *stack = malloc(((size_t)s->n + 1) * sizeof *stack);
    size_t total = 1;
    for (int p = 0; p < s->n; p++)
        total += (size_t)s->nodes[p]->nops;
    int *opbuf = malloc(total * sizeof *opbuf);
    int len = 0;
    if (mem && done && stack && opbuf) {
        subtree_mem(s, mem);
        for (int i = 0; i < s->f->noutputs; i++) {
            int q = s->index[s->f->outputs[i]->def->id];
            if (q >= 0)
                dfs_visit(s, mem, q, done, order, &len, stack, opbuf);
        }
        for (int p = 0; p < s->n; p++) /* nodes no output needs keep their place at the end */
            dfs_visit(s, mem, p, done, order, &len, stack, opbuf);
    } else { /* out of memory: the given order */
        for (int p = 0; p < s->n; p++)
            order[p] = p;
    }
    free(mem);
    free(done);
    free(stack);
    free(opbuf);
}

/* ---- greedy by net memory ----------------------------------------------- */

static void greedy_order(const Sched *s, int *order) {
    int *pending = calloc((size_t)s->n + 1, sizeof *pending); /* unscheduled operands */
    int *left = malloc((size_t)(s->n + 1) * sizeof *left);
    bool *done = calloc((size_t)s->n + 1, sizeof *done);
    memcpy(left, s->users, (size_t)s->n * sizeof *left);
    int *ops = s->ops;
    for (int p = 0; p < s->n; p++)
        pending[p] = operands(s, p, ops);
    for (int i = 0; i < s->n; i++) {
        int best = -1;
        int64_t best_net = 0;
        for (int p = 0; p < s->n; p++) {
            if (done[p] || pending[p])
                continue;
            int64_t net = s->size[p];
            int k = operands(s, p, ops);
            for (int j = 0; j < k; j++)
                if (left[ops[j]] == 1 && !s->is_output[ops[j]])
                    net -= s->size[ops[j]];
            if (best < 0 || net < best_net) {
                best = p;
                best_net = net;
            }
        }
        done[best] = true;
        order[i] = best;
        int k = operands(s, best, ops);
        for (int j = 0; j < k; j++)
            left[ops[j]]--;
        /* users of best become ready one operand sooner */
        for (int c = s->cons_at[best]; c < s->cons_at[best + 1]; c++)
            pending[s->cons[c]]--;
    }
    free(pending);
    free(left);
    free(done);
}

/* Whether the given (valid) order is the only one: every node uses the
 * node before it (a chain, as DenseNet's concatenations make it). */
static bool only_order(const Sched *s) {
    for (int p = 1; p < s->n; p++) {
        int k = operands(s, p, s->ops);
        bool uses = false;
        for (int j = 0; j < k; j++)
            uses |= s->ops[j] == p - 1;
        if (!uses)
            return false;
    }
    return true;
}

static void apply_order(Sched *s, const int *order) {
    Function *f = s->f;
    f->first = f->last = NULL;
    for (int i = 0; i < s->n; i++) {
        Node *n = s->nodes[order[i]];
        n->prev = f->last;
        n->next = NULL;
        if (f->last)
            f->last->next = n;
        else
            f->first = n;
        f->last = n;
    }
}

bool pass_schedule(Function *f, PassContext *ctx) {
    Sched s;
    if (!sched_init(&s, f) || s.n == 0) {
        sched_free(&s);
        return false;
    }
    int *given = malloc((size_t)s.n * sizeof *given), *dfs = malloc((size_t)s.n * sizeof *dfs);
    int *greedy = malloc((size_t)s.n * sizeof *greedy);
    for (int i = 0; i < s.n; i++)
        given[i] = i;
    dfs_order(&s, dfs);
    greedy_order(&s, greedy);
    int64_t p_given = peak_of(&s, given), p_dfs = peak_of(&s, dfs), p_greedy = peak_of(&s, greedy);
    const int *best = given;
    int64_t p_best = p_given;
    if (p_dfs < p_best) {
        best = dfs;
        p_best = p_dfs;
    }
    if (p_greedy < p_best) {
        best = greedy;
        p_best = p_greedy;
    }
    bool changed = best != given && memcmp(best, given, (size_t)s.n * sizeof *best) != 0;
    if (changed)
        apply_order(&s, best);
    ctx->peak_before = p_given;
    ctx->peak_after = p_best;
    ctx->one_order = only_order(&s);
    if (changed)
        pass_rewrote(ctx, f, f->outputs[0]);
    free(given);
    free(dfs);
    free(greedy);
    sched_free(&s);
    return changed;
}
