/* The kernel harness (harness.h). */
#include "tests/kernels/harness.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/libjit/libjit.h"
#include "core/lir.h"

void desc_begin(Desc *d, NodeKind kind, int nres) {
    memset(d, 0, sizeof *d);
    d->w[DESC_KIND] = kind;
    d->w[DESC_NRES] = nres;
    d->nwords = DESC_OPS;
}

void desc_operand_elem(Desc *d, ElemKind e, int rank, const int64_t *dims) {
    int64_t *w = d->w + d->nwords;
    w[0] = e;
    w[1] = rank;
    for (int i = 0; i < DESC_MAX_RANK; i++)
        w[2 + i] = i < rank ? dims[i] : 1;
    for (int i = 0; i < 4; i++)
        w[DESC_OP_QUANT + i] = 0; /* not quantized (desc_operand_quant sets it) */
    d->w[DESC_NOPS]++;
    d->nwords += DESC_OP_WORDS;
}

void desc_operand_type(Desc *d, const Type *t) {
    int64_t *w = d->w + d->nwords;
    desc_operand_elem(d, t->elem, t->rank, t->dims);
    w[DESC_OP_QUANT] = t->quant;
    double scale = t->scale;
    memcpy(&w[DESC_OP_QUANT + 1], &scale, sizeof scale);
    w[DESC_OP_QUANT + 2] = t->offset;
    w[DESC_OP_QUANT + 3] = t->qaxis;
}

void desc_operand(Desc *d, int rank, const int64_t *dims) {
    desc_operand_elem(d, ELEM_F32, rank, dims);
}

static int64_t *new_attr(Desc *d, AttrKey k) {
    int64_t *r = d->w + d->nwords;
    memset(r, 0, DESC_ATTR_WORDS * sizeof *r);
    r[0] = k;
    r[1] = 1;
    d->w[DESC_NATTRS]++;
    d->nwords += DESC_ATTR_WORDS;
    return r;
}

static int64_t f64_bits(double x) {
    int64_t b;
    memcpy(&b, &x, sizeof b);
    return b;
}

void desc_int(Desc *d, AttrKey k, int64_t v) {
    new_attr(d, k)[2] = v;
}

void desc_ints(Desc *d, AttrKey k, int n, const int64_t *v) {
    int64_t *r = new_attr(d, k);
    r[1] = n;
    memcpy(r + 2, v, (size_t)n * sizeof *v);
}

/* Float attributes are f32 in the node, double bits in the descriptor. */
void desc_float(Desc *d, AttrKey k, float v) {
    new_attr(d, k)[2] = f64_bits(v);
}

void desc_floats(Desc *d, AttrKey k, int n, const float *v) {
    int64_t *r = new_attr(d, k);
    r[1] = n;
    for (int i = 0; i < n; i++)
        r[2 + i] = f64_bits(v[i]);
}

void desc_str(Desc *d, AttrKey k, const char *s) {
    int64_t *r = new_attr(d, k);
    size_t len = strlen(s);
    memcpy(r + 2, s, len);
    r[1] = (int64_t)(len + 8) / 8;
}

/* A fused activation by name (core/acts.def). */
void desc_act(Desc *d, const char *name) {
    desc_int(d, AK_act, act_by_name(name, strlen(name)));
}

void desc_from_instr(Desc *d, const LirInstr *i) {
    int nres = 0;
    while (nres < i->nops && i->roles[nres] != ROLE_IN)
        nres++;
    desc_begin(d, NODE_OF_IK(i->kind), nres);
    for (int k = 0; k < i->nops; k++)
        desc_operand_type(d, &i->ops[k]->type);
    for (int k = 0; k < i->nattrs; k++) {
        const Attr *a = &i->attrs[k];
        switch (attr_key_type(a->key)) {
        case AT_INT: desc_int(d, a->key, a->i); break;
        case AT_FLOAT: desc_float(d, a->key, a->f); break;
        case AT_ELEM: desc_int(d, a->key, a->elem); break;
        case AT_ENUM: desc_int(d, a->key, a->i); break;
        case AT_STR: desc_str(d, a->key, a->s); break;
        case AT_INTS: desc_ints(d, a->key, a->ints.n, a->ints.v); break;
        case AT_FLOATS: {
            int64_t *r = new_attr(d, a->key);
            r[1] = a->floats.n;
            for (int j = 0; j < a->floats.n && j < DESC_ATTR_VALUES; j++)
                r[2 + j] = f64_bits(a->floats.v[j]);
            break;
        }
        }
    }
}

int64_t desc_numel(const Desc *d, int op) {
    return lj_numel(d->w, op);
}

uint64_t rng_next(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

void run_kernel(const Desc *d, KernelFn fn, WorkFn work, void *const *ops) {
    if (!work) {
        fn(d->w, ops, 0, 1, NULL);
        return;
    }
    int64_t n = work(d->w);
    /* Units in the order 0, n-1, 1, n-2, ...: disjoint ranges, out of order;
     * the even ones with a runtime's scratch, kept (and so reused, stale)
     * from unit to unit, the odd ones with scratch allocated per call. */
    LjScratch sc = {0};
    for (int64_t i = 0; i < n; i++) {
        int64_t u = i % 2 ? n - 1 - i / 2 : i / 2;
        fn(d->w, ops, u, u + 1, i % 2 ? NULL : &sc);
    }
    lj_scratch_release(&sc);
}

/* Exact sizes (at least 1 byte), so that AddressSanitizer sees a kernel
 * read or write one element past an operand; malloc's alignment only,
 * since views make operands of generated code unaligned too. */
static size_t op_bytes(const Case *c, int k) {
    size_t n = (size_t)desc_numel(&c->d, k) * elem_size((ElemKind)lj_elem(c->d.w, k));
    return n ? n : 1;
}

void case_alloc(Case *c, uint64_t seed) {
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    int nres = lj_nres(c->d.w);
    for (int k = 0; k < lj_nops(c->d.w); k++) {
        size_t bytes = op_bytes(c, k);
        c->fast[k] = malloc(bytes);
        c->ref[k] = malloc(bytes);
        c->mag[k] = malloc(bytes);
        memset(c->fast[k], 0, bytes);
        int64_t n = desc_numel(&c->d, k);
        ElemKind e = (ElemKind)lj_elem(c->d.w, k);
        for (int64_t i = 0; i < n; i++) {
            int64_t r = (int64_t)(rng_next(&s) >> 40) - (1 << 23); /* [-2^23, 2^23) */
            switch (e) {
            case ELEM_F32: ((float *)c->fast[k])[i] = k < nres ? NAN : (float)r / (1 << 23); break;
            case ELEM_F64: ((double *)c->fast[k])[i] = (double)r / (1 << 23); break;
            case ELEM_I64: ((int64_t *)c->fast[k])[i] = r % 1000; break;
            case ELEM_I32: ((int32_t *)c->fast[k])[i] = (int32_t)(r % 1000); break;
            default: break;
            }
        }
        memcpy(c->ref[k], c->fast[k], bytes);
    }
}

void case_alias(Case *c, int out, int in) {
    free(c->fast[out]);
    c->fast[out] = c->fast[in];
    c->alias[out] = in + 1;
}

void case_free(Case *c) {
    for (int k = 0; k < lj_nops(c->d.w); k++) {
        if (!c->alias[k])
            free(c->fast[k]);
        free(c->ref[k]);
        free(c->mag[k]);
    }
}

float *case_f32(Case *c, int op) {
    return c->fast[op];
}

bool case_reference(Case *c, bool magnitudes) {
    /* Inputs the test edited in fast[] are copied to the reference. */
    for (int k = lj_nres(c->d.w); k < lj_nops(c->d.w); k++) {
        memcpy(c->ref[k], c->fast[k], op_bytes(c, k));
        if (lj_elem(c->d.w, k) == ELEM_F32) {
            float *m = c->mag[k];
            const float *f = c->fast[k];
            for (int64_t i = 0; i < desc_numel(&c->d, k); i++)
                m[i] = fabsf(f[i]);
        } else {
            memcpy(c->mag[k], c->fast[k], op_bytes(c, k));
        }
    }
    if (libjit_generic(c->d.w, c->ref))
        return false;
    return !magnitudes || !libjit_generic(c->dmag.nwords ? c->dmag.w : c->d.w, c->mag);
}

static double ulp_f32(double x) {
    x = fabs(x);
    if (!isfinite(x))
        return 0;
    if (x < 1.1754943508222875e-38)
        return 1.401298464324817e-45;
    return ldexp(1.0, ilogb(x) - 23);
}

double case_check(Case *c, int op, Tol tol, const char *what) {
    const float *f = c->fast[op], *r = c->ref[op], *m = c->mag[op];
    double worst = 0;
    int64_t at = -1;
    for (int64_t i = 0; i < desc_numel(&c->d, op); i++) {
        double diff;
        if (isnan(r[i]) || isnan(f[i]))
            diff = isnan(r[i]) && isnan(f[i]) ? 0 : INFINITY;
        else if (isinf(r[i]) || isinf(f[i]))
            diff = f[i] == r[i] ? 0 : INFINITY;
        else
            diff = fabs((double)f[i] - r[i]);
        double bound = tol.rel_mag * (tol.rel_mag ? fabs(m[i]) : 0) + tol.ulps * ulp_f32(r[i]) + tol.abs;
        double ratio = diff == 0 ? 0 : bound > 0 ? diff / bound : INFINITY;
        if (ratio > worst) {
            worst = ratio;
            at = i;
        }
    }
    if (worst > 1)
        fprintf(stderr, "FAIL %s: output %d element %lld: fast %.9g reference %.9g (%.3g x the bound)\n",
                what, op, (long long)at, f[at], r[at], worst);
    return worst;
}

double gamma_f32(int64_t n) {
    double u = ldexp(1.0, -24);
    return (double)n * u / (1 - (double)n * u);
}
