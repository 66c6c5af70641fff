/* The interpreter's driver: kernel dispatch, folding, and whole-function runs
 * with activations released at their last use. */
#include "backends/interp/interp.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "backends/interp/kernels.h"
#include "core/verify.h"

static const KernelFn kernels[NK_COUNT] = {
#define NODE(E, nm, omin, omax, rmin, rmax, ty, inf, facts, attrs) [NK_##E] = k_##nm,
#include "core/nodes.def"
};

bool kernel_fail(const KernelArgs *a, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (a->d)
        node_error(a->d, a->n, "%s", msg);
    return false;
}

/* Storage nodes have no computation: the runner binds their tensors. */
bool k_placeholder(const KernelArgs *a) {
    return kernel_fail(a, "a placeholder is not computed");
}

bool k_constant(const KernelArgs *a) {
    return kernel_fail(a, "a constant is not computed");
}

void matmul_shape(MatmulShape *s, const Type *a, const Type *b) {
    Type ta = *a, tb = *b;
    if (ta.rank == 1) {
        ta.dims[1] = ta.dims[0];
        ta.dims[0] = 1;
        ta.rank = 2;
    }
    if (tb.rank == 1) {
        tb.dims[1] = 1;
        tb.rank = 2;
    }
    s->m = ta.dims[ta.rank - 2];
    s->k = ta.dims[ta.rank - 1];
    s->n = tb.dims[tb.rank - 1];
    Type batch;
    ta.rank -= 2;
    tb.rank -= 2;
    type_broadcast(&ta, &tb, &batch);
    s->nbatch = type_numel(&batch);
    const Type *bts[2] = {&ta, &tb};
    bcast_init(&s->bc, &batch, bts, 2);
}

void bcast_init(Bcast *b, const Type *out, const Type *const *ops, int nops) {
    memset(b, 0, sizeof *b);
    b->rank = out->rank;
    b->nops = nops;
    for (int i = 0; i < out->rank; i++)
        b->dims[i] = out->dims[i];
    for (int k = 0; k < nops; k++) {
        const Type *t = ops[k];
        int64_t s = 1;
        for (int i = t->rank - 1; i >= 0; i--) {
            int oi = i + out->rank - t->rank;
            b->strides[k][oi] = t->dims[i] == 1 ? 0 : s;
            s *= t->dims[i];
        }
    }
}

void bcast_next(Bcast *b) {
    for (int i = b->rank - 1; i >= 0; i--) {
        for (int k = 0; k < b->nops; k++)
            b->off[k] += b->strides[k][i];
        if (++b->idx[i] < b->dims[i])
            return;
        for (int k = 0; k < b->nops; k++)
            b->off[k] -= b->strides[k][i] * b->dims[i];
        b->idx[i] = 0;
    }
}

bool kernel_set_str(const KernelArgs *a, Tensor *t, int64_t i, const char *s, size_t len) {
    if (!a->strs)
        return kernel_fail(a, "computes strings, which need a run (not available here)");
    if (!tensor_set_str(a->strs, t, i, s, len))
        return kernel_fail(a, "out of memory for strings");
    return true;
}

bool interp_eval_node(const Node *n, Tensor *const *in, Tensor *const *out, Arena *strs,
                      DiagList *d) {
    KernelArgs a = {n, in, out, d, strs};
    for (int i = 0; i < n->nops; i++)
        if (!in[i] || !in[i]->data)
            return kernel_fail(&a, "operand %d has no data", i);
    return kernels[n->kind](&a);
}

bool interp_fold(void *ctx, const Node *n, Tensor *const *ops, Tensor **results, Arena *a,
                 DiagList *d) {
    (void)ctx;
    for (int i = 0; i < n->nres; i++) {
        results[i] = tensor_new(a, &n->res[i].type);
        if (!results[i]) {
            diag_error(d, node_where(n), "result too large to fold");
            return false;
        }
    }
    return interp_eval_node(n, ops, results, a, d);
}

/* Index of each node's last use in schedule order (outputs: never freed). */
static int *last_uses(Function *f, Arena *a) {
    int *last = arena_alloc_array(a, (size_t)f->next_id + 1, sizeof(int));
    for (int i = 0; i < f->next_id; i++)
        last[i] = -1;
    int pos = 0;
    for (Node *n = f->first; n; n = n->next, pos++)
        for (int i = 0; i < n->nops; i++)
            last[n->ops[i]->def->id] = pos;
    for (int i = 0; i < f->noutputs; i++)
        last[f->outputs[i]->def->id] = 1 << 30;
    return last;
}

static bool run_function(Function *f, Tensor *const *inputs, Tensor **outputs, Arena *a,
                         DiagList *d, InterpObserver observe, void *observe_ctx);

bool interp_run(Function *f, Tensor *const *inputs, Tensor **outputs, Arena *a, DiagList *d,
                InterpObserver observe, void *observe_ctx) {
    /* The kernels size their loops by the operands' types and trust the
     * result types to agree: a graph a pass broke (under --no-verify) is
     * refused here, not run out of bounds. (The bodies of regions are
     * verified with it, once, not at every iteration.) */
    if (!verify_function(f, d)) {
        diag_note(d, NULL, "the interpreter does not run an invalid graph");
        return false;
    }
    return run_function(f, inputs, outputs, a, d, observe, observe_ctx);
}

/* ---- regions ---- */

/* A body's result into the node's (the run-time size with it): strings
 * move to the outer run's arena, as the body's dies after this. */
static bool copy_into(const KernelArgs *a, Tensor *dst, const Tensor *src) {
    memcpy(dst->data, src->data, tensor_bytes(src));
    dst->type = src->type;
    return !a->strs || tensor_own_strs(a->strs, dst);
}

bool k_trap(const KernelArgs *a) {
    return kernel_fail(a, "%s", node_attr_str(a->n, AK_message, "a trap ran"));
}

/* The taken branch runs on the captured values (operands 1...). */
bool k_if(const KernelArgs *a) {
    const Node *n = a->n;
    Function *b = n->bodies[tensor_get_i64(a->in[0], 0) ? 0 : 1];
    Arena *tmp = arena_new();
    if (!tmp)
        return kernel_fail(a, "out of memory");
    Tensor **outs = arena_alloc_array(tmp, (size_t)n->nres + 1, sizeof(Tensor *));
    bool ok = outs && run_function(b, a->in + 1, outs, tmp, a->d, NULL, NULL);
    for (int i = 0; ok && i < n->nres; i++)
        ok = copy_into(a, a->out[i], outs[i]);
    arena_destroy(tmp);
    return ok;
}

/* Each iteration's results live in one of two arenas, in turn: the next
 * iteration reads them and then writes the other one, so a long loop runs in
 * the memory of two iterations. */
bool k_loop(const KernelArgs *a) {
    const Node *n = a->n;
    Function *b = n->bodies[0];
    int nin = n->nops, ncarry = n->nres;
    int64_t trip = tensor_get_i64(a->in[0], 0);
    bool cond = tensor_get_i64(a->in[1], 0) != 0;
    Arena *ar[2] = {arena_new(), arena_new()}, *fixed = arena_new();
    Tensor **in = fixed ? arena_alloc_array(fixed, (size_t)nin, sizeof(Tensor *)) : NULL;
    bool ok = ar[0] && ar[1] && in;
    Type ti = type_scalar(ELEM_I64), tc = type_scalar(ELEM_BOOL);
    if (ok) {
        in[0] = tensor_new(fixed, &ti);
        in[1] = tensor_new(fixed, &tc);
        for (int i = 2; i < nin; i++)
            in[i] = a->in[i];
        ok = in[0] && in[1];
    }
    for (int64_t it = 0; ok && it < trip && cond; it++) {
        Arena *next = arena_new();
        Tensor **outs = next ? arena_alloc_array(next, (size_t)ncarry + 1, sizeof(Tensor *)) : NULL;
        if (!outs) {
            arena_destroy(next);
            ok = false;
            break;
        }
        tensor_set_f64(in[0], 0, (double)it);
        tensor_set_f64(in[1], 0, 1);
        ok = run_function(b, in, outs, next, a->d, NULL, NULL);
        if (ok) {
            cond = tensor_get_i64(outs[0], 0) != 0;
            for (int j = 0; j < ncarry; j++)
                in[2 + j] = outs[1 + j];
        }
        arena_destroy(ar[it & 1]); /* the iteration before last: nothing reads it now */
        ar[it & 1] = next;
    }
    for (int j = 0; ok && j < ncarry; j++)
        ok = copy_into(a, a->out[j], in[2 + j]);
    if (!ok && !(ar[0] && ar[1] && in))
        kernel_fail(a, "out of memory");
    arena_destroy(ar[0]);
    arena_destroy(ar[1]);
    arena_destroy(fixed);
    return ok;
}

const Node *interp_run_time_node(const Node *n, Tensor *const *in, Arena *run, DiagList *d) {
    bool dynamic = false;
    for (int i = 0; i < n->nops && !dynamic; i++)
        dynamic = !type_equal(&in[i]->type, &n->ops[i]->type);
    for (int i = 0; i < n->nres && !dynamic; i++)
        dynamic = type_is_dynamic(&n->res[i].type);
    if (!dynamic)
        return n;
    Node *c = arena_alloc(run, sizeof *c);
    *c = *n;
    Type *ops = arena_alloc_array(run, (size_t)n->nops + 1, sizeof(Type));
    Type *res = arena_alloc_array(run, (size_t)n->nres + 1, sizeof(Type));
    c->ops = arena_alloc_array(run, (size_t)n->nops + 1, sizeof(Value *));
    c->res = arena_alloc_array(run, (size_t)n->nres + 1, sizeof(Value));
    for (int i = 0; i < n->nops; i++) {
        ops[i] = in[i]->type;
        Value *v = arena_alloc(run, sizeof *v);
        *v = *n->ops[i];
        v->type = ops[i];
        c->ops[i] = v;
    }
    if (!infer_run_time(n, ops, res, d, run))
        return NULL;
    for (int i = 0; i < n->nres; i++) {
        c->res[i] = (Value){c, i, res[i]};
        c->res[i].type.dyn = 0; /* sizes now, or bounds a kernel shrinks */
    }
    return c;
}

static bool run_function(Function *f, Tensor *const *inputs, Tensor **outputs, Arena *a,
                         DiagList *d, InterpObserver observe, void *observe_ctx) {
    Arena *run = arena_new();
    if (!run) {
        diag_error(d, NULL, "out of memory");
        return false;
    }
    jmp_buf oom;
    if (setjmp(oom)) {
        diag_error(d, NULL, "out of memory while running the model");
        arena_destroy(run);
        return false;
    }
    arena_set_oom_handler(run, &oom);
    /* values[id] -> the tensors of that node's results */
    Tensor ***values = arena_alloc_array(run, (size_t)f->next_id + 1, sizeof(Tensor **));
    int *last = last_uses(f, run);
    bool ok = true;
    for (int i = 0; i < f->nparams && ok; i++) {
        Node *p = f->params[i];
        if (!inputs[i] || !type_fits(&inputs[i]->type, &p->res[0].type)) {
            char want[TYPE_STR_MAX], got[TYPE_STR_MAX];
            diag_error(d, NULL, "input '%s' must be %s, got %s", p->name,
                       type_str(&p->res[0].type, want),
                       inputs[i] ? type_str(&inputs[i]->type, got) : "nothing");
            ok = false;
            break;
        }
        values[p->id] = arena_alloc(run, sizeof(Tensor *));
        values[p->id][0] = inputs[i];
    }
    for (int i = 0; i < f->nconsts && ok; i++) {
        Node *c = f->consts[i];
        if (!c->payload || !c->payload->data) {
            node_error(d, c, "constant has no data (it was elided in the text form)");
            ok = false;
            break;
        }
        values[c->id] = arena_alloc(run, sizeof(Tensor *));
        values[c->id][0] = c->payload;
    }
    int pos = 0;
    for (Node *n = f->first; n && ok; n = n->next, pos++) {
        Tensor *in[256], **out = arena_alloc_array(run, (size_t)n->nres, sizeof(Tensor *));
        if (n->nops > 256) {
            node_error(d, n, "too many operands");
            ok = false;
            break;
        }
        for (int i = 0; i < n->nops; i++)
            in[i] = values[n->ops[i]->def->id][n->ops[i]->index];
        const Node *rn = interp_run_time_node(n, in, run, d);
        if (!rn) {
            ok = false;
            break;
        }
        for (int i = 0; i < n->nres; i++)
            out[i] = tensor_new_big(run, &rn->res[i].type);
        ok = interp_eval_node(rn, in, out, run, d);
        values[n->id] = out;
        if (ok && observe)
            observe(observe_ctx, n, out);
        /* Release operands whose last use this was (never weights or inputs). */
        for (int i = 0; i < n->nops && ok; i++) {
            Node *def = n->ops[i]->def;
            if (node_is_storage(def) || last[def->id] != pos || !values[def->id])
                continue;
            for (int r = 0; r < def->nres; r++)
                arena_release(run, values[def->id][r]->data);
            values[def->id] = NULL;
        }
    }
    for (int i = 0; i < f->noutputs && ok; i++) {
        const Value *v = f->outputs[i];
        outputs[i] = tensor_clone(a, values[v->def->id][v->index]);
        if (!outputs[i]) {
            diag_error(d, NULL, "out of memory for output '%s'", f->output_names[i]);
            ok = false;
        }
    }
    arena_destroy(run);
    return ok;
}
