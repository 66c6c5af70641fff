/* ONNX export of trained weights: unpack the source model with protobuf-c,
 * swap the named initializers' data for raw little-endian bytes, pack. */
#include "core/onnx/export.h"

#include <stdlib.h>
#include <string.h>

#include "core/file.h"
#include "core/onnx/import.h"

Onnx__ModelProto *onnx_model_read(const char *src, DiagList *d) {
    size_t len;
    uint8_t *buf = (uint8_t *)file_read_all(src, &len, d);
    if (!buf)
        return NULL;
    bool shallow = pb_depth_ok(&onnx__model_proto__descriptor, buf, len, 0);
    Onnx__ModelProto *mp = shallow ? onnx__model_proto__unpack(NULL, len, buf) : NULL;
    free(buf); /* unpack copies what it keeps */
    if (!mp || !mp->graph) {
        diag_error(d, src, "not a valid ONNX model (%s)",
                   !shallow ? "messages nested more than 64 deep"
                   : mp     ? "it has no graph"
                            : "truncated or corrupted protobuf");
        if (mp)
            onnx__model_proto__free_unpacked(mp, NULL);
        return NULL;
    }
    return mp;
}

bool onnx_model_write(const Onnx__ModelProto *mp, const char *dst, DiagList *d) {
    size_t size = onnx__model_proto__get_packed_size(mp);
    uint8_t *out = malloc(size ? size : 1);
    if (!out) {
        diag_error(d, dst, "out of memory packing the model (%zu bytes)", size);
        return false;
    }
    onnx__model_proto__pack(mp, out);
    FileOut f = {dst, out, size};
    bool ok = file_write_all(&f, 1, d);
    free(out);
    return ok;
}

static bool same_shape(const Onnx__TensorProto *tp, const Tensor *t) {
    if ((int)tp->n_dims != t->type.rank)
        return false;
    for (int i = 0; i < t->type.rank; i++)
        if (tp->dims[i] != t->type.dims[i])
            return false;
    return tp->data_type == elem_to_onnx(t->type.elem);
}

/* The tensor's data now lives in raw_data only (the typed fields and any
 * external location cleared): the new bytes point into `values`. */
static void replace_data(Onnx__TensorProto *tp, const Tensor *t) {
    tp->n_float_data = tp->n_double_data = tp->n_int32_data = tp->n_int64_data = 0;
    tp->n_uint64_data = 0;
    tp->n_external_data = 0;
    tp->has_data_location = false;
    tp->has_raw_data = true;
    tp->raw_data.data = t->data;
    tp->raw_data.len = tensor_bytes(t);
}

bool onnx_write_with_weights(const char *src, const char *dst, int n, const char *const *names,
                             const Tensor *const *values, DiagList *d) {
    Onnx__ModelProto *mp = onnx_model_read(src, d);
    if (!mp)
        return false;
    /* Restore each proto's own pointers before freeing: protobuf-c frees
     * what unpack allocated, and the replaced bytes are the caller's. */
    Onnx__GraphProto *g = mp->graph;
    bool *touched = calloc(g->n_initializer + 1, sizeof *touched);
    Onnx__TensorProto *saved_tp = calloc(g->n_initializer + 1, sizeof *saved_tp);
    bool ok = true;
    for (int i = 0; i < n; i++) {
        size_t k = 0;
        while (k < g->n_initializer && strcmp(g->initializer[k]->name, names[i]))
            k++;
        if (k == g->n_initializer) {
            diag_error(d, NULL, "%s: the model has no initializer '%s' to write the trained "
                       "weight to", src, names[i]);
            ok = false;
            continue;
        }
        if (!same_shape(g->initializer[k], values[i])) {
            diag_error(d, NULL, "%s: initializer '%s' has another type than the trained weight",
                       src, names[i]);
            ok = false;
            continue;
        }
        if (!touched[k])
            saved_tp[k] = *g->initializer[k];
        touched[k] = true;
        replace_data(g->initializer[k], values[i]);
    }
    if (ok)
        ok = onnx_model_write(mp, dst, d);
    for (size_t k = 0; k < g->n_initializer; k++)
        if (touched[k])
            *g->initializer[k] = saved_tp[k];
    onnx__model_proto__free_unpacked(mp, NULL);
    free(touched);
    free(saved_tp);
    return ok;
}
