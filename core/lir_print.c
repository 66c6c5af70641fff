/* Printer for the low-level text IR. */
#include "core/lir_print.h"

#include <string.h>

static const char *const role_names[] = {"@in", "@out", "@inout"};

void lir_print_buf_ref(const LirBuf *b, StrBuf *out) {
    sb_putc(out, '%');
    if (b->label)
        print_name(b->label, out);
    else
        sb_printf(out, "%d", b->id);
}

static void print_loc(const char *name, const char *label, const PrintOptions *opt,
                      StrBuf *out) {
    if (opt->no_loc || !name || !name[0] || (label && !strcmp(label, name)))
        return;
    sb_append(out, " loc(");
    sb_quote(out, name);
    sb_putc(out, ')');
}

void lir_print_weight(const LirBuf *b, const PrintOptions *opt, StrBuf *out) {
    sb_append(out, "  ");
    lir_print_buf_ref(b, out);
    sb_append(out, " = weight ");
    sb_append(out, b->kind == LB_CONST ? "const " : b->kind == LB_IN ? "mutable in " : "mutable out ");
    print_type(&b->type, out);
    if (b->kind == LB_CONST) {
        sb_putc(out, ' ');
        print_tensor_data(b->payload, opt, out);
    }
    print_loc(b->name, b->label, opt, out);
    sb_putc(out, '\n');
}

/* Memory instructions carry only their own keys. */
static const AttrKey view_attrs[] = {AK_offset, AK_NONE};
static const AttrKey insert_attrs[] = {AK_offsets, AK_NONE};
static const AttrKey no_attrs[] = {AK_NONE};

static const AttrKey *attr_order(InstrKind k) {
    if (instr_is_compute(k))
        return node_kind_attrs(NODE_OF_IK(k));
    return k == IK_TENSORVIEW ? view_attrs : k == IK_INSERT ? insert_attrs : no_attrs;
}

void lir_print_instr(const LirInstr *i, const PrintOptions *opt, StrBuf *out) {
    if (i->result) {
        lir_print_buf_ref(i->result, out);
        sb_append(out, " = ");
    }
    sb_append(out, instr_kind_name(i->kind));
    if (i->kind == IK_ALLOC) {
        sb_putc(out, ' ');
        print_type(&i->result->type, out);
        /* Once allocated, the buffer's byte offset in the activation arena:
         * what allocate decided, visible to FileCheck and to a diff. */
        if (i->prog && i->prog->allocated)
            sb_printf(out, " @%lld", (long long)i->result->address);
    }
    for (int k = 0; k < i->nops; k++) {
        sb_append(out, k ? ", " : " ");
        sb_append(out, role_names[i->roles[k]]);
        sb_putc(out, ' ');
        lir_print_buf_ref(i->ops[k], out);
    }
    print_attr_list(i->attrs, i->nattrs, attr_order(i->kind), out);
    if (i->kind == IK_TENSORVIEW) {
        sb_append(out, " : ");
        print_type(&i->result->type, out);
    }
    print_loc(i->name, i->result ? i->result->label : NULL, opt, out);
}

void lir_print(const LirProgram *p, const PrintOptions *opt, StrBuf *out) {
    PrintOptions dflt = PRINT_DEFAULTS;
    if (!opt)
        opt = &dflt;
    sb_append(out, "declare {\n");
    for (int b = 0; b < p->nbufs; b++) {
        const LirBuf *w = p->bufs[b];
        if (!w->dead && (w->kind == LB_CONST || w->kind == LB_IN || w->kind == LB_OUT))
            lir_print_weight(w, opt, out);
    }
    sb_append(out, "}\nprogram {\n");
    for (const LirInstr *i = p->first; i; i = i->next) {
        sb_append(out, "  ");
        lir_print_instr(i, opt, out);
        sb_putc(out, '\n');
    }
    sb_append(out, "}\n");
}
