#!/usr/bin/python3
"""Each gradient rule of the differentiate pass against central finite
differences in double precision (make test-train).

Every case is a tiny ONNX graph (axis 0 its samples: glowc shuffles them) whose operator under test sits after a
trainable elementwise scale of the input (x * s, s broadcast over the
batch), so that the operand's gradient (through s) is checked as well as the
operator's own weights. glowc takes one SGD step with the mse loss over the
whole batch (lr 100), so each weight's gradient is (W0 - W1) / 100. The
reference differentiates the same function written with torch's functional
operators run forward only in float64: (L(w + h) - L(w - h)) / 2h with
h = 1e-6 (truncation ~h^2, rounding ~1e-16 / h: both far below 1e-8).
A gradient must agree within 1e-4 of its largest magnitude: glowc computes
in float32 (errors near 1e-6 of the scale), a wrong rule is off by the
gradient's own size. Non-smooth points (relu at 0, ties in a max) have
probability zero with random data and h this small.
Usage: check_fd.py [--backend interp|cpu] [CASE...]"""
import argparse
import os
import sys
import tempfile

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import GLOWC  # noqa: E402

import subprocess  # noqa: E402

LR = 100.0
RNG = np.random.default_rng(0)


def rnd(*shape, lo=-1.0, hi=1.0):
    return RNG.uniform(lo, hi, shape)


def attr_nodes(nodes):
    return [helper.make_node(op, ins, outs, **attrs) for op, ins, outs, attrs in nodes]


# name: (x shape, {weight: value}, [(op, inputs, outputs, attrs)], torch forward(x, w))
# The graph starts from "xs" = x * s (s added for every case) and ends at "y".
CASES = {
    "conv": ((2, 3, 6, 6), {"w": rnd(4, 3, 3, 3), "b": rnd(4)},
             [("Conv", ["xs", "w", "b"], ["y"], dict(strides=[2, 2], pads=[1, 0, 0, 1]))],
             lambda x, w: F.conv2d(F.pad(x, (0, 1, 1, 0)), w["w"], w["b"], stride=2)),
    "conv_groups_dilated": ((2, 4, 7, 7), {"w": rnd(6, 2, 3, 3)},
             [("Conv", ["xs", "w"], ["y"], dict(group=2, dilations=[2, 2], pads=[1, 1, 1, 1]))],
             lambda x, w: F.conv2d(x, w["w"], padding=1, dilation=2, groups=2)),
    "conv_depthwise": ((2, 3, 5, 5), {"w": rnd(3, 1, 3, 3), "b": rnd(3)},
             [("Conv", ["xs", "w", "b"], ["y"], dict(group=3, strides=[2, 2], pads=[1, 1, 1, 1]))],
             lambda x, w: F.conv2d(x, w["w"], w["b"], stride=2, padding=1, groups=3)),
    "conv_1d": ((2, 2, 9), {"w": rnd(3, 2, 3)},
             [("Conv", ["xs", "w"], ["y"], dict(strides=[2]))],
             lambda x, w: F.conv1d(x, w["w"], stride=2)),
    "gemm": ((3, 4), {"b": rnd(4, 5), "c": rnd(5)},
             [("Gemm", ["xs", "b", "c"], ["y"], dict(alpha=0.5, beta=2.0))],
             lambda x, w: 0.5 * x @ w["b"] + 2 * w["c"]),
    "gemm_trans_b": ((3, 4), {"b": rnd(5, 4), "c": rnd(1, 5)},
             [("Gemm", ["xs", "b", "c"], ["y"], dict(transB=1))],
             lambda x, w: x @ w["b"].T + w["c"]),
    "gemm_trans_a": ((3, 4), {"b": rnd(5, 4)},
             [("Transpose", ["xs"], ["t"], dict(perm=[1, 0])),
              ("Gemm", ["t", "b"], ["y"], dict(transA=1, transB=1, alpha=1.5))],
             lambda x, w: 1.5 * x @ w["b"].T),
    "matmul_broadcast": ((2, 3, 4), {"b": rnd(4, 5), "a": rnd(3, 3)},
             [("MatMul", ["xs", "b"], ["t"], {}), ("MatMul", ["a", "t"], ["y"], {})],
             lambda x, w: w["a"] @ (x @ w["b"])),
    "arith_broadcast": ((2, 3, 4), {"p": rnd(1, 4), "q": rnd(3, 1), "r": rnd(4),
                                    "d": rnd(3, 4, lo=1, hi=2), "n": rnd(1, 1, 4)},
             [("Add", ["xs", "p"], ["a"], {}), ("Sub", ["a", "q"], ["b"], {}),
              ("Mul", ["b", "r"], ["c"], {}), ("Div", ["c", "d"], ["e"], {}),
              ("Div", ["n", "d"], ["f"], {}), ("Sub", ["f", "e"], ["y"], {})],
             lambda x, w: w["n"] / w["d"] - (x + w["p"] - w["q"]) * w["r"] / w["d"]),
    "activations": ((3, 5), {"b": rnd(5)},
             [("Add", ["xs", "b"], ["a"], {}), ("Relu", ["a"], ["r"], {}),
              ("Sigmoid", ["a"], ["sg"], {}), ("Tanh", ["a"], ["t"], {}),
              ("LeakyRelu", ["a"], ["l"], dict(alpha=0.2)), ("Exp", ["a"], ["e"], {}),
              ("Log", ["e"], ["g"], {}), ("Sqrt", ["e"], ["q"], {}), ("Neg", ["q"], ["n"], {}),
              ("Concat", ["r", "sg", "t", "l", "g", "n"], ["y"], dict(axis=1))],
             lambda x, w: torch.cat([F.relu(x + w["b"]), torch.sigmoid(x + w["b"]),
                                     torch.tanh(x + w["b"]), F.leaky_relu(x + w["b"], 0.2),
                                     x + w["b"], -torch.exp((x + w["b"]) / 2)], 1)),
    "softmax": ((2, 3, 4), {}, [("Softmax", ["xs"], ["a"], dict(axis=1)),
                                ("LogSoftmax", ["xs"], ["b"], dict(axis=-1)),
                                ("Add", ["a", "b"], ["y"], {})],
             lambda x, w: F.softmax(x, 1) + F.log_softmax(x, -1)),
    "max_pool": ((2, 2, 6, 6), {}, [("MaxPool", ["xs"], ["a"], dict(kernel_shape=[2, 2], strides=[2, 2])),
                                    ("MaxPool", ["xs"], ["b"], dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1])),
                                    ("Flatten", ["a"], ["fa"], {}), ("Flatten", ["b"], ["fb"], {}),
                                    ("Concat", ["fa", "fb"], ["y"], dict(axis=1))],
             lambda x, w: torch.cat([F.max_pool2d(x, 2).flatten(1),
                                     F.max_pool2d(x, 3, 1, 1).flatten(1)], 1)),
    "avg_pool": ((2, 2, 5, 5), {}, [("AveragePool", ["xs"], ["a"], dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])),
                                    ("AveragePool", ["xs"], ["b"], dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], count_include_pad=1)),
                                    ("GlobalAveragePool", ["xs"], ["c"], {}),
                                    ("GlobalMaxPool", ["xs"], ["d"], {}),
                                    ("Flatten", ["a"], ["fa"], {}), ("Flatten", ["b"], ["fb"], {}),
                                    ("Flatten", ["c"], ["fc"], {}), ("Flatten", ["d"], ["fd"], {}),
                                    ("Concat", ["fa", "fb", "fc", "fd"], ["y"], dict(axis=1))],
             lambda x, w: torch.cat([F.avg_pool2d(x, 3, 2, 1, count_include_pad=False).flatten(1),
                                     F.avg_pool2d(x, 3, 2, 1, count_include_pad=True).flatten(1),
                                     x.mean((2, 3)), x.amax((2, 3))], 1)),
    "data_movement": ((2, 3, 4), {"c": rnd(2, 4, 2)},
             [("Transpose", ["xs"], ["t"], dict(perm=[0, 2, 1])),
              ("Concat", ["t", "c"], ["k"], dict(axis=2)),
              ("Reshape", ["k", "shape"], ["r"], {}),
              ("Slice", ["r", "starts", "ends", "axes"], ["y"], {})],
             lambda x, w: torch.cat([x.transpose(1, 2), w["c"]], 2).reshape(2, 20)[:, 3:17]),
    "batch_norm": ((2, 3, 4, 4), {"g": rnd(3), "b": rnd(3)},
             [("BatchNormalization", ["xs", "g", "b", "mean", "var"], ["y"], dict(epsilon=1e-3))],
             # training mode (torch's model.train()): the batch's statistics
             lambda x, w: F.batch_norm(x, torch.tensor([0.1, -0.2, 0.3], dtype=torch.float64),
                                       torch.tensor([0.5, 1.5, 2.0], dtype=torch.float64),
                                       w["g"], w["b"], training=True, eps=1e-3)),
    "gelu": ((3, 5), {"b": rnd(5)},
             [("Add", ["xs", "b"], ["a"], {}), ("Gelu", ["a"], ["y"], {})],
             lambda x, w: F.gelu(x + w["b"])),
    "layer_norm": ((2, 3, 4), {"g": rnd(3, 4), "b": rnd(3, 4), "h": rnd(4)},
             [("LayerNormalization", ["xs", "g", "b"], ["a"], dict(axis=1, epsilon=1e-3)),
              ("LayerNormalization", ["xs", "h"], ["c"], dict(axis=-1)),
              ("Concat", ["a", "c"], ["y"], dict(axis=1))],
             lambda x, w: torch.cat([F.layer_norm(x, (3, 4), w["g"], w["b"], 1e-3),
                                     F.layer_norm(x, (4,), w["h"], None, 1e-5)], 1)),
    # an embedding (a weight gathered by constant ids, one repeated, one
    # negative) and a gather from the activations along axis 2
    "gather": ((2, 4, 4), {"e": rnd(4, 6)},
             [("Gather", ["e", "ids"], ["g"], dict(axis=1)), ("Mul", ["xs", "g"], ["m"], {}),
              ("Gather", ["xs", "pick"], ["p"], dict(axis=2)),
              ("Flatten", ["m"], ["fm"], {}), ("Flatten", ["p"], ["fp"], {}),
              ("Concat", ["fm", "fp"], ["y"], dict(axis=1))],
             lambda x, w: torch.cat([(x * w["e"][:, [5, 1, 5, 4]]).flatten(1),
                                     x[:, :, [0, 3, 2, 0]].reshape(2, 4, 2, 2).flatten(1)], 1)),
    "clip_pow_erf": ((3, 5), {"b": rnd(5)},
             [("Add", ["xs", "b"], ["a"], {}), ("Clip", ["a", "lo", "hi"], ["c"], {}),
              ("Pow", ["a", "three"], ["p"], {}), ("Erf", ["a"], ["e"], {}),
              ("Concat", ["c", "p", "e"], ["y"], dict(axis=1))],
             lambda x, w: torch.cat([torch.clamp(x + w["b"], -0.3, 0.4), (x + w["b"]) ** 3,
                                     torch.erf(x + w["b"])], 1)),
    "reduce_pad": ((2, 3, 4), {"b": rnd(3, 1)},
             [("Add", ["xs", "b"], ["a"], {}),
              ("ReduceMean", ["a"], ["m"], dict(axes=[2], keepdims=1)),
              ("ReduceSum", ["a", "axes1"], ["r"], dict(keepdims=0)),
              ("Pad", ["a", "pads"], ["p"], {}),
              ("Flatten", ["m"], ["fm"], {}), ("Flatten", ["r"], ["fr"], {}),
              ("Flatten", ["p"], ["fp"], {}),
              ("Concat", ["fm", "fr", "fp"], ["y"], dict(axis=1))],
             lambda x, w: torch.cat([(x + w["b"]).mean(2, keepdim=True).flatten(1),
                                     (x + w["b"]).sum(1).flatten(1),
                                     F.pad(x + w["b"], (2, 0, 1, 1)).flatten(1)], 1)),
}
# Constants that are operands, not trained.
FIXED = {
    "data_movement": {"shape": np.array([2, 20], np.int64), "starts": np.array([3], np.int64),
                      "ends": np.array([17], np.int64), "axes": np.array([1], np.int64)},
    "batch_norm": {"mean": np.array([0.1, -0.2, 0.3]), "var": np.array([0.5, 1.5, 2.0])},
    "clip_pow_erf": {"lo": np.array(-0.3), "hi": np.array(0.4), "three": np.array(3.0)},
    "gather": {"ids": np.array([5, 1, 5, -2], np.int64),
               "pick": np.array([[0, -1], [2, 0]], np.int64)},
    "reduce_pad": {"axes1": np.array([1], np.int64),
                   "pads": np.array([0, 1, 2, 0, 1, 0], np.int64)},
}
# Opsets other than 13 (the operator's first). Gelu is opset 20, newer than
# glowc (18) and the installed onnx checker (17) know: its model says 18,
# which glowc's importer takes by the operator's name, and is not checked.
OPSET = {"layer_norm": 17, "gelu": 18}


def torch_forward(fn, x, w):
    return fn(torch.from_numpy(x), {k: torch.from_numpy(v) for k, v in w.items()})


def make_model(name, xshape, weights, nodes, yshape, path):
    inits = [numpy_helper.from_array(v.astype(np.float32), k) for k, v in weights.items()]
    for k, v in FIXED.get(name, {}).items():
        inits.append(numpy_helper.from_array(v if v.dtype == np.int64 else v.astype(np.float32), k))
    g = helper.make_graph(
        attr_nodes([("Mul", ["x", "s"], ["xs"], {})] + nodes), name,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(xshape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(yshape))], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET.get(name, 13))])
    if OPSET.get(name, 13) <= onnx.defs.onnx_opset_version():
        onnx.checker.check_model(m)
    onnx.save(m, path)


def check(name, backend, tmp):
    xshape, wts, nodes, fn = CASES[name]
    x = rnd(*xshape)
    weights = {"s": rnd(*xshape[1:], lo=0.5, hi=1.5), **wts}
    full = lambda x, w: fn(x * w["s"], w)  # noqa: E731
    y = torch_forward(full, x, weights).numpy()
    t = rnd(*y.shape)
    loss = lambda w: float(((torch_forward(full, x, w) - torch.from_numpy(t)) ** 2).mean())  # noqa: E731
    path = os.path.join(tmp, name + ".onnx")
    make_model(name, xshape, weights, nodes, y.shape, path)
    np.save(os.path.join(tmp, "x.npy"), x.astype(np.float32))
    np.save(os.path.join(tmp, "t.npy"), t.astype(np.float32))
    out = os.path.join(tmp, name + "_step.onnx")
    cmd = [GLOWC, "train", path, "--input", "x=" + os.path.join(tmp, "x.npy"),
           "--labels", os.path.join(tmp, "t.npy"), "--loss", "mse", "--epochs", "1",
           "--batch", str(xshape[0]), "--lr", str(LR), "--backend", backend, "-o", out]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        print(f"FAIL {name}: glowc train failed:\n{r.stderr}")
        return False
    w1 = {i.name: numpy_helper.to_array(i) for i in onnx.load(out).graph.initializer}
    ok, h = True, 1e-6
    for k, v in weights.items():
        got = (v.astype(np.float32).astype(np.float64) - w1[k].astype(np.float64)) / LR
        ref = np.zeros_like(v)
        for i in range(v.size):
            wp = {**weights, k: v.copy()}
            wm = {**weights, k: v.copy()}
            wp[k].flat[i] += h
            wm[k].flat[i] -= h
            ref.flat[i] = (loss(wp) - loss(wm)) / (2 * h)
        err = np.abs(got - ref).max() / max(np.abs(ref).max(), 1e-30)
        verdict = "ok" if err <= 1e-4 else "FAIL"
        print(f"  {name:22s} {k:2s} {str(list(v.shape)):14s} max|grad| {np.abs(ref).max():.2e}"
              f"  error {err:.2e}  {verdict}")
        ok &= err <= 1e-4
    return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", default="interp")
    ap.add_argument("cases", nargs="*")
    a = ap.parse_args()
    names = a.cases or list(CASES)
    failed = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in names:
            if not check(n, a.backend, tmp):
                failed.append(n)
    print(f"{len(names) - len(failed)} passed, {len(failed)} failed" +
          (": " + ", ".join(failed) if failed else ""))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
