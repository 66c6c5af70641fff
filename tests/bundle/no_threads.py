#!/usr/bin/python3
"""glowc compile --bundle --no-threads against the threaded bundle.

For digits and each benchmark model found: both bundles are compiled, the
no-threads object's undefined symbols must hold no pthread_* and no
allocator (nm -u), and tests/bundle/runner.c, built from each header alone
(the no-threads one linked without -lpthread), runs the model's input.
The no-threads outputs must be byte-identical to the threaded bundle's with
no runtime (one thread) and with a runtime of 2 threads: one thread runs
each kernel's worker over all its units either way, with scratch of the same
sizes (code generation sizes the fixed scratch by the kernels' own
requests), and the kernels split work so that the result does not depend on
the thread count. Each output is also checked against torch (the models'
.torch.npy) with test-models' bound, max|got - torch| <= 1e-4 max|torch|.

Usage: no_threads.py GLOWC [--models DIR] [--all]
  default: mobilenet_v2, resnet18, transformer_encoder; --all: all eight.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BANNED = ("pthread_", "malloc", "calloc", "realloc", "free", "aligned_alloc",
          "posix_memalign", "mmap", "munmap")
DEFAULT = ["mobilenet_v2", "resnet18", "transformer_encoder"]
ALL = ["resnet18", "resnet50", "mobilenet_v2", "squeezenet1_1", "densenet121",
       "shufflenet_v2_x1_0", "efficientnet_b0", "transformer_encoder"]
REL_TOL = 1e-4  # tests/models/run_models.py says why


def run(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode:
        raise RuntimeError("%s exited %d:\n%s%s" % (" ".join(cmd), p.returncode, p.stdout, p.stderr))
    return p.stdout


def macro(name):
    return "".join(c.upper() if c.isalnum() else "_" for c in name)


def header_macros(path):
    vals = {}
    for line in open(path):
        part = line.split(None, 2)
        if len(part) == 3 and part[0] == "#define":
            vals[part[1]] = part[2].strip()
    return vals


def build(glowc, model, entry, out, no_threads):
    d = os.path.join(out, "nothreads" if no_threads else "threads")
    t0 = time.perf_counter()
    run([glowc, "compile", model, "--bundle", d] + (["--no-threads"] if no_threads else []))
    secs = time.perf_counter() - t0
    exe = os.path.join(d, "runner")
    libs = ["-lm"] if no_threads else ["-lm", "-lpthread"]
    run(["clang-19", "-std=c17", "-O2", "-Wall", "-Werror", "-I" + d,
         '-DBUNDLE_H="%s.h"' % entry, "-DPREFIX=" + macro(entry), "-DENTRY=" + entry,
         os.path.join(HERE, "runner.c"), os.path.join(d, entry + ".o")] + libs + ["-o", exe])
    return d, exe, secs


def outputs(exe, weights, io, threads):
    for f in os.listdir(io):
        if f.startswith("out"):
            os.remove(os.path.join(io, f))
    run([exe, weights, io, threads])
    return [open(os.path.join(io, f), "rb").read() for f in sorted(os.listdir(io)) if f.startswith("out")]


def check(glowc, model, inputs, torch, tmp):
    try:
        return check_model(glowc, model, inputs, torch, tmp)
    except RuntimeError as e:
        print("FAIL %s: %s" % (os.path.basename(model), e))
        return False


def check_model(glowc, model, inputs, torch, tmp):
    entry = os.path.basename(model).split(".")[0]
    out = os.path.join(tmp, entry)
    os.makedirs(out)
    nt, nt_exe, nt_secs = build(glowc, model, entry, out, True)
    th, th_exe, th_secs = build(glowc, model, entry, out, False)
    problems = []
    undefined = run(["nm", "-u", os.path.join(nt, entry + ".o")]).split()
    bad = [u for u in undefined if u.startswith(BANNED[0]) or u in BANNED[1:]]
    if bad:
        problems.append("the no-threads object needs " + ", ".join(bad))
    io = os.path.join(out, "io")
    os.makedirs(io)
    for k, x in enumerate(inputs):
        open(os.path.join(io, "in%d.raw" % k), "wb").write(x.tobytes())
    got = outputs(nt_exe, os.path.join(nt, entry + ".weights"), io, "-")
    for threads in ("-", "2"):
        want = outputs(th_exe, os.path.join(th, entry + ".weights"), io, threads)
        if got != want:
            problems.append("outputs differ from the threaded bundle's (%s threads)"
                            % ("no runtime, 1" if threads == "-" else threads))
    h = header_macros(os.path.join(nt, entry + ".h"))
    rel = None
    if torch is not None:
        y = np.frombuffer(got[0], dtype=np.float32).reshape(torch.shape).astype(np.float64)
        scale = float(np.max(np.abs(torch)))
        rel = float(np.max(np.abs(y - torch))) / (scale or 1)
        if not rel <= REL_TOL:
            problems.append("relative error %.2e against torch, above %.0e" % (rel, REL_TOL))
    up = macro(entry)
    print("%s %-20s compile %5.1f s (threads %5.1f s)  activations %s = plan %s + scratch %s  "
          "object %d KB (threads %d KB)%s"
          % ("FAIL" if problems else "ok  ", entry, nt_secs, th_secs,
             h[up + "_ACTIVATIONS_SIZE"], h[up + "_SCRATCH_OFFSET"], h[up + "_SCRATCH_SIZE"],
             os.path.getsize(os.path.join(nt, entry + ".o")) // 1024,
             os.path.getsize(os.path.join(th, entry + ".o")) // 1024,
             "" if rel is None else "  rel err vs torch %.1e" % rel))
    for p in problems:
        print("     " + p)
    return not problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("glowc")
    ap.add_argument("--models", default=os.path.join(ROOT, "build", "models"))
    ap.add_argument("--all", action="store_true")
    a = ap.parse_args()
    glowc = os.path.abspath(a.glowc)
    tmp = tempfile.mkdtemp()
    ok = True
    try:
        sample = np.load(os.path.join(ROOT, "fixtures/models/digits_samples/sample_0.npy"))
        ok &= check(glowc, os.path.join(ROOT, "fixtures/models/digits.onnx"),
                    [sample.astype(np.float32)], None, tmp)
        names = ALL if a.all else DEFAULT
        missing = [n for n in names if not os.path.exists(os.path.join(a.models, n + ".onnx"))]
        for n in names:
            if n in missing:
                continue
            base = os.path.join(a.models, n)
            x = np.load(base + ".input.npy").astype(np.float32)
            ok &= check(glowc, base + ".onnx", [x], np.load(base + ".torch.npy").astype(np.float64), tmp)
        if missing:
            print("not in %s (make bench exports them): %s" % (a.models, ", ".join(missing)))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("no-threads bundles: %s" % ("all agree" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
