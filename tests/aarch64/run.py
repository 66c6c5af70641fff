#!/usr/bin/python3
"""Cross-compiled aarch64 code against the host's, run under qemu-aarch64.

Each model (the bundled digits model and the 8 benchmark models of
fixtures/models/export_models.py, exported into build/models when missing)
is compiled twice with `glowc compile -o`: for this machine and with
--target=aarch64-linux-gnu (a static executable). Both run on the model's
saved input -- the aarch64 one under qemu-aarch64, never by glowc -- and
every output must be within REL_TOL of the host's, relative to the host
output's largest magnitude. Then the README's bundle example
(tests/bundle/example.c) is cross-built against an aarch64 bundle of the
digits model and must name the same digit as `glowc run` on every sample,
and an operator without a libjit kernel must run on the interpreter's
kernels cross-compiled into the executable (--fallback=interp); and the int8
conv kernel cases of qconv_cases.py must give the interpreter's bytes on
aarch64, with and without dotprod.
The int8 cases (digits-int8, mobilenet_v2-int8) are profiled on the host
(`glowc profile`), compiled with --quantize for both targets, and run on the
interpreter too (`glowc run --backend=interp`): all three outputs must be
the same bytes. They are also compiled for aarch64 with the dot product
extension (DOTPROD: sdot kernels) and run under `qemu-aarch64 -cpu max`:
the same bytes again; the disassembly must hold sdot (and the plain
build's none), and the executable must die of an illegal instruction on a
CPU without dotprod (cortex-a72), so sdot is not only present but run.
One line per model, the figures at the end; exit 1 on any failure.

Usage: python3 tests/aarch64/run.py GLOWC [--models NAME...] [--jobs N] [--break-pass PASS]
"""
import argparse
import concurrent.futures
import functools
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "fixtures", "models"))
import export_models  # noqa: E402  (torch is imported lazily inside)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import qconv_cases  # noqa: E402

TRIPLE = "aarch64-linux-gnu"
QEMU = "qemu-aarch64"
# Pass when max|aarch64 - host| <= REL_TOL * max|host| for every output. The
# two executables run the same program on the same weights in float32, but
# not the same instructions: the aarch64 kernels use 4-lane vectors and an
# 8x12 register tile where x86-64 has 16 lanes and 8x48, so sums are split
# and ordered differently, and LLVM contracts multiply-adds into FMAs
# (one rounding instead of two) at different places. Such differences stay
# within some hundred float32 ulps of a tensor's scale after fifty layers
# (measured: 2e-7 on resnet50); a wrong kernel moves outputs by their own
# size. (Relative to the largest magnitude, as tests/models explains: the
# outputs of untrained networks span many orders of magnitude.)
REL_TOL = 1e-5
DIGITS = os.path.join(ROOT, "fixtures", "models", "digits.onnx")
SAMPLES = os.path.join(ROOT, "fixtures", "models", "digits_samples")
# Quantized models, whose outputs must be byte-identical on the host, on
# aarch64 and on the interpreter: there is no tolerance. The int8 kernels
# (k_qconv*.c, k_qvec.c, k_qint.c) sum integers, which is exact in any
# order, and requantize with the interpreter's own f32/double operations
# (one IEEE rounding each, FMA only where k_qconv proves it exact), so the
# x86-64 and aarch64 paths (VNNI or not, 16 or 4 lanes) may differ in how
# they sum, never in what; the final dequantize is one f32 multiply. Any
# differing byte is a wrong kernel, an off-by-one zero point or rounding.
# digits-int8: the digits model at batch 10, run on the 10 samples (also its
# calibration set). mobilenet_v2-int8: the benchmark model on a centred
# INT8_SIDE x INT8_SIDE crop of its input (calibrated on that crop and 3
# N(0,1) images, seed 0): its depthwise convs, qadd and clips in about 6 s
# for the whole case (profile, two compiles, qemu 0.5 s, the interpreter
# 2 s), a quarter of 224 x 224's pixels; 112 still has a 7x7 map (the
# depthwise kernel's 49-of-56-lanes case) besides 56, 28, 14 and 4.
INT8 = ["digits-int8", "mobilenet_v2-int8"]
INT8_SIDE = 112
# The dot product build of each int8 case: the feature named, or brought by
# a CPU that has it (module.c's cpu_has_dotprod; both ways are tested).
DOTPROD = {"digits-int8": ["--target-features=+dotprod"],
           "mobilenet_v2-int8": ["--target-cpu=neoverse-n1"]}
QEMU_DOTPROD = [QEMU, "-cpu", "max"]
QEMU_NO_DOTPROD = [QEMU, "-cpu", "cortex-a72"]
OBJDUMP = "/usr/lib/llvm-19/bin/llvm-objdump"


def run(cmd, timeout=900):
    """stdout, or raises RuntimeError with the command's last lines."""
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        lines = [l for l in (proc.stderr + proc.stdout).splitlines() if l.strip()]
        raise RuntimeError("%s exited %d: %s" % (os.path.basename(cmd[0]), proc.returncode,
                                                 " | ".join(lines[-6:]) or "(no message)"))
    return proc.stdout


def outputs(directory):
    import numpy as np
    return {f[:-4]: np.load(os.path.join(directory, f))
            for f in sorted(os.listdir(directory)) if f.endswith(".npy")}


def rel_error(got, want):
    import numpy as np
    if not got.size:
        return 0.0
    err = float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64))))
    scale = float(np.max(np.abs(want))) if want.size else 0.0
    return err / scale if scale else err


def check_model(glowc, name, onnx, inputs, work, broken=None, profile=None):
    """A result dict: name, rel (worst output), sizes, seconds, error.
    broken: a pass that miscompiles the aarch64 build (the test's own test).
    profile: quantize with it, and require the host's bytes on aarch64 and
    on the interpreter (exact: True in the result)."""
    t0 = time.perf_counter()
    res = {"name": name}
    try:
        quant = ["--quantize=" + profile] if profile else []
        # The host in f32 throughout (--f32-precision=highest): where it has
        # AMX its float convolutions would otherwise run on bf16x3 tiles,
        # whose own bound (3 * 2^-16 a product) the kernel tests and
        # tests/models check; here two f32 builds are compared.
        targets = [("host", ["--f32-precision=highest"], []),
                   ("aarch64", ["--target=" + TRIPLE], [QEMU])]
        if profile:
            targets.append(("dotprod", ["--target=" + TRIPLE] + DOTPROD[name], QEMU_DOTPROD))
        exe = {}
        for target, cross, _ in targets:
            exe[target] = os.path.join(work, "%s.%s" % (name, target))
            if target != "host" and broken:
                cross = cross + ["--break-pass=" + broken]
            run([glowc, "compile", onnx, "-o", exe[target]] + quant + cross)
            res["size_" + target] = os.path.getsize(exe[target])
        args = ["--threads", "1"]
        for spec in inputs:
            args += ["--input", spec]
        got = {}
        for target, _, prefix in targets:
            out = os.path.join(work, "%s.%s.out" % (name, target))
            os.makedirs(out)
            t1 = time.perf_counter()
            run(prefix + [exe[target]] + args + ["--output-dir", out])
            res["run_" + target] = time.perf_counter() - t1
            got[target] = outputs(out)
        if not got["host"] or sorted(got["host"]) != sorted(got["aarch64"]):
            raise RuntimeError("outputs differ in name: host %s, aarch64 %s"
                               % (sorted(got["host"]), sorted(got["aarch64"])))
        worst = 0.0
        for key, want in got["host"].items():
            have = got["aarch64"][key]
            if have.shape != want.shape or have.dtype != want.dtype:
                raise RuntimeError("output %s: aarch64 %s %s, host %s %s"
                                   % (key, have.dtype, have.shape, want.dtype, want.shape))
            worst = max(worst, rel_error(have, want))
        res["rel"] = worst
        if profile:
            res["exact"] = True
            interp = os.path.join(work, "%s.interp.out" % name)
            os.makedirs(interp)
            run([glowc, "run", onnx, "--backend=interp", "--output-dir", interp] + quant + args)
            got["interp"] = outputs(interp)
            res["error"] = differing_bytes(got) or check_sdot(exe, args)
            if not res["error"]:
                del res["error"]
        elif worst > REL_TOL:
            res["error"] = "relative error %.3e above %.0e" % (worst, REL_TOL)
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        res["error"] = str(e)
    res["seconds"] = time.perf_counter() - t0
    return res


def differing_bytes(got):
    """None when every run's outputs are the host's to the byte, else what
    differs: the output, which run, how many elements and by how much."""
    for key, want in got["host"].items():
        for run_name in sorted(set(got) - {"host"}):
            have = got[run_name].get(key)
            if have is None or have.shape != want.shape or have.dtype != want.dtype:
                return "output %s: %s has %s, the host %s %s" % (
                    key, run_name, "none" if have is None else "%s %s" % (have.dtype, have.shape),
                    want.dtype, want.shape)
            if have.tobytes() != want.tobytes():
                return "output %s: %s differs from the host in %d of %d elements " \
                       "(relative error %.3e); int8 must be byte-identical" % (
                           key, run_name, int((have != want).sum()), want.size,
                           rel_error(have, want))
    return None


def sdot_count(path):
    """How many sdot instructions the executable's code holds."""
    text = run([OBJDUMP, "-d", "--no-show-raw-insn", path])
    return sum(1 for line in text.splitlines() if line.split("\t")[1:2] == ["sdot"])


def check_sdot(exe, args):
    """None when the dot product build holds and runs sdot and the plain
    aarch64 one holds none, else what is wrong."""
    plain, dot = sdot_count(exe["aarch64"]), sdot_count(exe["dotprod"])
    if plain or not dot:
        return "sdot instructions: %d in the plain aarch64 build (want 0), %d in the " \
               "dotprod build (want some)" % (plain, dot)
    out = exe["dotprod"] + ".no-dotprod"
    os.makedirs(out)
    # No core file from the expected crash (qemu writes one into its cwd).
    proc = subprocess.run(QEMU_NO_DOTPROD + [exe["dotprod"]] + args + ["--output-dir", out],
                          capture_output=True, text=True, timeout=900, cwd=out,
                          preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_CORE, (0, 0)))
    if proc.returncode != -signal.SIGILL and "Illegal instruction" not in proc.stderr:
        return "the dotprod build ran to exit %d on %s, a CPU without dotprod: its %d " \
               "sdot are not on the path taken" % (proc.returncode, QEMU_NO_DOTPROD[2], dot)
    return None


def prepare_int8(glowc, name, model_dir, work):
    """(model, inputs, profile) of an INT8 case, written under work."""
    import numpy as np
    import onnx as onnxlib
    d = os.path.join(work, name + ".prep")
    os.makedirs(d)
    if name == "digits-int8":
        src, input_name = DIGITS, "image"
        x = np.concatenate([np.load(os.path.join(SAMPLES, "sample_%d.npy" % i))
                            for i in range(10)])
        calib = x
        m = onnxlib.load(src)
        for v in list(m.graph.input) + list(m.graph.output):
            v.type.tensor_type.shape.dim[0].dim_value = len(x)
    else:
        src, inp, _ = export_models.paths(model_dir, "mobilenet_v2")
        input_name = export_models.INPUT_NAME
        full = np.load(inp)
        lo = (full.shape[2] - INT8_SIDE) // 2
        x = np.ascontiguousarray(full[:, :, lo:lo + INT8_SIDE, lo:lo + INT8_SIDE])
        noise = np.random.default_rng(0).standard_normal((3,) + x.shape[1:]).astype(np.float32)
        calib = np.concatenate([x, noise])
        m = onnxlib.load(src)
        for axis in (2, 3):
            m.graph.input[0].type.tensor_type.shape.dim[axis].dim_value = INT8_SIDE
    # Shapes torch recorded for inner values would contradict the new input
    # shape; glowc infers them anyway.
    del m.graph.value_info[:]
    model = os.path.join(d, name + ".onnx")
    onnxlib.save(m, model)
    xf, cf, profile = (os.path.join(d, f) for f in ("input.npy", "calib.npy", "profile.json"))
    np.save(xf, x)
    np.save(cf, calib)
    run([glowc, "profile", model, "--input", "%s=%s" % (input_name, cf), "-o", profile])
    return model, ["%s=%s" % (input_name, xf)], profile


def check_int8(glowc, name, model_dir, work, broken=None):
    """check_model on a quantized INT8 case, its preparation's errors included."""
    t0 = time.perf_counter()
    try:
        model, inputs, profile = prepare_int8(glowc, name, model_dir, work)
    except (RuntimeError, subprocess.TimeoutExpired, OSError) as e:
        return {"name": name, "error": str(e), "seconds": time.perf_counter() - t0}
    res = check_model(glowc, name, model, inputs, work, broken, profile)
    res["seconds"] = time.perf_counter() - t0
    return res


def check_bundle(glowc, work):
    """The README's example against an aarch64 bundle: None, or what failed."""
    import numpy as np
    out = os.path.join(work, "bundle")
    try:
        run([glowc, "compile", DIGITS, "--bundle", out, "--target=" + TRIPLE])
        example = os.path.join(out, "example")
        run(["clang-19", "--target=" + TRIPLE, "-static", "-fuse-ld=lld", "-std=c17", "-O2",
             "-Wall", "-Werror", "-I" + out, os.path.join(ROOT, "tests", "bundle", "example.c"),
             os.path.join(out, "digits.o"), "-lm", "-lpthread", "-o", example])
        samples = sorted(f for f in os.listdir(SAMPLES)
                         if f.startswith("sample_") and f.endswith(".npy"))
        for f in samples:
            image = np.load(os.path.join(SAMPLES, f))
            raw = os.path.join(out, "image.raw")
            image.astype(np.float32).tofile(raw)
            got = run([QEMU, example, os.path.join(out, "digits.weights"), raw]).strip()
            ref = os.path.join(out, "ref")
            shutil.rmtree(ref, ignore_errors=True)
            run([glowc, "run", DIGITS, "--input", "image=" + os.path.join(SAMPLES, f),
                 "--output-dir", ref])
            want = str(int(np.load(os.path.join(ref, "logits.npy")).argmax()))
            if got != want:
                return "%s: the aarch64 bundle says %s, glowc run says %s" % (f, got, want)
        return None if samples else "no samples in %s" % SAMPLES
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        return str(e)


def check_qconv_cases(glowc, work):
    """The int8 conv kernel cases (qconv_cases.py: the packed kernel's shape
    classes and fully connected rows) compiled for aarch64 with and without
    dotprod, run under qemu: the interpreter's bytes, as the host's. None,
    or what failed."""
    d = os.path.join(work, "qconv_cases")
    os.makedirs(d)
    try:
        hl, specs, names = qconv_cases.write(d)
        args = [a for spec in specs for a in ("--input", spec)]
        got = {}
        for run_name, backend in (("host", "interp"), ("cpu", "cpu")):
            out = os.path.join(d, run_name)
            run([glowc, "run", hl, "--backend=" + backend, "--output-dir", out] + args)
            got[run_name] = outputs(out)
        for run_name, flags, qemu in (("aarch64", [], [QEMU]),
                                      ("dotprod", ["--target-features=+dotprod"], QEMU_DOTPROD)):
            exe, out = os.path.join(d, run_name), os.path.join(d, run_name + ".out")
            run([glowc, "compile", hl, "--target=" + TRIPLE, "-o", exe] + flags)
            os.makedirs(out)
            run(qemu + [exe, "--output-dir", out] + args)
            got[run_name] = outputs(out)
        if sorted(got["host"]) != sorted(names):
            return "qconv cases: the interpreter wrote %s" % sorted(got["host"])
        if not sdot_count(os.path.join(d, "dotprod")):
            return "qconv cases: no sdot in the dotprod build"
        diff = differing_bytes(got)
        return "qconv cases (the host column is the interpreter): " + diff if diff else None
    except (RuntimeError, subprocess.TimeoutExpired, OSError) as e:
        return "qconv cases: " + str(e)


def check_fallback(glowc, work):
    """An operator without a libjit kernel (Hardmax) run by the interpreter's
    kernels cross-compiled into the aarch64 executable (--fallback=interp):
    the same bytes as glowc run. None, or what failed."""
    model = "/usr/share/libonnx-testdata/data/node/test_hardmax_axis_1/model.onnx"
    out = os.path.join(work, "fallback")
    try:
        exe = os.path.join(out, "hardmax")
        os.makedirs(os.path.join(out, "ref"))
        run([glowc, "compile", "--fallback=interp", "--target=" + TRIPLE, model, "-o", exe])
        run([QEMU, exe, "--output-dir", out])
        run([glowc, "run", model, "--output-dir", os.path.join(out, "ref")])
        with open(os.path.join(out, "y.npy"), "rb") as a, \
                open(os.path.join(out, "ref", "y.npy"), "rb") as b:
            return None if a.read() == b.read() else "Hardmax: aarch64 and glowc run differ"
    except (RuntimeError, subprocess.TimeoutExpired, OSError) as e:
        return str(e)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("glowc", help="path to the glowc binary")
    names = ["digits"] + export_models.MODELS + INT8
    ap.add_argument("--models", nargs="+", default=names, choices=names, metavar="NAME",
                    help="models to check (default: all of %s)" % " ".join(names))
    ap.add_argument("--model-dir", default=os.path.join(ROOT, "build", "models"),
                    help="where exported models are cached (default: build/models)")
    ap.add_argument("--jobs", type=int, default=2, help="models checked at once (default 2)")
    ap.add_argument("--break-pass", metavar="PASS",
                    help="make PASS miscompile the aarch64 builds: every model must then fail")
    args = ap.parse_args()
    glowc = os.path.abspath(args.glowc)
    if not os.access(glowc, os.X_OK):
        sys.exit("aarch64: %s is not an executable (run `make` first)" % glowc)
    if not shutil.which(QEMU):
        sys.exit("aarch64: %s is missing: install the Debian package qemu-user" % QEMU)
    t0 = time.perf_counter()
    jobs = []  # (name, the source model's size, the check as a function of work)
    for name in args.models:
        if name == "digits":
            check = functools.partial(check_model, glowc, name, DIGITS,
                                      ["image=" + os.path.join(SAMPLES, "sample_0.npy")])
            jobs.append((name, os.path.getsize(DIGITS), check))
            continue
        source = "mobilenet_v2" if name == "mobilenet_v2-int8" else name
        if source != "digits-int8" and not export_models.is_exported(args.model_dir, source):
            os.makedirs(args.model_dir, exist_ok=True)
            export_models.export_one(args.model_dir, source)
        if name in INT8:
            onnx = DIGITS if name == "digits-int8" else \
                export_models.paths(args.model_dir, source)[0]
            check = functools.partial(check_int8, glowc, name, args.model_dir)
        else:
            onnx, inp, _ = export_models.paths(args.model_dir, name)
            check = functools.partial(check_model, glowc, name, onnx,
                                      [export_models.INPUT_NAME + "=" + inp])
        jobs.append((name, os.path.getsize(onnx), check))
    # The largest first, so that the last job to start is a short one.
    jobs.sort(key=lambda j: -j[1])
    print("aarch64 executables under %s against the host's, pass when "
          "max|aarch64 - host| <= %.0e * max|host|" % (QEMU, REL_TOL))
    with tempfile.TemporaryDirectory(prefix="glowc-aarch64-") as work:
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            futures = [pool.submit(check, work, broken=args.break_pass)
                       for _, _, check in jobs]
            results = []
            for fut in concurrent.futures.as_completed(futures):
                r = fut.result()
                results.append(r)
                if r.get("exact") and "error" not in r:
                    print("ok   %-20s identical to the host's and the interpreter's bytes   "
                          "run %5.2f s, qemu %6.1f s   (%.0f s)"
                          % (r["name"], r["run_host"], r["run_aarch64"], r["seconds"]))
                elif "rel" in r and "error" not in r:
                    print("ok   %-20s rel err %9.3e   x86-64 %6.1f MB  aarch64 %6.1f MB   run "
                          "%5.2f s, qemu %6.1f s   (%.0f s)"
                          % (r["name"], r["rel"], r["size_host"] / 1e6, r["size_aarch64"] / 1e6,
                             r["run_host"], r["run_aarch64"], r["seconds"]))
                else:
                    print("FAIL %-20s %s" % (r["name"], r["error"]))
                sys.stdout.flush()
        bundle_error = check_bundle(glowc, work)
        fallback_error = check_fallback(glowc, work)
        cases_error = check_qconv_cases(glowc, work)
    print(("FAIL bundle: %s" % bundle_error) if bundle_error else
          "ok   bundle: the README example, cross-built, agrees with glowc run on every sample")
    print(("FAIL fallback: %s" % fallback_error) if fallback_error else
          "ok   fallback: Hardmax on the interpreter's kernels, cross-compiled, as glowc run")
    print(("FAIL %s" % cases_error) if cases_error else
          "ok   qconv cases: %d int8 convs, aarch64 with and without dotprod, the interpreter's "
          "bytes" % len(qconv_cases.cases(None)))
    failed = [r["name"] for r in results if "error" in r] + (["bundle"] if bundle_error else []) \
        + (["fallback"] if fallback_error else []) + (["qconv cases"] if cases_error else [])
    print("%d models and the bundle in %.0f s" % (len(results), time.perf_counter() - t0))
    if failed:
        print("%d failed: %s" % (len(failed), " ".join(failed)))
        return 1
    exact = sum(1 for r in results if r.get("exact"))
    print("all %d float models within %.0e of the host, the %d int8 ones byte for byte (and "
          "the interpreter); the bundle, the fallback and the qconv cases agree"
          % (len(results) - exact, REL_TOL, exact))
    return 0


if __name__ == "__main__":
    sys.exit(main())
