/* Per-operator values: collect by name, rename fused values, dump. */
#include "tui/values.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/file.h"
#include "core/npy.h"
#include "core/print.h"


static bool in_set(const Node *const *set, int n, const Node *x) {
    for (int k = 0; k < n; k++)
        if (set[k] == x)
            return true;
    return false;
}

/* u computes from the chain alone (and constants), at the chain's type. */
static bool extends_chain(const Node *u, const Node *const *chain, int n) {
    if (u->nres != 1 || !type_equal(&u->res[0].type, &chain[0]->res[0].type))
        return false;
    bool reads_chain = false;
    for (int k = 0; k < u->nops; k++) {
        const Node *x = u->ops[k]->def;
        if (in_set(chain, n, x))
            reads_chain = true;
        else if (x->kind != NK_CONSTANT)
            return false;
    }
    return reads_chain;
}

enum { FUSE_HOPS = 3 };

/* The import's node whose value a fused node `name` computes: the end of
 * the chain of same-typed nodes after it that read only the chain and
 * constants (relu(x); sigmoid(x) then x * sigmoid(x) for SiLU; clip with
 * constant bounds). A residual add reads another value and ends it. */
static const char *absorbed_name(const Function *f0, const char *name) {
    const Node *chain[FUSE_HOPS + 1];
    int n = 0;
    chain[n++] = graph_last_named(f0, name);
    if (!chain[0] || chain[0]->nres != 1)
        return name;
    for (const Node *u = chain[0]->next; u && n <= FUSE_HOPS; u = u->next)
        if (extends_chain(u, chain, n))
            chain[n++] = u;
    return n > 1 && chain[n - 1]->name[0] ? chain[n - 1]->name : name;
}

static void add_fused(ValueSet *vs, const Function *f0, const char *name) {
    const char *as = absorbed_name(f0, name);
    if (as == name)
        return;
    vs->fused = realloc(vs->fused, (size_t)(vs->nfused + 1) * sizeof *vs->fused);
    vs->fused_as = realloc(vs->fused_as, (size_t)(vs->nfused + 1) * sizeof *vs->fused_as);
    vs->fused[vs->nfused] = name;
    vs->fused_as[vs->nfused++] = as;
}

void values_init(ValueSet *vs, const Session *s) {
    *vs = (ValueSet){.a = arena_new()};
    const Function *f0 = s->nsteps && s->steps[0].graph ? s->steps[0].graph->main : NULL;
    if (!f0)
        return;
    if (s->lir) {
        for (const LirInstr *i = s->lir->first; i; i = i->next)
            if (instr_attr(i, AK_act))
                add_fused(vs, f0, i->name);
    } else if (s->work) {
        for (const Node *n = s->work->main->first; n; n = n->next)
            if (node_has_attr(n, AK_act))
                add_fused(vs, f0, n->name);
    }
}

void values_free(ValueSet *vs) {
    if (vs->a)
        arena_destroy(vs->a);
    free(vs->v);
    free(vs->fused);
    free(vs->fused_as);
}

/* The whole buffer a view lies in, reported right after the view. */
static bool storage_of_last(const ValueSet *vs, const char *name, int result, const Tensor *t) {
    if (!vs->last || vs->last_result != result || strcmp(vs->last_name, name))
        return false;
    const char *lo = t->data, *hi = lo + tensor_bytes(t), *v = vs->last;
    return tensor_bytes(t) > vs->last_bytes && v >= lo && v < hi;
}

void values_observe(void *ctx, const char *name, int result, const Tensor *value) {
    ValueSet *vs = ctx;
    if (!name || !name[0] || !value->data)
        return;
    bool skip = storage_of_last(vs, name, result, value);
    vs->last = value->data;
    vs->last_bytes = tensor_bytes(value);
    vs->last_name = name;
    vs->last_result = result;
    if (skip)
        return;
    for (int k = 0; result == 0 && k < vs->nfused; k++)
        if (!strcmp(vs->fused[k], name))
            name = vs->fused_as[k];
    NamedValue *x = NULL;
    for (int k = 0; k < vs->n && !x; k++)
        if (vs->v[k].result == result && !strcmp(vs->v[k].name, name))
            x = &vs->v[k];
    if (!x) {
        if (vs->n == vs->cap) {
            vs->cap = vs->cap ? 2 * vs->cap : 64;
            vs->v = realloc(vs->v, (size_t)vs->cap * sizeof *vs->v);
        }
        x = &vs->v[vs->n++];
        *x = (NamedValue){arena_strdup(vs->a, name), result, NULL};
    }
    x->value = tensor_clone(vs->a, value);
}

/* ONNX names are free text ('/layer1/conv/Conv', 'a:0'): anything but
 * letters, digits, '.', '-' and '_' becomes '_', a leading '.' too, and a
 * later result gets '.N'; a name that still collides gets '~K'. */
static char *file_name(const NamedValue *v, char **taken, int ntaken) {
    size_t len = strlen(v->name);
    char *base = malloc(len + 32);
    char *q = base;
    for (const char *s = v->name; *s; s++) {
        bool ok = (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
                  (*s >= '0' && *s <= '9') || *s == '-' || *s == '_' || (*s == '.' && q > base);
        *q++ = ok ? *s : '_';
    }
    *q = 0;
    if (len > 200)
        base[200] = 0; /* file systems take 255 bytes */
    if (!base[0])
        strcpy(base, "_");
    if (v->result)
        snprintf(base + strlen(base), 16, ".%d", v->result);
    char *name = malloc(strlen(base) + 40);
    for (int k = 1;; k++) {
        snprintf(name, strlen(base) + 40, k == 1 ? "%s.npy" : "%s~%d.npy", base, k);
        bool clash = !strcmp(name, "values.txt");
        for (int j = 0; j < ntaken && !clash; j++)
            clash = !strcmp(taken[j], name);
        if (!clash)
            break;
    }
    free(base);
    return name;
}

bool values_check_dir(const char *dir, DiagList *d) {
    struct stat st;
    if (!stat(dir, &st) && !S_ISDIR(st.st_mode)) {
        diag_error(d, NULL, "--dump-values: '%s' exists and is not a directory", dir);
        return false;
    }
    return true;
}

static bool make_dir(const char *dir, DiagList *d) {
    struct stat st;
    if (!stat(dir, &st)) {
        if (S_ISDIR(st.st_mode))
            return true;
        diag_error(d, NULL, "--dump-values: '%s' exists and is not a directory", dir);
        return false;
    }
    if (mkdir(dir, 0777)) {
        diag_error(d, NULL, "--dump-values: cannot create directory '%s': %s", dir,
                   strerror(errno));
        return false;
    }
    return true;
}

bool values_dump(const ValueSet *vs, const char *dir, DiagList *d) {
    int n = vs->n;
    char **names = calloc((size_t)n + 1, sizeof *names);
    StrBuf *bufs = calloc((size_t)n + 2, sizeof(StrBuf));
    FileOut *files = calloc((size_t)n + 2, sizeof(FileOut));
    StrBuf *index = &bufs[n];
    sb_init(index);
    bool ok = names && bufs && files;
    for (int k = 0; ok && k < n; k++) {
        const NamedValue *v = &vs->v[k];
        names[k] = file_name(v, names, k);
        sb_init(&bufs[k]);
        if (!npy_write(v->value, &bufs[k])) {
            diag_error(d, NULL, "value '%s': cannot write %s as .npy", v->name,
                       elem_name(v->value->type.elem));
            ok = false;
            break;
        }
        char type[TYPE_STR_MAX];
        sb_printf(index, "%s\t%d\t%s\t%s\n", names[k], v->result, type_str(&v->value->type, type),
                  v->name);
    }
    for (int k = 0; ok && k <= n; k++) {
        size_t len = strlen(dir) + (k < n ? strlen(names[k]) : 10) + 2;
        char *path = malloc(len);
        snprintf(path, len, "%s/%s", dir, k < n ? names[k] : "values.txt");
        files[k] = (FileOut){path, bufs[k].data, bufs[k].len};
    }
    ok = ok && make_dir(dir, d) && file_write_all(files, n + 1, d);
    for (int k = 0; k <= n; k++) {
        if (names && k < n)
            free(names[k]);
        if (bufs)
            sb_free(&bufs[k]);
        if (files)
            free((char *)files[k].path);
    }
    free(names);
    free(bufs);
    free(files);
    return ok;
}
