/* Import of signal-processing operators. The window functions depend only
 * on their (constant) size, so they fold to constants. */
#include <math.h>

#include "core/onnx/import.h"

typedef enum { WIN_HANN, WIN_HAMMING, WIN_BLACKMAN } WindowKind;

/* The generalized cosine windows of the ONNX spec, with phase 2*pi*n/N:
 * N is the size when periodic, the size minus one when symmetric. */
static double window_at(WindowKind k, int64_t n, int64_t size, bool periodic) {
    double denom = (double)(periodic ? size : size - 1);
    double x = denom > 0 ? 2 * M_PI * (double)n / denom : 0;
    switch (k) {
    case WIN_HANN: return 0.5 - 0.5 * cos(x);
    case WIN_HAMMING: return 25.0 / 46.0 - (21.0 / 46.0) * cos(x);
    case WIN_BLACKMAN: return 0.42 - 0.5 * cos(x) + 0.08 * cos(2 * x);
    }
    return 0;
}

static bool window_fn(OnnxNode *on, WindowKind k) {
    if (!on_need_inputs(on, 1, 1))
        return false;
    Tensor *t = on_const_input(on, 0, "size");
    if (!t)
        return false;
    int64_t size = tensor_numel(t) == 1 ? tensor_get_i64(t, 0) : -1;
    ElemKind kind;
    int dtype = (int)on_attr_int(on, "output_datatype", 1);
    if (!elem_from_onnx(dtype, &kind)) {
        on_unsupported(on, "output_datatype %s is not supported", onnx_type_name(dtype));
        return false;
    }
    if (size < 0 || size > (1 << 26)) {
        on_error(on, "size must be a scalar in [0, 2^26]");
        return false;
    }
    Type ty = type_make(kind, 1, (int64_t[]){size});
    Tensor *y = on_tensor(on, &ty);
    bool periodic = on_attr_int(on, "periodic", 1) != 0;
    for (int64_t n = 0; n < size; n++)
        tensor_set_f64(y, n, window_at(k, n, size, periodic));
    on_bind(on, 0, on_const(on, y));
    return true;
}

bool import_hann_window(OnnxNode *on) {
    return window_fn(on, WIN_HANN);
}

bool import_hamming_window(OnnxNode *on) {
    return window_fn(on, WIN_HAMMING);
}

bool import_blackman_window(OnnxNode *on) {
    return window_fn(on, WIN_BLACKMAN);
}
