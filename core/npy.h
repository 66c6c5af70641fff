/* NumPy .npy files (format 1.0-3.0): little-endian, C order, the element
 * kinds glowc knows (numpy has no bfloat16). */
#ifndef GLOWC_CORE_NPY_H
#define GLOWC_CORE_NPY_H

#include "core/diag.h"
#include "core/strbuf.h"
#include "core/tensor.h"

/* Parses an .npy image; the tensor is allocated in `a`. NULL with a
 * diagnostic naming `path` when the header is malformed or the data size
 * does not match it. */
Tensor *npy_read(const void *data, size_t len, const char *path, Arena *a, DiagList *d);
/* Serialises t (format 1.0, header padded to 64 bytes). */
bool npy_write(const Tensor *t, StrBuf *out);

#endif
