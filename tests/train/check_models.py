#!/usr/bin/python3
"""Gradients of the benchmark networks against torch autograd (make test-train).

Issue 19 asks for gradients of every operator the benchmark CNNs and a
transformer encoder use. The finite-difference cases (check_fd.py) check each
rule alone; this checks them composed, on the real architectures:
torchvision's resnet18, mobilenet_v2 (half width), squeezenet1_1,
shufflenet_v2_x1_0, efficientnet_b0 and a short densenet (densenet121's
layers, two per block), random weights (seed 0), 10 classes, 64x64 images
(mobilenet 32x32), and a two-layer transformer encoder with GELU (torch.nn),
each exported in train() mode at opset 13, so batch norms normalise by the
batch's own statistics as torch's do in training. Dropouts are set to 0 and
efficientnet's stochastic depth is off, so both sides compute the same
function.

glowc takes one SGD step over one batch of 4 (lr 1000, softmax cross-entropy,
native code): each parameter's gradient is (W0 - W1) / lr; lr is large so
that lr * g dominates W0 in W1 and the difference keeps float32's relative
precision. torch computes the same gradients with autograd in float64 on the
same weights and batch. A gradient must agree within 1e-4 of its largest
magnitude, or within 4x the difference of torch's own float32 gradients from
float64 where that is larger (rounding grows with depth and with batch norm
over few values: 1e-3 for mobilenet_v2's last layers on 1x1 maps); a wrong
or missing rule is off by the gradient's own size. A gradient that is zero
in exact arithmetic is measured against 1e-3 of the network's largest one.
The batch keeps every relu input 1e-5 away from 0: float32 may otherwise
take the other side of the kink, a legitimate difference (shufflenet found
one at 6e-7).
Usage: check_models.py [--backend cpu|interp] [MODEL...]
(CHECK_ARGS adds glowc train options, e.g. -O0; CHECK_VERBOSE=1 lists every
gradient off by more than 1e-5.)"""
import argparse
import copy
import os
import sys
import tempfile
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import glowc_train, initializers, np, torch  # noqa: E402

import torchvision  # noqa: E402

LR = 1000.0
# A bias just before a batch norm (through a 1x1 conv) has a gradient that
# is zero in exact arithmetic (the norm subtracts it again); glowc's is float32
# rounding of that zero. Such a gradient is measured against this fraction of
# the network's largest gradient instead of its own (zero) scale.
FLOOR = 1e-3
# A relu whose input lies within rounding of 0 takes the other side of its
# kink in float32 than in float64, and routes a whole element's gradient
# elsewhere: a legitimate difference, not an error. The batch is drawn
# (seeds 1, 2, ...) until every relu input is at least this far from a kink;
# glowc's forward values are within about 1e-6 of float64's.
KINK = 1e-5
LIMIT = 1e-4
BATCH = 4
CLASSES = 10
SIZE = int(os.environ.get("CHECK_SIZE", "64"))


class Encoder(torch.nn.Module):
    """Two post-norm encoder layers (attention, GELU feed-forward, layer
    norms), a mean over tokens and a linear head."""

    def __init__(self):
        super().__init__()
        layer = torch.nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, dropout=0.0,
                                                 activation="gelu", batch_first=True)
        self.enc = torch.nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
        self.head = torch.nn.Linear(32, CLASSES)

    def forward(self, x):
        return self.head(self.enc(x).mean(dim=1))


def no_dropout(m):
    for mod in m.modules():
        if isinstance(mod, torch.nn.Dropout):
            mod.p = 0.0
        if type(mod).__name__ == "StochasticDepth":
            mod.p = 0.0
    return m


def build(name):
    torch.manual_seed(0)
    if name == "transformer":
        return Encoder(), (BATCH, 6, 32)
    if name == "mobilenet_v2":
        # Half width at 32x32: the full network's millions of relu6 inputs
        # leave no batch clear of the kinks (see KINK); the layers are the same.
        return no_dropout(torchvision.models.mobilenet_v2(num_classes=CLASSES, width_mult=0.5)), \
            (BATCH, 3, 32, 32)
    if name == "densenet":
        # densenet121's layers (dense layers of BN-relu-1x1-BN-relu-3x3,
        # concatenations, transitions) two per block and narrower: 121's
        # 64x64 map holds so many relu inputs that no batch keeps all of them
        # clear of the kink.
        return no_dropout(torchvision.models.DenseNet(growth_rate=16, block_config=(2, 2, 2, 2),
                                                      num_init_features=32, num_classes=CLASSES)), \
            (BATCH, 3, SIZE, SIZE)
    tv = getattr(torchvision.models, name)
    return no_dropout(tv(num_classes=CLASSES)), (BATCH, 3, SIZE, SIZE)


MODELS = ["resnet18", "mobilenet_v2", "squeezenet1_1", "shufflenet_v2_x1_0", "efficientnet_b0",
          "densenet", "transformer"]


def margin(model, x):
    """The smallest distance from a kink of the network's piecewise-linear
    parts at x (float64 forward): relu inputs from 0, relu6 (hardtanh)
    inputs from both ends. Every relu of these networks goes through
    torch.nn.functional, modules and functional calls alike."""
    F = torch.nn.functional
    relu, hardtanh = F.relu, F.hardtanh
    seen = [float("inf")]

    def my_relu(v, inplace=False):
        seen.append(float(v.detach().abs().min()))
        return relu(v, inplace=inplace)

    def my_hardtanh(v, min_val=-1.0, max_val=1.0, inplace=False):
        d = v.detach()
        seen.append(float(torch.minimum((d - min_val).abs(), (d - max_val).abs()).min()))
        return hardtanh(v, min_val, max_val, inplace)
    m = copy.deepcopy(model).double().train()
    F.relu, F.hardtanh = my_relu, my_hardtanh
    try:
        with torch.no_grad():
            m(torch.from_numpy(x).double())
    finally:
        F.relu, F.hardtanh = relu, hardtanh
    return min(seen)


def torch_grads(model, x, y, dtype):
    """Autograd's gradients of the loss over the batch, the model in train()
    mode, computed in dtype on a copy (batch norm's running statistics of the
    model exported are left alone)."""
    m = copy.deepcopy(model).to(dtype).train()
    loss = torch.nn.functional.cross_entropy(m(torch.from_numpy(x).to(dtype)), torch.from_numpy(y))
    loss.backward()
    return {k: p.grad.double().numpy() for k, p in m.named_parameters()}


def check(name, backend, tmp):
    model, shape = build(name)
    path = os.path.join(tmp, name + ".onnx")
    for seed in range(1, 41):
        rng = np.random.default_rng(seed)
        x = rng.standard_normal(shape).astype(np.float32)
        if margin(model, x) > KINK:
            break
    else:
        raise SystemExit(f"FAIL: {name}: no input among 40 keeps every relu input {KINK} away from 0")
    y = rng.integers(0, CLASSES, BATCH).astype(np.int64)
    model.train()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, torch.from_numpy(x), path, opset_version=13, input_names=["image"],
                          output_names=["logits"], training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False)
    xf, yf, out = (os.path.join(tmp, name + s) for s in ("_x.npy", "_y.npy", "_step.onnx"))
    np.save(xf, x)
    np.save(yf, y)
    t0 = time.time()
    glowc_train(path, xf, yf, out, "--epochs", 1, "--batch", BATCH, "--lr", LR, "--backend", backend,
                *os.environ.get("CHECK_ARGS", "").split())
    took = time.time() - t0
    w0, w1 = initializers(path), initializers(out)
    g64 = torch_grads(model, x, y, torch.float64)
    g32 = torch_grads(model, x, y, torch.float32)
    top = max(np.abs(g).max() for g in g64.values())

    def error(k, got):
        return np.abs(got - g64[k]).max() / max(np.abs(g64[k]).max(), FLOOR * top)
    # torch's own float32 gradients differ from float64 by rounding that
    # grows with depth and with batch norm over few values; glowc, another
    # float32 implementation with other summation orders, may differ by a
    # few times as much, and never by more than 1e-4 where torch is closer.
    own = max(error(k, g32[k]) for k in g64)
    limit = max(LIMIT, 4 * own)
    worst, where, n = 0.0, "", 0
    for k in g64:
        if k not in w0:
            raise SystemExit(f"FAIL: {name}: parameter {k} is not an initializer of the export")
        got = (w0[k].astype(np.float64) - w1[k].astype(np.float64)) / LR
        err = error(k, got)
        n += 1
        if err > worst:
            worst, where = err, k
        if os.environ.get("CHECK_VERBOSE") and err > 1e-5:
            print(f"  {k} {list(g64[k].shape)} err {err:.2e} max|g| {np.abs(g64[k]).max():.3e}")
        if err > limit:
            raise SystemExit(f"FAIL: {name}: the gradient of {k} {list(g64[k].shape)} is off by {err:.2e} "
                             f"of its largest magnitude {np.abs(g64[k]).max():.3e} (limit {limit:.1e})")
    print(f"{name}: {n} parameters' gradients within {worst:.1e} of their scale (worst {where}; "
          f"torch float32 {own:.1e}; limit {limit:.1e}), glowc train {took:.1f} s")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("models", nargs="*")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for name in a.models or MODELS:
            check(name, a.backend, tmp)


if __name__ == "__main__":
    main()
