/* Printer for the high-level text IR (grammar in print.h, reader in parse.c). */
#include "core/print.h"

#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool print_needs_quotes(const char *s) {
    if (!s[0] || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
        return true;
    for (const char *p = s; *p; p++)
        if (!(isalnum((unsigned char)*p) || *p == '_' || *p == '.'))
            return true;
    return false;
}

void print_name(const char *s, StrBuf *out) {
    if (print_needs_quotes(s))
        sb_quote(out, s);
    else
        sb_append(out, s);
}


static void print_node_label(const Node *n, StrBuf *out) {
    sb_putc(out, '%');
    if (n->label)
        print_name(n->label, out);
    else
        sb_printf(out, "%d", n->id);
}

void print_value_ref(const Value *v, StrBuf *out) {
    print_node_label(v->def, out);
    if (v->def->nres > 1)
        sb_printf(out, "#%d", v->index);
}

void print_type(const Type *t, StrBuf *out) {
    char buf[TYPE_STR_MAX];
    sb_append(out, type_str(t, buf));
}

static bool print_special(double v, StrBuf *out) {
    if (isnan(v)) {
        sb_append(out, signbit(v) ? "-nan" : "nan");
        return true;
    }
    if (isinf(v)) {
        sb_append(out, v < 0 ? "-inf" : "inf");
        return true;
    }
    return false;
}

/* Integers print without exponent or point; other values get the fewest
 * significant digits that read back to the same bits. */
/* Whole numbers of moderate size print as integers ("10", not "1e+01"). */
static bool print_integral(double v, StrBuf *out) {
    if (v != floor(v) || fabs(v) >= 1e15 || (v == 0 && signbit(v)))
        return false;
    sb_printf(out, "%.0f", v);
    return true;
}

void print_f32(float v, StrBuf *out) {
    if (print_special(v, out) || print_integral(v, out))
        return;
    char buf[64];
    for (int p = 1; p <= 9; p++) {
        snprintf(buf, sizeof buf, "%.*g", p, (double)v);
        if (strtof(buf, NULL) == v)
            break;
    }
    sb_append(out, buf);
}

void print_f64(double v, StrBuf *out) {
    if (print_special(v, out) || print_integral(v, out))
        return;
    char buf[64];
    for (int p = 1; p <= 17; p++) {
        snprintf(buf, sizeof buf, "%.*g", p, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    sb_append(out, buf);
}

void print_elem(const Tensor *t, int64_t i, StrBuf *out) {
    ElemKind k = t->type.elem;
    switch (elem_class(k)) {
    case ECLS_FLOAT:
        if (k == ELEM_F64)
            print_f64(((const double *)t->data)[i], out);
        else
            print_f32((float)tensor_get_f64(t, i), out);
        return;
    case ECLS_SINT: sb_printf(out, "%" PRId64, tensor_get_i64(t, i)); return;
    case ECLS_UINT:
        if (k == ELEM_U64)
            sb_printf(out, "%" PRIu64, ((const uint64_t *)t->data)[i]);
        else
            sb_printf(out, "%" PRId64, tensor_get_i64(t, i));
        return;
    case ECLS_BOOL: sb_append(out, tensor_get_i64(t, i) ? "true" : "false"); return;
    case ECLS_STR: sb_quote(out, tensor_get_str(t, i)); return;
    }
}

void print_tensor_data(const Tensor *t, const PrintOptions *opt, StrBuf *out) {
    if (!t || !t->data) {
        sb_printf(out, "opaque<\"%016" PRIx64 "\">", t ? t->elided_hash : 0);
        return;
    }
    int64_t numel = tensor_numel(t);
    if (numel > 1 && tensor_is_splat(t)) {
        sb_append(out, "splat<");
        print_elem(t, 0, out);
        sb_putc(out, '>');
    } else if (numel <= opt->dense_limit) {
        sb_append(out, "dense<[");
        for (int64_t i = 0; i < numel; i++) {
            if (i)
                sb_append(out, ", ");
            print_elem(t, i, out);
        }
        sb_append(out, "]>");
    } else {
        sb_printf(out, "opaque<\"%016" PRIx64 "\">", tensor_hash(t));
    }
}

static void print_attr_value(const Attr *a, StrBuf *out) {
    switch (attr_key_type(a->key)) {
    case AT_INT: sb_printf(out, "%" PRId64, a->i); break;
    case AT_FLOAT: print_f32(a->f, out); break;
    case AT_STR: sb_quote(out, a->s); break;
    case AT_ELEM: sb_append(out, elem_name(a->elem)); break;
    case AT_ENUM: sb_append(out, enum_name(attr_key_set(a->key), (int)a->i)); break;
    case AT_INTS:
        sb_putc(out, '[');
        for (int i = 0; i < a->ints.n; i++)
            sb_printf(out, i ? ",%" PRId64 : "%" PRId64, a->ints.v[i]);
        sb_putc(out, ']');
        break;
    case AT_FLOATS:
        sb_putc(out, '[');
        for (int i = 0; i < a->floats.n; i++) {
            if (i)
                sb_putc(out, ',');
            print_f32(a->floats.v[i], out);
        }
        sb_putc(out, ']');
        break;
    }
}

/* Attributes in the table's order, so the text does not depend on the order
 * in which an importer or a pass happened to set them. */
void print_attr_list(const Attr *attrs, int nattrs, const AttrKey *order, StrBuf *out) {
    if (!nattrs)
        return;
    sb_append(out, " {");
    bool first = true;
    for (const AttrKey *k = order; *k != AK_NONE; k++) {
        const Attr *a = NULL;
        for (int i = 0; i < nattrs && !a; i++)
            if (attrs[i].key == *k)
                a = &attrs[i];
        if (!a)
            continue;
        if (!first)
            sb_putc(out, ' ');
        first = false;
        sb_printf(out, "%s=", attr_key_name(*k));
        print_attr_value(a, out);
    }
    sb_putc(out, '}');
}

static void print_node_loc(const Node *n, const PrintOptions *opt, StrBuf *out) {
    if (opt->no_loc || !n->name || !n->name[0])
        return;
    if (n->label && !strcmp(n->label, n->name))
        return;
    sb_append(out, " loc(");
    sb_quote(out, n->name);
    sb_putc(out, ')');
}

void print_node(const Node *n, const PrintOptions *opt, StrBuf *out) {
    print_node_label(n, out);
    if (n->nres != 1)
        sb_printf(out, ":%d", n->nres);
    sb_printf(out, " = %s", node_kind_name(n->kind));
    if (n->kind == NK_CONSTANT) {
        sb_putc(out, ' ');
        print_type(&n->res[0].type, out);
        sb_putc(out, ' ');
        print_tensor_data(n->payload, opt, out);
        print_node_loc(n, opt, out);
        return;
    }
    sb_putc(out, '(');
    for (int i = 0; i < n->nops; i++) {
        if (i)
            sb_append(out, ", ");
        print_value_ref(n->ops[i], out);
    }
    sb_putc(out, ')');
    print_attr_list(n->attrs, n->nattrs, node_kind_attrs(n->kind), out);
    sb_append(out, " : ");
    if (n->nres != 1)
        sb_putc(out, '(');
    for (int i = 0; i < n->nres; i++) {
        if (i)
            sb_append(out, ", ");
        print_type(&n->res[i].type, out);
    }
    if (n->nres != 1)
        sb_putc(out, ')');
    print_node_loc(n, opt, out);
}

static void print_indent(int indent, StrBuf *out) {
    for (int i = 0; i < indent; i++)
        sb_putc(out, ' ');
}

static void print_function_at(const Function *f, const PrintOptions *opt, int indent,
                              StrBuf *out);

/* A line of the function at `indent`; a region's bodies follow its line as
 * nested functions, so that a body reads like any function:
 *   %3 = if(%c, %x) : f32<2> {
 *     func @then(%0: f32<2>) -> (r: f32<2>) { ... }
 *     func @else(...) -> (...) { ... }
 *   } */
static void print_line(const Node *n, const PrintOptions *opt, int indent, StrBuf *out) {
    print_indent(indent, out);
    print_node(n, opt, out);
    if (!n->nbodies) {
        sb_putc(out, '\n');
        return;
    }
    sb_append(out, " {\n");
    for (int i = 0; i < n->nbodies; i++)
        if (n->bodies[i])
            print_function_at(n->bodies[i], opt, indent + 2, out);
    print_indent(indent, out);
    sb_append(out, "}\n");
}

static void print_function_at(const Function *f, const PrintOptions *opt, int indent,
                              StrBuf *out) {
    print_indent(indent, out);
    sb_printf(out, "func @%s(", f->name);
    for (int i = 0; i < f->nparams; i++) {
        if (i)
            sb_append(out, ", ");
        print_node_label(f->params[i], out);
        sb_append(out, ": ");
        print_type(&f->params[i]->res[0].type, out);
    }
    sb_append(out, ") -> (");
    for (int i = 0; i < f->noutputs; i++) {
        if (i)
            sb_append(out, ", ");
        print_name(f->output_names[i], out);
        sb_append(out, ": ");
        print_type(&f->outputs[i]->type, out);
    }
    sb_append(out, ") {\n");
    for (int i = 0; i < f->nconsts; i++)
        print_line(f->consts[i], opt, indent + 2, out);
    for (const Node *n = f->first; n; n = n->next)
        print_line(n, opt, indent + 2, out);
    print_indent(indent + 2, out);
    sb_append(out, "return");
    for (int i = 0; i < f->noutputs; i++) {
        sb_append(out, i ? ", " : " ");
        print_value_ref(f->outputs[i], out);
    }
    sb_putc(out, '\n');
    print_indent(indent, out);
    sb_append(out, "}\n");
}

void print_function(const Function *f, const PrintOptions *opt, StrBuf *out) {
    PrintOptions dflt = PRINT_DEFAULTS;
    print_function_at(f, opt ? opt : &dflt, 0, out);
}

void print_module(const Module *m, const PrintOptions *opt, StrBuf *out) {
    if (m->main)
        print_function(m->main, opt, out);
}
