/* Views of a static memory plan: a table, JSON for tools, an SVG chart
 * (instruction index across, address up, one labelled rectangle per
 * buffer) and a text chart for terminals. */
#ifndef GLOWC_DOT_MEMMAP_H
#define GLOWC_DOT_MEMMAP_H

#include "core/lir.h"
#include "core/strbuf.h"

typedef struct MemRow {
    char label[64];     /* the buffer as the LIR prints it: %12 */
    const char *origin; /* the node it came from */
    const char *type;   /* "f32<1x64x56x56>" */
    int64_t offset, size;
    int first, last;
} MemRow;

typedef struct MemPlan {
    MemRow *rows; /* by offset, then first use */
    int n;
    int ninstrs;
    int64_t arena, lower_bound, naive;
    int64_t const_bytes, mutable_bytes;
} MemPlan;

/* The plan of an allocated program (rows malloc'd; memplan_free). */
bool memplan_from_lir(LirProgram *p, MemPlan *out);
void memplan_free(MemPlan *m);

void memplan_table(const MemPlan *m, StrBuf *out);
/* The same with a first column: the mark the text chart draws the row with,
 * one character up to 62 buffers, then two (three past 3844), unique. */
void memplan_table_marked(const MemPlan *m, StrBuf *out);
void memplan_json(const MemPlan *m, StrBuf *out);
void memplan_svg(const MemPlan *m, const char *title, StrBuf *out);
/* A character chart `width` wide (an address axis included) and `height`
 * rows high, address up, instruction across, with the instruction index
 * marked below. */
void memplan_text_chart(const MemPlan *m, int width, int height, StrBuf *out);

#endif
