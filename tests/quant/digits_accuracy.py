"""Int8 accuracy of the bundled digits model (issue 15's figure): profiled on
the first 100 of sklearn's 1,797 digits, quantized, and run over all 1,797
against the float model and the labels. The float model's accuracy is
sklearn's labels against glowc's float run (itself checked against torch by
tests/models); agreement is the share of images whose int8 top-1 class is the
float top-1 class.

Fails unless, for the default quantization (asymmetric, minmax, per-channel
weights), agreement >= 99.5% and accuracy is within 0.5 point of float's, and
unless native code (--backend=cpu) gives the interpreter's int8 logits exactly;
prints the same figures for every schema and calibration.
usage: digits_accuracy.py GLOWC WORKDIR"""
import os
import subprocess
import sys
import time

import numpy as np
import onnx
from sklearn.datasets import load_digits

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = os.path.join(HERE, "..", "..", "fixtures", "models", "digits.onnx")


def glowc(*args):
    r = subprocess.run([GLOWC, *args], capture_output=True, text=True)
    if r.returncode:
        sys.exit("glowc %s failed:\n%s%s" % (" ".join(args), r.stdout, r.stderr))
    return r.stdout


def logits(model, out, *extra):
    glowc("run", model, "--input", "image=" + os.path.join(WORK, "all.npy"), "--output-dir",
          out, *extra)
    return np.load(os.path.join(out, "logits.npy"))


GLOWC, WORK = os.path.abspath(sys.argv[1]), sys.argv[2]
os.makedirs(WORK, exist_ok=True)
t0 = time.time()
digits = load_digits()
x = (digits.images / 16.0).astype(np.float32)[:, None, :, :]  # as train_digits.py
labels = digits.target
np.save(os.path.join(WORK, "all.npy"), x)
np.save(os.path.join(WORK, "calib.npy"), x[:100])

# The same model with a symbolic batch: profiled one image at a time, run on
# all 1,797 at once (the profile is of this file's bytes).
m = onnx.load(MODEL)
for v in list(m.graph.input) + list(m.graph.output):
    d = v.type.tensor_type.shape.dim[0]
    d.ClearField("dim_value")
    d.dim_param = "N"
model = os.path.join(WORK, "digits_n.onnx")
onnx.save(m, model)
profile = os.path.join(WORK, "profile.json")
glowc("profile", model, "--input", "image=" + os.path.join(WORK, "calib.npy"), "-o", profile)

ref = logits(model, os.path.join(WORK, "float"))
assert ref.shape == (1797, 10), ref.shape
float_acc = (ref.argmax(1) == labels).mean()
print("float: accuracy %.2f%% over %d images" % (100 * float_acc, len(labels)))
print("%-16s %-11s %9s %9s %7s" % ("schema", "calibration", "agreement", "accuracy", "delta"))
failed = False
for schema in ["asymmetric", "symmetric", "symmetric-uint8", "symmetric-pow2"]:
    for calib in ["minmax", "percentile", "kl"]:
        q = logits(model, os.path.join(WORK, schema + "-" + calib), "--quantize=" + profile,
                   "--quant-schema=" + schema, "--quant-calibration=" + calib)
        agree = (q.argmax(1) == ref.argmax(1)).mean()
        acc = (q.argmax(1) == labels).mean()
        default = schema == "asymmetric" and calib == "minmax"
        bad = default and (agree < 0.995 or abs(acc - float_acc) > 0.005)
        failed |= bad
        print("%-16s %-11s %8.2f%% %8.2f%% %+6.2f%s" % (schema, calib, 100 * agree, 100 * acc,
                                                        100 * (acc - float_acc),
                                                        "  FAIL" if bad else
                                                        ("  (checked)" if default else "")))
# Native int8 (libjit's integer kernels) must equal the interpreter, the
# reference, exactly: the same integer sums and the same roundings.
native = logits(model, os.path.join(WORK, "native"), "--quantize=" + profile, "--backend=cpu")
interp = np.load(os.path.join(WORK, "asymmetric-minmax", "logits.npy"))
same = native.tobytes() == interp.tobytes()
failed |= not same
print("native int8 (--backend=cpu) against the interpreter: %s" %
      ("identical" if same else "DIFFERENT (%d of %d logits)  FAIL" %
       ((native != interp).sum(), native.size)))
print("%.1f s" % (time.time() - t0))
sys.exit(1 if failed else 0)
