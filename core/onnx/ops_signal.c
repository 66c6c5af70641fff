/* Import of signal-processing operators. The window functions and the mel
 * filter bank depend only on their (constant) sizes and frequencies, so
 * they fold to constants. */
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

/* ---- mel filter bank -------------------------------------------------------- */

typedef struct MelParams {
    int64_t bins, dft_length, sample_rate;
    double lower_hz, upper_hz;
} MelParams;

static bool mel_params(OnnxNode *on, MelParams *p) {
    static const char *const what[5] = {"num_mel_bins", "dft_length", "sample_rate",
                                        "lower_edge_hertz", "upper_edge_hertz"};
    double v[5];
    for (int i = 0; i < 5; i++) {
        Tensor *t = on_const_input(on, i, what[i]);
        if (!t)
            return false;
        if (tensor_numel(t) != 1) {
            on_error(on, "input %d (%s) must hold one value", i, what[i]);
            return false;
        }
        v[i] = tensor_get_f64(t, 0);
    }
    *p = (MelParams){(int64_t)v[0], (int64_t)v[1], (int64_t)v[2], v[3], v[4]};
    if (p->bins < 1 || p->bins > 4096 || p->dft_length < 1 || p->dft_length > (1 << 20) ||
        p->sample_rate < 1) {
        on_error(on, "num_mel_bins, dft_length and sample_rate must be positive (and sane)");
        return false;
    }
    return true;
}

static double hz_to_mel(double hz) {
    return 2595 * log10(1 + hz / 700);
}

static double mel_to_hz(double mel) {
    return 700 * (pow(10, mel / 2595) - 1);
}

/* The ONNX reference's triangular filters: num_mel_bins + 2 points evenly
 * spaced in mel (over num_mel_bins + 2 steps, as the reference divides),
 * each mapped to the DFT bin floor((dft_length + 1) * hz / sample_rate);
 * filter i rises from point i to i + 1 and falls to i + 2. */
bool import_mel_weight_matrix(OnnxNode *on) {
    MelParams p;
    if (!on_need_inputs(on, 5, 5) || !mel_params(on, &p))
        return false;
    ElemKind kind;
    int dtype = (int)on_attr_int(on, "output_datatype", 1);
    if (!elem_from_onnx(dtype, &kind)) {
        on_unsupported(on, "output_datatype %s is not supported", onnx_type_name(dtype));
        return false;
    }
    int64_t spec_bins = p.dft_length / 2 + 1, pts[4096 + 2];
    double lo = hz_to_mel(p.lower_hz), step = (hz_to_mel(p.upper_hz) - lo) / (double)(p.bins + 2);
    for (int64_t i = 0; i < p.bins + 2; i++) {
        double hz = mel_to_hz((double)i * step + lo);
        pts[i] = (int64_t)floor((double)(p.dft_length + 1) * hz / (double)p.sample_rate);
        if (pts[i] < 0 || pts[i] >= spec_bins) {
            on_error(on, "the mel range falls outside the %lld DFT bins", (long long)spec_bins);
            return false;
        }
    }
    Type t = type_make(kind, 2, (int64_t[]){spec_bins, p.bins});
    Tensor *y = on_tensor(on, &t);
    for (int64_t i = 0; i < p.bins; i++) {
        int64_t l = pts[i], c = pts[i + 1], h = pts[i + 2];
        for (int64_t j = l; j <= c; j++)
            tensor_set_f64(y, j * p.bins + i, c == l ? 1 : (double)(j - l) / (double)(c - l));
        for (int64_t j = c; j < h; j++)
            tensor_set_f64(y, j * p.bins + i, (double)(h - j) / (double)(h - c));
    }
    on_bind(on, 0, on_const(on, y));
    return true;
}
