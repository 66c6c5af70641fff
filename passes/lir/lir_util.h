/* What the LIR passes ask of a program: which memory an operand touches and
 * who touches a buffer where. A region is a range of elements of a storage
 * buffer (an allocation or a weight); views are regions of their base. */
#ifndef GLOWC_PASSES_LIR_UTIL_H
#define GLOWC_PASSES_LIR_UTIL_H

#include "core/lir.h"

typedef struct Region {
    LirBuf *storage;
    int64_t begin, end; /* elements */
} Region;

Region buf_region(LirBuf *b);
bool regions_overlap(Region a, Region b);
/* Does b cover all of its storage? */
bool buf_is_whole(LirBuf *b);
/* Does instruction i read / write / either the data of region r? Defining
 * a view, allocating and deallocating touch no data. */
bool instr_reads(const LirInstr *i, Region r);
bool instr_writes(const LirInstr *i, Region r);
bool instr_touches(const LirInstr *i, Region r);
/* Does i touch r's data or define a view of r's storage (which must then be
 * live)? For live ranges. */
bool instr_mentions(const LirInstr *i, Region r);
/* Is `storage` used by anything after `from` (exclusive) other than its
 * dealloc? */
bool used_after(const LirInstr *from, LirBuf *storage);
LirInstr *find_alloc_instr(LirBuf *storage);

/* A dense index over a program's buffers (their ids may be sparse: the text
 * form keeps its labels), for passes that keep a value per storage buffer
 * instead of rescanning the program per buffer. */
typedef struct BufIndex {
    LirBuf **sorted; /* the buffers by address */
    int n;
} BufIndex;

BufIndex buf_index_new(LirProgram *p); /* in the program's arena */
/* b's position in 0..n-1, or -1 if it is not one of the program's buffers. */
int buf_index_of(const BufIndex *x, const LirBuf *b);

#endif
