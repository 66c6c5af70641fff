/* The low-level IR as text (grammar in lir.h), and back (lir_parse.c). */
#ifndef GLOWC_CORE_LIR_PRINT_H
#define GLOWC_CORE_LIR_PRINT_H

#include "core/diag.h"
#include "core/lir.h"
#include "core/print.h"

void lir_print(const LirProgram *p, const PrintOptions *opt, StrBuf *out);
void lir_print_instr(const LirInstr *i, const PrintOptions *opt, StrBuf *out);
void lir_print_buf_ref(const LirBuf *b, StrBuf *out);
/* A weight's declaration line, as in the declare block (indented, with newline). */
void lir_print_weight(const LirBuf *b, const PrintOptions *opt, StrBuf *out);
/* Parses and verifies a .lir text; NULL after one diagnostic on error. */
LirProgram *lir_parse(const char *text, size_t len, const char *filename, DiagList *d);
/* Same, with constant weights limited to max_memory bytes in all (0: none). */
LirProgram *lir_parse_limited(const char *text, size_t len, const char *filename,
                              uint64_t max_memory, DiagList *d);

#endif
