/* Where a model's time goes in the libjit kernels: compiles MODEL.onnx at
 * -O2 to its allocated low-level program (the one the CPU backend
 * generates code for), runs every instruction on the fast kernel of its kind
 * (or the interpreter's, through libjit_generic, where there is none), with
 * the descriptors code generation would emit, and reports per node kind the
 * sum over instructions of each one's minimum time over the runs, single-
 * threaded. Copies are memmove, as in generated code.
 *
 * The kernels here are not inlined with constant descriptors as in generated
 * code: this measures the kernels, not LLVM's specialisation of them.
 *
 * usage: bench_model MODEL.onnx [--runs N] [--each] (--each: every instruction) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/cpu/libjit/kernels.h"
#include "core/lir.h"
#include "core/strbuf.h"
#include "passes/session.h"
#include "tests/kernels/harness.h"

typedef struct Fast {
    NodeKind kind;
    KernelFn fn;
    WorkFn work;
} Fast;

#define FAST_ROW(name, KIND) {KIND, libjit_##name##_f32, libjit_##name##_f32_work},
static const Fast fast[] = {
    {NK_CONV, libjit_conv_f32, libjit_conv_f32_work},
    {NK_FULLY_CONNECTED, libjit_fully_connected_f32, libjit_fully_connected_f32_work},
    {NK_MATMUL, libjit_matmul_f32, libjit_matmul_f32_work},
    {NK_MAX_POOL, libjit_max_pool_f32, libjit_max_pool_f32_work},
    {NK_AVG_POOL, libjit_avg_pool_f32, libjit_avg_pool_f32_work},
    {NK_GLOBAL_AVG_POOL, libjit_global_avg_pool_f32, libjit_global_avg_pool_f32_work},
    {NK_GLOBAL_MAX_POOL, libjit_global_max_pool_f32, libjit_global_max_pool_f32_work},
    {NK_REDUCE_SUM, libjit_reduce_sum_f32, libjit_reduce_sum_f32_work},
    {NK_REDUCE_MEAN, libjit_reduce_mean_f32, libjit_reduce_mean_f32_work},
    {NK_REDUCE_MAX, libjit_reduce_max_f32, libjit_reduce_max_f32_work},
    {NK_REDUCE_MIN, libjit_reduce_min_f32, libjit_reduce_min_f32_work},
    {NK_TRANSPOSE, libjit_transpose_f32, libjit_transpose_f32_work},
    {NK_SLICE, libjit_slice_f32, libjit_slice_f32_work},
    {NK_GATHER, libjit_gather_f32, libjit_gather_f32_work},
    {NK_CAST, libjit_cast_f32, libjit_cast_f32_work},
    LJ_UNARY_KERNELS(FAST_ROW) LJ_BINARY_KERNELS(FAST_ROW)};

static const Fast *find_fast(NodeKind k) {
    for (size_t i = 0; i < sizeof fast / sizeof *fast; i++)
        if (fast[i].kind == k)
            return &fast[i];
    return NULL;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

typedef struct Run {
    const LirInstr *i;
    Desc *d;
    void *ops[CASE_OPS * 32];
    const Fast *f;
    double best;
    double flops;
} Run;

static void *address(const LirBuf *b, char *acts, void **mutables) {
    if (b->kind == LB_VIEW)
        return (char *)address(b->base, acts, mutables) + b->offset * (int64_t)elem_size(b->type.elem);
    if (b->kind == LB_CONST)
        return b->payload->data;
    if (b->kind == LB_ALLOC)
        return acts + b->address;
    if (!mutables[b->id]) {
        size_t n = (size_t)type_numel(&b->type) * elem_size(b->type.elem);
        mutables[b->id] = calloc(1, n ? n : 1);
    }
    return mutables[b->id];
}

/* dst[offsets + i] = src[i] (inserttensor), one innermost row at a time. */
static void insert(const LirInstr *i, void *dst, const void *src) {
    const Attr *a = instr_attr(i, AK_offsets);
    const Type *t = &i->ops[1]->type, *big = &i->ops[0]->type;
    size_t es = elem_size(t->elem);
    int64_t idx[MAX_RANK] = {0}, st[MAX_RANK], s = 1;
    for (int k = big->rank - 1; k >= 0; k--) {
        st[k] = s;
        s *= big->dims[k];
    }
    if (t->rank == 0) {
        memcpy(dst, src, es);
        return;
    }
    int64_t row = t->dims[t->rank - 1], rows = row ? type_numel(t) / row : 0;
    for (int64_t r = 0; r < rows; r++) {
        int64_t off = a->ints.v[t->rank - 1];
        for (int k = 0; k < t->rank - 1; k++)
            off += (idx[k] + a->ints.v[k]) * st[k];
        memcpy((char *)dst + off * (int64_t)es, (const char *)src + r * row * (int64_t)es,
               (size_t)row * es);
        for (int k = t->rank - 2; k >= 0; k--) {
            if (++idx[k] < t->dims[k])
                break;
            idx[k] = 0;
        }
    }
}

static void run_step(const Run *s) {
    const LirInstr *i = s->i;
    if (i->kind == IK_COPY)
        memmove(s->ops[0], s->ops[1], (size_t)type_numel(&i->ops[1]->type) * elem_size(i->ops[1]->type.elem));
    else if (i->kind == IK_INSERT)
        insert(i, s->ops[0], s->ops[1]);
    else if (s->f && i->ops[0]->type.elem == ELEM_F32)
        s->f->fn(s->d->w, s->ops, 0, s->f->work(s->d->w), NULL);
    else
        libjit_generic(s->d->w, (void *const *)s->ops);
}

static double conv_flops(const LirInstr *i) {
    if (NODE_OF_IK(i->kind) == NK_CONV) {
        const Type *y = &i->ops[0]->type, *w = &i->ops[2]->type;
        return 2.0 * (double)type_numel(y) * (double)(type_numel(w) / w->dims[0]);
    }
    if (NODE_OF_IK(i->kind) == NK_FULLY_CONNECTED)
        return 2.0 * (double)type_numel(&i->ops[0]->type) * (double)i->ops[1]->type.dims[1];
    return 0;
}

int main(int argc, char **argv) {
    const char *model = NULL;
    int runs = 20;
    bool each = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--each"))
            each = true;
        else if (!strcmp(argv[i], "--runs") && i + 1 < argc)
            runs = atoi(argv[++i]);
        else
            model = argv[i];
    }
    if (!model) {
        fprintf(stderr, "usage: bench_model MODEL.onnx [--runs N]\n");
        return 2;
    }
    SessionOptions so = {0};
    Session *s = session_open(model, &so);
    if (!s || !s->work || !session_set_pipeline(s, "-O2") || !session_want_lir(s) || !session_run(s)) {
        StrBuf out = {0};
        if (s)
            diag_render(&s->diags, &out);
        fprintf(stderr, "bench_model: cannot compile %s\n%s", model, out.data ? out.data : "");
        return 1;
    }
    LirProgram *p = s->lir;
    char *acts = aligned_alloc(64, (size_t)(p->arena_bytes + 63) / 64 * 64 + 64);
    void **mutables = calloc((size_t)p->next_id + 1, sizeof(void *));
    Run *steps = calloc((size_t)p->ninstrs + 1, sizeof(Run));
    int n = 0;
    for (LirInstr *i = p->first; i; i = i->next) {
        if (i->kind == IK_ALLOC || i->kind == IK_DEALLOC || i->kind == IK_TENSORVIEW)
            continue;
        Run *st = &steps[n++];
        st->i = i;
        st->best = 1e30;
        st->flops = conv_flops(i);
        for (int k = 0; k < i->nops; k++)
            st->ops[k] = address(i->ops[k], acts, mutables);
        if (instr_is_compute(i->kind)) {
            st->d = malloc(sizeof *st->d);
            desc_from_instr(st->d, i);
            st->f = find_fast(NODE_OF_IK(i->kind));
        }
    }
    double total_best = 1e30;
    for (int r = 0; r < runs; r++) {
        double t0 = now();
        for (int k = 0; k < n; k++) {
            double a = now();
            run_step(&steps[k]);
            double t = now() - a;
            steps[k].best = t < steps[k].best ? t : steps[k].best;
        }
        double t = now() - t0;
        total_best = t < total_best ? t : total_best;
    }
    for (int k = 0; each && k < n; k++) {
        const LirInstr *i = steps[k].i;
        char ty[TYPE_STR_MAX];
        type_str(&i->ops[0]->type, ty);
        printf("  %3d %-16s %-22s %8.3f ms", k, instr_kind_name(i->kind), ty, steps[k].best * 1e3);
        if (steps[k].flops > 0)
            printf("  %6.1f GFLOP/s", steps[k].flops / steps[k].best * 1e-9);
        printf("\n");
    }
    /* Per kind: the sum of the instructions' best times. */
    double by_kind[IK_COUNT] = {0}, flops_kind[IK_COUNT] = {0}, sum = 0;
    int count[IK_COUNT] = {0};
    for (int k = 0; k < n; k++) {
        by_kind[steps[k].i->kind] += steps[k].best;
        flops_kind[steps[k].i->kind] += steps[k].flops;
        count[steps[k].i->kind]++;
        sum += steps[k].best;
    }
    printf("%s: %d instructions, best whole run %.2f ms, sum of best instructions %.2f ms\n", model,
           n, total_best * 1e3, sum * 1e3);
    for (int pass = 0; pass < IK_COUNT; pass++) {
        int top = -1;
        for (int k = 0; k < IK_COUNT; k++)
            if (count[k] && (top < 0 || by_kind[k] > by_kind[top]))
                top = k;
        if (top < 0)
            break;
        const Fast *f = instr_is_compute((InstrKind)top) ? find_fast(NODE_OF_IK(top)) : NULL;
        printf("  %-18s %4d  %8.2f ms  %5.1f%%", instr_kind_name((InstrKind)top), count[top],
               by_kind[top] * 1e3, 100 * by_kind[top] / sum);
        if (flops_kind[top] > 0)
            printf("  %6.1f GFLOP/s", flops_kind[top] / by_kind[top] * 1e-9);
        if (instr_is_compute((InstrKind)top) && !f)
            printf("  (interpreter)");
        printf("\n");
        count[top] = 0;
    }
    session_free(s);
    return 0;
}
