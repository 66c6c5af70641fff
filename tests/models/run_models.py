#!/usr/bin/python3
"""Check glowc's interpreter against torch on real model architectures.

For each model of fixtures/models/export_models.py (torchvision CNNs and a
transformer encoder, random weights, fixed seeds): export it into build/models/
(cached), run `glowc run` on the saved input, and compare glowc's output with
the output torch computed from the same model object. One line per model;
exits non-zero when any model fails. Without python3-torch every model is
reported as skipped, never passed over silently.

Usage: python3 tests/models/run_models.py GLOWC_PATH [--models NAME...]
"""
import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "fixtures", "models"))
import export_models  # noqa: E402  (torch is imported lazily inside)

# Pass when max|glowc - torch| <= REL_TOL * max|torch|. Both compute in
# float32, but accumulate in different orders (glowc: blocked im2col sums and
# double-precision reductions; torch: its own vectorised kernels), so results
# differ by rounding that grows with depth. The bound is relative to the
# largest output magnitude, not per element: with random weights and untrained
# batch statistics the outputs span many orders of magnitude (mobilenet_v2's
# logits are ~1e-9, efficientnet_b0's ~1e-14), and a per-element bound would
# demand of near-zero entries a precision float32 never had after fifty layers.
# 1e-4 is about a thousand float32 ulps of the largest value: well above
# rounding noise, well below the 1e-2-and-up errors a wrong kernel gives.
# On a CPU with AMX the convolutions' products are bf16x3 (gemm_amx.c: each
# within 3 * 2^-16 of its magnitude): measured 4e-6 (resnet50) to 1.5e-5
# (efficientnet_b0, vgg16) of the largest output, still under 1e-4.
REL_TOL = 1e-4


def missing_module():
    """The Debian package whose Python module is absent, or None."""
    for module, package in (("numpy", "python3-numpy"), ("torch", "python3-torch"),
                            ("torchvision", "python3-torchvision"),
                            ("onnx", "python3-onnx")):
        if importlib.util.find_spec(module) is None:
            return package
    return None


def run_glowc(glowc, onnx_path, input_path, outdir, timeout, extra=()):
    """(seconds, None) or (seconds, error text)."""
    cmd = [glowc, "run", onnx_path] + list(extra) + ["--input", export_models.INPUT_NAME + "=" + input_path,
           "--output-dir", outdir]
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return time.perf_counter() - t0, "glowc run timed out after %d s" % timeout
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        lines = [l for l in proc.stderr.splitlines() if l.strip()] or ["(no message)"]
        return seconds, "glowc run exited %d: %s" % (proc.returncode, "\n    ".join(lines[:12]))
    return seconds, None


def compare(got, want):
    """(max abs error, relative error, failure reason or None)."""
    import numpy as np
    if got.shape != want.shape:
        return None, None, "output shape %s, torch's is %s" % (got.shape, want.shape)
    if not np.all(np.isfinite(got)):
        return None, None, "output has %d non-finite values" % np.sum(~np.isfinite(got))
    err = float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64))))
    scale = float(np.max(np.abs(want)))
    rel = err / scale if scale else err
    return err, rel, None if rel <= REL_TOL else "relative error above %.0e" % REL_TOL


def check_model(glowc, name, model_dir, timeout, extra=()):
    """One result line; returns whether the model passed."""
    import numpy as np
    try:
        if not export_models.is_exported(model_dir, name):
            t0 = time.perf_counter()
            os.makedirs(model_dir, exist_ok=True)
            export_models.export_one(model_dir, name)
            print("     %-20s exported into %s in %.1f s"
                  % (name, os.path.relpath(model_dir), time.perf_counter() - t0))
    except Exception as e:  # a failed export is this model's failure, not the run's
        print("FAIL %-20s export failed: %s: %s" % (name, type(e).__name__, e))
        return False
    onnx_path, input_path, torch_path = export_models.paths(model_dir, name)
    with tempfile.TemporaryDirectory(prefix="glowc-models-") as tmp:
        seconds, error = run_glowc(glowc, onnx_path, input_path, tmp, timeout, extra)
        if error:
            print("FAIL %-20s %s" % (name, error))
            return False
        got = np.load(os.path.join(tmp, export_models.OUTPUT_NAME + ".npy"))
    err, rel, reason = compare(got, np.load(torch_path))
    if err is None:
        print("FAIL %-20s %s" % (name, reason))
        return False
    print("%s %-20s max err %9.3e   rel err %9.3e   glowc %6.2f s%s"
          % ("FAIL" if reason else "ok  ", name, err, rel, seconds,
             "   (" + reason + ")" if reason else ""))
    sys.stdout.flush()
    return reason is None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("glowc", help="path to the glowc binary")
    ap.add_argument("--models", nargs="+", default=export_models.MODELS,
                    choices=export_models.KNOWN, metavar="NAME",
                    help="models to check (default: all of %s)" % " ".join(export_models.MODELS))
    ap.add_argument("--model-dir", default=os.path.join(ROOT, "build", "models"),
                    help="where exported models are cached (default: build/models)")
    ap.add_argument("--timeout", type=int, default=900, help="seconds per glowc run")
    ap.add_argument("--glowc-args", default="",
                    help="extra arguments for glowc run, e.g. '-O2 --backend=cpu'")
    args = ap.parse_args()
    glowc = os.path.abspath(args.glowc)
    if not os.access(glowc, os.X_OK):
        sys.exit("run_models: %s is not an executable (run `make` first)" % glowc)

    package = missing_module()
    if package:
        for name in args.models:
            print("SKIP %s: %s is not installed" % (name, package))
        return 0

    print("glowc vs torch, pass when max|glowc - torch| <= %.0e * max|torch|" % REL_TOL)
    extra = args.glowc_args.split()
    if extra:
        print("glowc run %s" % " ".join(extra))
    failed = [n for n in args.models
              if not check_model(glowc, n, args.model_dir, args.timeout, extra)]
    if failed:
        print("%d of %d models failed: %s" % (len(failed), len(args.models), " ".join(failed)))
        return 1
    print("all %d models match torch" % len(args.models))
    return 0


if __name__ == "__main__":
    sys.exit(main())
