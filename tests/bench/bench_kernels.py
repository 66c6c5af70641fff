#!/usr/bin/python3
"""make bench-kernels: one operator alone, glowc's native kernel against ONNX
Runtime's.

For each operator whose libjit kernel replaced a reference loop
(ConvTranspose, LSTM, GRU, LayerNormalization, Softmax, Resize nearest,
linear and cubic), writes a one-node ONNX model at the size a real model runs it at
(models() names which; weights as initializers, one float32 input, fixed
seed) with the onnx package, then times
`glowc bench --backend=cpu` (the JIT-compiled program) and ONNX Runtime
(tests/bench/ort_bench.js, onnxruntime-node) on the same input, one thread
each, and prints a table of medians and the ratio glowc/ORT. The models go
to build/bench-kernels/. Without node or onnxruntime-node it says so and
exits 0, as the other ORT targets do.

Usage: bench_kernels.py GLOWC [--iters N] [--ops a,b]
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

try:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
except ImportError:  # exits below with the reason
    onnx = None

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OUT = os.path.join(ROOT, "build", "bench-kernels")
TIMING = re.compile(r"median ([0-9.]+) ms, min ([0-9.]+) ms")


def model(name, op, x_shape, y_shape, inits, attrs, inputs=("x",), outputs=1):
    """A graph of one node: input x (float32), the initializers (named in
    `inputs` where the node takes them; "" for an optional one left out),
    output y."""
    rng = np.random.default_rng(7)
    tensors = [numpy_helper.from_array(v(rng) if callable(v) else v, k) for k, v in inits]
    outs = ["y"] + ["y%d" % i for i in range(1, outputs)]
    node = helper.make_node(op, list(inputs), outs, **attrs)
    graph = helper.make_graph([node], name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)],
                              initializer=tensors)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    path = os.path.join(OUT, name + ".onnx")
    onnx.save(m, path)
    np.save(os.path.join(OUT, name + ".input.npy"), rng.standard_normal(x_shape).astype(np.float32))
    return path


def w(*shape):
    return lambda rng: (rng.standard_normal(shape) * 0.1).astype(np.float32)


def models():
    """(name, path, what): each operator at a size a real model runs it at."""
    # PaddleOCR v4's text detector (tests/npm_models) at a 640x640 input: its
    # first ConvTranspose, 24 -> 24 channels, kernel 2 stride 2, 160 -> 320.
    yield ("conv_transpose", model("conv_transpose", "ConvTranspose", [1, 24, 160, 160], [1, 24, 320, 320],
                                   [("w", w(24, 24, 2, 2))], {"strides": [2, 2]}, ["x", "w"]),
           "OCR det: 24->24 ch, k2 s2, 160x160 -> 320x320")
    # silero VAD v5's decoder LSTM: one 128-wide step per 32 ms chunk, the
    # state carried in (here the initial h and c as initializers).
    H = 128
    yield ("lstm", model("lstm", "LSTM", [1, 1, H], [1, 1, 1, H],
                         [("w", w(1, 4 * H, H)), ("r", w(1, 4 * H, H)), ("b", w(1, 8 * H)),
                          ("h0", w(1, 1, H)), ("c0", w(1, 1, H))],
                         {"hidden_size": H}, ["x", "w", "r", "b", "", "h0", "c0"]),
           "silero v5: 1 step, batch 1, input 128, hidden 128")
    # A GRU keyword spotter (Hello Edge's GRU, Zhang et al. 2017): 49 frames
    # of 10 MFCCs, 154 units.
    T, I, G = 49, 10, 154
    yield ("gru", model("gru", "GRU", [T, 1, I], [T, 1, 1, G],
                        [("w", w(1, 3 * G, I)), ("r", w(1, 3 * G, G)), ("b", w(1, 6 * G))],
                        {"hidden_size": G, "linear_before_reset": 1}, ["x", "w", "r", "b"]),
           "KWS: seq %d, batch 1, input %d, hidden %d" % (T, I, G))
    yield ("layer_norm", model("layer_norm", "LayerNormalization", [1, 128, 512], [1, 128, 512],
                               [("s", w(512)), ("bb", w(512))], {"axis": -1}, ["x", "s", "bb"]),
           "transformer: 128 tokens x 512")
    yield ("softmax", model("softmax", "Softmax", [1, 8, 128, 128], [1, 8, 128, 128], [], {"axis": -1}),
           "attention scores, 8 heads x 128 x 128")
    for mode in ("nearest", "linear", "cubic"):
        yield ("resize_" + mode, model("resize_" + mode, "Resize", [1, 64, 80, 80], [1, 64, 160, 160],
                                       [("roi", np.zeros(0, np.float32)),
                                        ("scales", np.array([1, 1, 2, 2], np.float32))],
                                       {"mode": mode}, ["x", "roi", "scales"]),
               "%s x2, 64 ch, 80x80 (an FPN's upsampling)" % mode)


def timing(cmd, env=None):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    m = TIMING.search(r.stdout)
    if r.returncode or not m:
        return None, (r.stderr.strip().splitlines() or ["?"])[-1]
    return float(m.group(1)), None


def ort_env():
    """The environment that finds onnxruntime-node, or None (with why)."""
    if not shutil.which("node"):
        return None, "node is not installed (Debian: apt-get install nodejs npm)"
    for d in (os.path.join(ROOT, "build", "ort"), "/work/ort"):
        if os.path.isdir(os.path.join(d, "node_modules", "onnxruntime-node")):
            return dict(os.environ, NODE_PATH=os.path.join(d, "node_modules")), None
    return None, "onnxruntime-node not found (make bench installs it in build/ort from npm)"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("glowc")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--ops", default="")
    a = ap.parse_args()
    if onnx is None:
        print("bench-kernels: skipped: numpy or onnx is missing for %s (Debian: python3-numpy, "
              "python3-onnx)" % sys.executable)
        return
    env, why = ort_env()
    if env is None:  # as the other ORT targets: a reason, and nothing failed
        print("bench-kernels: skipped: " + why)
        return
    os.makedirs(OUT, exist_ok=True)
    js = os.path.join(ROOT, "tests", "bench", "ort_bench.js")
    want = set(a.ops.split(",")) if a.ops else None
    print("| operator | size | glowc ms | ORT ms | glowc/ORT |")
    print("|---|---|---:|---:|---:|")
    for name, path, what in models():
        if want and name not in want:
            continue
        inp = path.replace(".onnx", ".input.npy")
        g, gerr = timing([a.glowc, "bench", path, "--backend=cpu", "--threads=1",
                          "--iters", str(a.iters), "--input=x=" + inp])
        o, oerr = timing(["node", js, path, "1", str(a.iters), inp], env=env)
        ratio = "%.2f" % (g / o) if g and o else "-"
        cell = lambda v, e: "%.3f" % v if v is not None else "failed: " + e
        print("| %s | %s | %s | %s | %s |" % (name, what, cell(g, gerr), cell(o, oerr), ratio), flush=True)


if __name__ == "__main__":
    main()
