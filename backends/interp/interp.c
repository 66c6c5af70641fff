/* The interpreter's driver: kernel dispatch, folding, and whole-function runs
 * with activations released at their last use. */
#include "backends/interp/interp.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "backends/interp/kernels.h"

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

bool interp_eval_node(const Node *n, Tensor *const *in, Tensor *const *out, DiagList *d) {
    KernelArgs a = {n, in, out, d};
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
    return interp_eval_node(n, ops, results, d);
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

bool interp_run(Function *f, Tensor *const *inputs, Tensor **outputs, Arena *a, DiagList *d,
                InterpObserver observe, void *observe_ctx) {
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
        if (!inputs[i] || !type_equal(&inputs[i]->type, &p->res[0].type)) {
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
        for (int i = 0; i < n->nres; i++)
            out[i] = tensor_new_big(run, &n->res[i].type);
        ok = interp_eval_node(n, in, out, d);
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
