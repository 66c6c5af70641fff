"""ONNX Runtime on glowc's QDQ models against glowc's int8 graph: the digits
model, profiled on the first 100 of sklearn's 1,797 digits, written by
`glowc quantize` under every schema and calibration (and per-tensor weights,
--keep-float), run by onnxruntime-node with its optimisations (QLinearConv,
QGemm...) and by `glowc run --quantize` (the interpreter) on all 1,797.

Both round half to even, but ORT multiplies the int32 sum by the scale ratio
in float32 where glowc uses double, so a value within half an ulp of a tie
can land one step apart, and such a step can carry through the next layers.
Fails unless, for every configuration, the top-1 classes agree on at least
99.9% of the images and at least 99.9% of the logits are equal, none more
than 2 output steps apart (measured: at most 5 logits of 17,970 differ, by 1).
Needs node and onnxruntime-node (build/ort, as make bench installs it).
usage: qdq_ort.py GLOWC WORKDIR"""
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import numpy_helper
from sklearn.datasets import load_digits

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "bench"))
import bench  # noqa: E402

GLOWC, WORK = os.path.abspath(sys.argv[1]), sys.argv[2]
if not shutil.which("node"):
    sys.exit("qdq_ort: needs node and npm (Debian: apt-get install nodejs npm); nothing was run")
bench.ensure_ort()
env = dict(os.environ, NODE_PATH=os.path.join(bench.ORT_DIR, "node_modules"))
os.makedirs(WORK, exist_ok=True)


def sh(*cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode:
        sys.exit("qdq_ort: %s failed:\n%s%s" % (" ".join(cmd), r.stdout, r.stderr))


d = load_digits()
x = (d.images / 16.0).astype(np.float32)[:, None, :, :]
np.save(os.path.join(WORK, "all.npy"), x)
np.save(os.path.join(WORK, "calib.npy"), x[:100])
m = onnx.load(os.path.join(ROOT, "fixtures", "models", "digits.onnx"))
for v in list(m.graph.input) + list(m.graph.output):
    dim = v.type.tensor_type.shape.dim[0]
    dim.ClearField("dim_value")
    dim.dim_param = "N"
model, prof = os.path.join(WORK, "digits_n.onnx"), os.path.join(WORK, "profile.json")
onnx.save(m, model)
sh(GLOWC, "profile", model, "--input", "image=" + os.path.join(WORK, "calib.npy"), "-o", prof)
failed = False
configs = [[s] for s in ("--quant-schema=asymmetric", "--quant-schema=symmetric",
                         "--quant-schema=symmetric-uint8", "--quant-schema=symmetric-pow2",
                         "--quant-calibration=kl", "--quant-calibration=percentile",
                         "--quant-per-tensor", "--keep-float=max_pool")]
print("%-32s %8s %9s %8s" % ("configuration", "top-1", "logits", "max"))
for cfg in configs:
    qdq = os.path.join(WORK, "q.onnx")
    sh(GLOWC, "quantize", model, "--quantize=" + prof, "-o", qdq, *cfg)
    o, g = os.path.join(WORK, "ort"), os.path.join(WORK, "glowc")
    os.makedirs(o, exist_ok=True)
    sh("node", os.path.join(ROOT, "tests", "difftest", "ort_run.js"), qdq, o, "--optimize",
       "image=" + os.path.join(WORK, "all.npy"), env=env)
    sh(GLOWC, "run", model, "--quantize=" + prof, "--quant-equalize=off", "--input", "image=" + os.path.join(WORK, "all.npy"),
       "--output-dir", g, *cfg)
    a, b = np.load(os.path.join(o, "logits.npy")), np.load(os.path.join(g, "logits.npy"))
    qm = onnx.load(qdq)
    init = {t.name: t for t in qm.graph.initializer}
    last = [n for n in qm.graph.node if n.op_type == "DequantizeLinear" and n.output[0] == "logits"]
    step = float(numpy_helper.to_array(init[last[0].input[1]]))
    top1 = (a.argmax(1) == b.argmax(1)).mean()
    equal = (a == b).mean()
    steps = np.abs(a - b).max() / step
    bad = top1 < 0.999 or equal < 0.999 or steps > 2.0001
    failed |= bad
    print("%-32s %7.2f%% %8.3f%% %7.0f%s" % (" ".join(cfg), 100 * top1, 100 * equal, steps,
                                           "  FAIL" if bad else ""))
sys.exit(1 if failed else 0)
