#!/usr/bin/python3
"""make bench-kernels: one operator alone, glowc's native kernel against ONNX
Runtime's.

For each operator whose libjit kernel replaced a reference loop
(ConvTranspose, LSTM, GRU, LayerNormalization, Softmax, Resize), writes a
one-node ONNX model at a size met in real models (weights as initializers,
one float32 input, fixed seed) with the onnx package, then times
`glowc bench --backend=cpu` (the JIT-compiled program) and ONNX Runtime
(tests/bench/ort_bench.js, onnxruntime-node) on the same input, one thread
each, and prints a table of medians and the ratio glowc/ORT. The models go
to build/bench-kernels/.

Usage: bench_kernels.py GLOWC [--iters N] [--ops a,b]
"""
import argparse
import os
import re
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OUT = os.path.join(ROOT, "build", "bench-kernels")
TIMING = re.compile(r"median ([0-9.]+) ms, min ([0-9.]+) ms")


def model(name, op, x_shape, y_shape, inits, attrs, extra_inputs=(), outputs=1):
    """A graph of one node: input x (float32), the initializers, output y."""
    rng = np.random.default_rng(7)
    tensors = [numpy_helper.from_array(v(rng) if callable(v) else v, k) for k, v in inits]
    names = ["x"] + list(extra_inputs)
    outs = ["y"] + ["y%d" % i for i in range(1, outputs)]
    node = helper.make_node(op, names, outs, **attrs)
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
    """(name, path, what): sizes from the benchmark models and typical uses."""
    H, I, T = 256, 128, 50  # a keyword spotter's recurrent layer, 50 frames
    yield ("conv_transpose", model("conv_transpose", "ConvTranspose", [1, 64, 56, 56], [1, 32, 112, 112],
                                   [("w", w(64, 32, 4, 4)), ("b", w(32))],
                                   {"strides": [2, 2], "pads": [1, 1, 1, 1]}, ["w", "b"]),
           "64->32 ch, 56x56 -> 112x112, k4 s2 (a decoder's upsampling)")
    yield ("lstm", model("lstm", "LSTM", [T, 1, I], [T, 1, 1, H],
                         [("w", w(1, 4 * H, I)), ("r", w(1, 4 * H, H)), ("b", w(1, 8 * H))],
                         {"hidden_size": H}, ["w", "r", "b"]),
           "seq %d, batch 1, input %d, hidden %d" % (T, I, H))
    yield ("gru", model("gru", "GRU", [T, 1, I], [T, 1, 1, H],
                        [("w", w(1, 3 * H, I)), ("r", w(1, 3 * H, H)), ("b", w(1, 6 * H))],
                        {"hidden_size": H, "linear_before_reset": 1}, ["w", "r", "b"]),
           "seq %d, batch 1, input %d, hidden %d" % (T, I, H))
    yield ("layer_norm", model("layer_norm", "LayerNormalization", [1, 128, 768], [1, 128, 768],
                               [("s", w(768)), ("bb", w(768))], {"axis": -1}, ["s", "bb"]),
           "128 tokens x 768 (BERT-base)")
    yield ("softmax", model("softmax", "Softmax", [1, 12, 128, 128], [1, 12, 128, 128], [], {"axis": -1}),
           "attention scores, 12 heads x 128 x 128")
    yield ("resize", model("resize", "Resize", [1, 64, 56, 56], [1, 64, 112, 112],
                           [("roi", np.zeros(0, np.float32)),
                            ("scales", np.array([1, 1, 2, 2], np.float32))],
                           {"mode": "linear"}, ["roi", "scales"]),
           "linear x2, 64 ch, 56x56 (an FPN's upsampling)")


def timing(cmd, env=None):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    m = TIMING.search(r.stdout)
    if r.returncode or not m:
        return None, (r.stderr.strip().splitlines() or ["?"])[-1]
    return float(m.group(1)), None


def ort_env():
    for d in (os.path.join(ROOT, "build", "ort"), "/work/ort"):
        if os.path.isdir(os.path.join(d, "node_modules", "onnxruntime-node")):
            return dict(os.environ, NODE_PATH=os.path.join(d, "node_modules"))
    sys.exit("bench-kernels: onnxruntime-node not found (run make bench once: it installs it in build/ort)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("glowc")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--ops", default="")
    a = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    env = ort_env()
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
