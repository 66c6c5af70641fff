"""Running one ONNX model on glowc's levels and on ONNX Runtime, for the
test scripts that compare a model with torch (tests/loops/torch_loop.py,
tests/detect/run.py) or with ORT (tests/npm_models/run.py): one place for
the levels, the ORT runner (tests/difftest/ort_run.js through node and
onnxruntime-node) and reading a run's .npy outputs back."""
import os
import shutil
import subprocess

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ORT_RUN = os.path.join(ROOT, "tests", "difftest", "ort_run.js")
# The levels a model runs on: the graph interpreter, the low-level
# interpreter (which checks the memory plan) and native code.
LEVELS = (["-O0"], ["-O2", "--backend=interp-lir"], ["-O2", "--backend=cpu"])
ORT_MISSING = "ORT: not run (no node or onnxruntime-node; set ORT_NODE_MODULES)"


def ort_modules():
    """onnxruntime-node's node_modules: $ORT_NODE_MODULES, else build/ort's."""
    return os.environ.get("ORT_NODE_MODULES") or os.path.join(ROOT, "build", "ort",
                                                              "node_modules")


def have_ort(modules=None):
    return bool(shutil.which("node")) and os.path.isdir(
        os.path.join(modules or ort_modules(), "onnxruntime-node"))


def run_glowc(glowc, model, args, out):
    """`glowc run MODEL ARGS --output-dir OUT`; its stderr, or RuntimeError
    with it when glowc fails."""
    r = subprocess.run([glowc, "run", model, *args, "--output-dir", out], capture_output=True,
                       text=True)
    if r.returncode:
        raise RuntimeError(r.stderr.strip())
    return r.stderr


def run_ort(model, feeds, out, modules=None):
    """ORT's outputs of MODEL for FEEDS ({input name: .npy path}) into OUT,
    or RuntimeError with its message."""
    os.makedirs(out, exist_ok=True)
    r = subprocess.run(["node", ORT_RUN, model, out, *(f"{k}={v}" for k, v in feeds.items())],
                       capture_output=True, text=True,
                       env=dict(os.environ, NODE_PATH=modules or ort_modules()))
    if r.returncode:
        raise RuntimeError(r.stderr.strip())


def outputs(out, names=None):
    """The arrays a run wrote to OUT: NAMES in order, or every .npy file in
    sorted order when NAMES is None."""
    if names is None:
        names = [f[:-4] for f in sorted(os.listdir(out)) if f.endswith(".npy")]
    return {n: np.load(os.path.join(out, n + ".npy")) for n in names}


def everywhere(glowc, model, feeds, work, tag, names, flag="--late-input"):
    """Runs MODEL with FEEDS ({input name: .npy path}, given to glowc with
    FLAG) on every level of glowc and then on ORT when it is at hand.
    Yields (label, outputs or None, error or None) per engine: "glowc -O0",
    ..., "ORT"."""
    args = [a for k, f in feeds.items() for a in (flag, f"{k}={f}")]
    for level in LEVELS:
        out = os.path.join(work, tag + "_".join(level).replace("=", "_").replace("-", ""))
        label = "glowc " + " ".join(level)
        try:
            run_glowc(glowc, model, [*level, *args], out)
        except RuntimeError as e:
            yield label, None, str(e)
            continue
        yield label, outputs(out, names), None
    if have_ort():
        out = os.path.join(work, tag + "_ort")
        try:
            run_ort(model, feeds, out)
        except RuntimeError as e:
            yield "ORT", None, str(e)
            return
        yield "ORT", outputs(out, names), None
