/* Import of signal-processing operators. The window functions and the mel
 * filter bank depend only on their (constant) sizes and frequencies, so
 * they fold to constants. */
#include <math.h>
#include <string.h>

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

/* ---- DFT and STFT: products with a constant matrix ---------------------------- */

/* A discrete Fourier transform of length L over n input samples is a
 * matrix product: with the samples as rows (real, or real and imaginary
 * interleaved) and the frequencies as columns (real and imaginary
 * interleaved), W[(j, in)][(k, out)] is the part of e^{-+2 pi i j k / L}
 * (1/L for the inverse) that takes `in` to `out`. Importing DFT and STFT as
 * reshapes around one matmul gives both backends their product kernels
 * (no dedicated DFT kernel; the sizes met in models are a few hundred
 * points, where the product costs no more than a radix-2 FFT's shuffles).
 * Samples past L (dft_length shorter than the axis) get zero rows; an L
 * past the samples pads with zeros, as the spec says. */
static Value *dft_matrix(OnnxNode *on, ElemKind kind, int64_t n, int64_t c, int64_t len,
                         int64_t bins, bool inverse) {
    Type t = type_make(kind, 2, (int64_t[]){n * c, bins * 2});
    Tensor *w = on_tensor(on, &t);
    if (!w)
        return NULL;
    double sign = inverse ? 1 : -1, scale = inverse ? 1.0 / (double)len : 1;
    for (int64_t j = 0; j < n && j < len; j++)
        for (int64_t k = 0; k < bins; k++) {
            /* j k mod L keeps the angle's argument small and exact. */
            double th = 2 * M_PI * (double)((j * k) % len) / (double)len;
            double co = cos(th) * scale, si = sign * sin(th) * scale;
            int64_t re = (j * c) * bins * 2 + k * 2;
            tensor_set_f64(w, re, co);
            tensor_set_f64(w, re + 1, si);
            if (c == 2) {
                tensor_set_f64(w, re + bins * 2, -si);
                tensor_set_f64(w, re + bins * 2 + 1, co);
            }
        }
    return on_const(on, w);
}

static Value *reshape_to(OnnxNode *on, Value *x, int rank, const int64_t *dims) {
    Node *r = on_node(on, NK_RESHAPE, 1, &x, 1);
    r->res[0].type = type_make(x->type.elem, rank, dims);
    return on_tmp(on, r);
}

static Value *transpose_by(OnnxNode *on, Value *x, const int64_t *perm) {
    Node *t = on_node(on, NK_TRANSPOSE, 1, &x, 1);
    node_set_ints(t, AK_perm, x->type.rank, perm);
    return on_tmp(on, t);
}

/* x [rows..., n, c] (the axis second to last) -> [rows..., bins, 2]. */
static Value *dft_last(OnnxNode *on, Value *x, int64_t len, int64_t bins, bool inverse) {
    int r = x->type.rank;
    int64_t n = x->type.dims[r - 2], c = x->type.dims[r - 1], rows = 1, dims[MAX_RANK];
    for (int i = 0; i < r - 2; i++)
        rows *= x->type.dims[i];
    Value *w = dft_matrix(on, x->type.elem, n, c, len, bins, inverse);
    Value *flat = w ? reshape_to(on, x, 2, (int64_t[]){rows, n * c}) : NULL;
    if (!flat)
        return NULL;
    Value *y = on_tmp(on, on_node(on, NK_MATMUL, 2, (Value *[]){flat, w}, 1));
    memcpy(dims, x->type.dims, sizeof dims);
    dims[r - 2] = bins;
    dims[r - 1] = 2;
    return y ? reshape_to(on, y, r, dims) : NULL;
}

/* The one integer of input i, known at compile time; dflt when absent. */
static bool const_scalar(OnnxNode *on, int i, const char *what, int64_t dflt, int64_t *v) {
    int n = 1;
    *v = dflt;
    if (!on_in(on, i))
        return true;
    if (!on_const_ints(on, i, what, v, 1, &n))
        return false;
    if (n != 1) {
        on_error(on, "input %d (%s) must be one integer", i, what);
        return false;
    }
    return true;
}

bool import_dft(OnnxNode *on) {
    if (!on_need_inputs(on, 1, 3))
        return false;
    Value *x = on_in(on, 0);
    int r = x->type.rank;
    int64_t axis = on_attr_int(on, "axis", 1), len;
    if (on->opset >= 20 && !const_scalar(on, 2, "axis", -2, &axis))
        return false;
    axis = axis < 0 ? axis + r : axis;
    if (r < 2 || axis < 0 || axis >= r - 1 || (x->type.dims[r - 1] != 1 && x->type.dims[r - 1] != 2)) {
        on_error(on, "expects [..., n, 1 or 2] with the axis before the last (axis %lld, rank %d)",
                 (long long)axis, r);
        return false;
    }
    if (!elem_is_float(x->type.elem)) {
        on_error(on, "expects a float signal, not %s", elem_name(x->type.elem));
        return false;
    }
    if (!const_scalar(on, 1, "dft_length", x->type.dims[axis], &len))
        return false;
    bool inverse = on_attr_int(on, "inverse", 0), onesided = on_attr_int(on, "onesided", 0);
    if (len < 1 || len > (1 << 16) || (onesided && x->type.dims[r - 1] == 2)) {
        on_error(on, len < 1 || len > (1 << 16) ? "dft_length must be in [1, 65536]"
                                                : "onesided needs a real signal");
        return false;
    }
    int64_t bins = onesided ? len / 2 + 1 : len, perm[MAX_RANK], back[MAX_RANK];
    /* Move the axis next to the last, transform, and move it back. */
    int k = 0;
    for (int i = 0; i < r - 1; i++)
        if (i != axis)
            perm[k++] = i;
    perm[k++] = axis;
    perm[k] = r - 1;
    for (int i = 0; i < r; i++)
        back[perm[i]] = i;
    bool moved = axis != r - 2;
    Value *t = moved ? transpose_by(on, x, perm) : x;
    Value *y = t ? dft_last(on, t, len, bins, inverse) : NULL;
    if (y && moved)
        y = transpose_by(on, y, back);
    if (!y)
        return false;
    on_bind(on, 0, y);
    return true;
}

/* Frames of the signal [batch, length, c] gathered by a constant index
 * [frames, frame_length], times the window, then the DFT of each. */
bool import_stft(OnnxNode *on) {
    if (!on_need_inputs(on, 2, 4))
        return false;
    Value *x = on_in(on, 0), *window = on_in(on, 2);
    int64_t step, flen = window && window->type.rank == 1 ? window->type.dims[0] : -1;
    if (!const_scalar(on, 1, "frame_step", 0, &step) || !const_scalar(on, 3, "frame_length", flen, &flen))
        return false;
    if (x->type.rank != 3 || (x->type.dims[2] != 1 && x->type.dims[2] != 2) ||
        !elem_is_float(x->type.elem)) {
        on_error(on, "expects a float signal [batch, length, 1 or 2]");
        return false;
    }
    int64_t length = x->type.dims[1];
    if (step < 1 || flen < 1 || flen > length || flen > (1 << 16) ||
        (window && (window->type.rank != 1 || window->type.dims[0] != flen))) {
        on_error(on, "frame_step and frame_length must be positive, the frame no longer than the "
                     "signal, and the window [frame_length]");
        return false;
    }
    bool onesided = on_attr_int(on, "onesided", 1);
    if (onesided && x->type.dims[2] == 2) {
        on_error(on, "onesided needs a real signal");
        return false;
    }
    int64_t frames = (length - flen) / step + 1;
    Type it = type_make(ELEM_I64, 2, (int64_t[]){frames, flen});
    Tensor *idx = on_tensor(on, &it);
    if (!idx)
        return false;
    for (int64_t f = 0; f < frames; f++)
        for (int64_t j = 0; j < flen; j++)
            tensor_set_i64(idx, f * flen + j, f * step + j);
    Node *g = on_node(on, NK_GATHER, 2, (Value *[]){x, on_const(on, idx)}, 1);
    node_set_int(g, AK_axis, 1);
    Value *fr = on_tmp(on, g); /* [batch, frames, flen, c] */
    if (fr && window) {
        Value *w = reshape_to(on, window, 4, (int64_t[]){1, 1, flen, 1});
        fr = w ? on_tmp(on, on_node(on, NK_MUL, 2, (Value *[]){fr, w}, 1)) : NULL;
    }
    Value *y = fr ? dft_last(on, fr, flen, onesided ? flen / 2 + 1 : flen, false) : NULL;
    if (!y)
        return false;
    on_bind(on, 0, y);
    return true;
}
