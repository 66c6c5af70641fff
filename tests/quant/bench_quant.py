#!/usr/bin/python3
"""make bench-quant: int8 glowc against ONNX Runtime running the QDQ model
that `glowc quantize` wrote, in one run (issue 15's speed figures).

For each model (build/models, exported by fixtures/models/export_models.py:
random weights, batch 1): profile it (`glowc profile` on its input and 7
random N(0,1) images, fixed seed), write the QDQ model (`glowc quantize`,
default quantization: asymmetric, minmax, per-channel weights), then time at
1 and 2 threads, medians of ITERS runs after a warm-up, in ROUNDS rounds:
  - glowc float32 (`glowc bench --backend=cpu`)
  - glowc int8    (`glowc bench --quantize=P --backend=cpu`); while the CPU
    backend has no int8 kernels this says so and shows n/a: the interpreter
    is a reference, not a fair speed comparison
  - ORT float32 and ORT on the QDQ model (onnxruntime-node, optimisations on:
    it fuses the QDQ groups into QLinearConv, QLinearAdd, QGemm...)
Each round times the four in turn, every other round in the reverse order
(run in a row, the later of two like runs is the faster: 2-4% on resnet50
int8, enough to decide its comparison), and a cell is the median of its
rounds; the int8 ratio glowc/ORT QDQ is taken within each round (the host's
speed drifts from minute to minute; both engines drift with it) and shown as
the rounds' median and range.
On the model's input it compares outputs: ORT QDQ and glowc int8 (the
interpreter, `glowc run --quantize`) against glowc float32 (top-1 class the
same? largest error), and ORT QDQ against glowc int8 in steps of the output
scale. Writes the table to out/bench-quant.md too.

Needs node and npm (onnxruntime-node is installed into build/ort as `make
bench` does); says so and exits 1 when they are missing.
Usage: bench_quant.py GLOWC [--models m1,m2] [--iters N] [--rounds R]
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "bench"))
import bench  # noqa: E402  (its ensure_ort and timed_rounds)

MODELS = ["resnet18", "resnet50", "mobilenet_v2"]
WORK = os.path.join(ROOT, "build", "quant-bench")
WEIGHTS = re.compile(r"^weights ([0-9]+) bytes", re.M)


def run(cmd, env=None):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode:
        sys.exit("bench-quant: %s failed:\n%s%s" % (" ".join(cmd), r.stdout, r.stderr))
    return r.stdout


def output_scale(qdq):
    """The scale of the QDQ model's last DequantizeLinear (the output's)."""
    import onnx
    from onnx import numpy_helper
    m = onnx.load(qdq)
    init = {t.name: t for t in m.graph.initializer}
    last = [n for n in m.graph.node if n.op_type == "DequantizeLinear"
            and n.output[0] in {o.name for o in m.graph.output}]
    return float(numpy_helper.to_array(init[last[0].input[1]])) if last else None


def model_row(glowc, m, iters, rounds, node_env, cpu):
    mdir = os.path.join(ROOT, "build", "models")
    onnx_path, inp = os.path.join(mdir, m + ".onnx"), os.path.join(mdir, m + ".input.npy")
    work = os.path.join(WORK, m)
    os.makedirs(work, exist_ok=True)
    x = np.load(inp)
    rng = np.random.default_rng(0)
    calib = np.concatenate([x, rng.standard_normal((7,) + x.shape[1:]).astype(np.float32)])
    np.save(os.path.join(work, "calib.npy"), calib)
    prof, qdq = os.path.join(work, "profile.json"), os.path.join(work, m + ".qdq.onnx")
    run([glowc, "profile", onnx_path, "--input", "input=" + os.path.join(work, "calib.npy"),
         "-o", prof])
    run([glowc, "quantize", onnx_path, "--quantize=" + prof, "-o", qdq])
    js = os.path.join(ROOT, "tests", "bench", "ort_bench.js")
    # The QDQ export quantizes without cross-layer equalisation (it keeps the
    # source's weights): glowc int8 here is that same quantized model.
    same = ["--quant-equalize=off"]
    times, notes = {}, []
    for t in (1, 2):
        common = ["--backend=cpu", "--threads", str(t), "--iters", str(iters),
                  "--input", "input=" + inp]
        pin = cpu if t == 1 else None  # as make bench pins them
        got, outs = bench.timed_rounds(
            [("gf", [glowc, "bench", onnx_path] + common, None),
             ("gq", [glowc, "bench", onnx_path, "--quantize=" + prof] + same + common, None),
             ("of", ["node", js, onnx_path, str(t), str(iters), inp], node_env),
             ("oq", ["node", js, qdq, str(t), str(iters), inp], node_env)], rounds, pin)
        errs = {k: None if bench.median_of(v) is not None else outs[k] for k, v in got.items()}
        for key in got:
            times[key, t] = bench.median_of(got[key])
        ratios = bench.round_ratios(got["gq"], got["oq"])
        times["ratio", t] = (float(np.median(ratios)), min(ratios), max(ratios)) if ratios else None
        e1, e2, e3, e4 = errs["gf"], errs["gq"], errs["of"], errs["oq"]
        notes += [e for e in (e1, e3, e4) if e]
        if e2 and t == 1:
            notes.append("glowc int8 on --backend=cpu: " + e2 +
                         " -- no native int8 kernels yet; the interpreter is not a fair "
                         "comparison, so glowc's float32 times stand beside ORT's")
    # Outputs on the model's input: glowc float32 (cpu), glowc int8
    # (interpreter), ORT on the QDQ model.
    outs = {}
    for key, cmd in (("float", [glowc, "run", onnx_path, "--backend=cpu"]),
                     ("int8", [glowc, "run", onnx_path, "--quantize=" + prof] + same)):
        d = os.path.join(work, key)
        run(cmd + ["--input", "input=" + inp, "--output-dir", d])
        outs[key] = np.load(os.path.join(d, "output.npy"))
    d = os.path.join(work, "ort")
    os.makedirs(d, exist_ok=True)
    run(["node", os.path.join(ROOT, "tests", "difftest", "ort_run.js"), qdq, d, "--optimize",
         "input=" + inp], env=node_env)
    outs["ort"] = np.load(os.path.join(d, "output.npy"))
    f, g, o = outs["float"], outs["int8"], outs["ort"]
    step = output_scale(qdq)
    acc = {
        "ort_top1": bool(o.argmax() == f.argmax()),
        "glowc_top1": bool(g.argmax() == f.argmax()),
        "ort_err": float(np.abs(o - f).max()),
        "glowc_err": float(np.abs(g - f).max()),
        "float_range": float(np.abs(f).max()),
        "ort_vs_glowc_steps": float(np.abs(o - g).max() / step) if step else None,
    }
    # Size: the weights glowc's memory plan holds (`glowc mem`), and the
    # executables `compile -o` writes, float32 and int8.
    for key, extra in (("f", []), ("q", ["--quantize=" + prof] + same)):
        m_ = WEIGHTS.search(run([glowc, "mem", onnx_path] + extra))
        acc["weights_" + key] = int(m_.group(1)) if m_ else None
        exe = os.path.join(work, "model_%s.exe" % key)
        run([glowc, "compile", onnx_path, "-o", exe] + extra)
        acc["exe_" + key] = os.path.getsize(exe)
    return times, acc, notes


def cell(x, fmt="%.2f"):
    return "n/a" if x is None else (fmt % x if isinstance(x, float) else str(x))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("glowc")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3,
                    help="times each engine this many times, alternating the order")
    ap.add_argument("--cpu", type=int, default=max(os.sched_getaffinity(0)),
                    help="the CPU single-threaded runs are pinned to (see bench.py)")
    a = ap.parse_args()
    if a.rounds < 1:
        sys.exit("bench-quant: --rounds %d: at least 1" % a.rounds)
    if a.cpu not in os.sched_getaffinity(0):
        sys.exit("bench-quant: --cpu %d: not one of this process's CPUs %s"
                 % (a.cpu, sorted(os.sched_getaffinity(0))))
    if not shutil.which("node") or not (shutil.which("npm") or os.path.isdir(
            os.path.join(bench.ORT_DIR, "node_modules", "onnxruntime-node"))):
        sys.exit("bench-quant: needs node and npm (Debian: apt-get install nodejs npm) for "
                 "ONNX Runtime (onnxruntime-node); nothing was run")
    glowc = os.path.abspath(a.glowc)
    models = a.models.split(",")
    subprocess.run([sys.executable, os.path.join(ROOT, "fixtures", "models", "export_models.py"),
                    os.path.join(ROOT, "build", "models")] + models, check=True,
                   stdout=subprocess.DEVNULL)
    bench.ensure_ort()
    node_env = dict(os.environ, NODE_PATH=os.path.join(bench.ORT_DIR, "node_modules"))
    rows, all_notes = [], []
    for m in models:
        times, acc, notes = model_row(glowc, m, a.iters, a.rounds, node_env, a.cpu)
        rows.append((m, times, acc))
        all_notes += ["%s: %s" % (m, n) for n in notes]
        print(m, json.dumps({"%s%d" % k: v for k, v in times.items()}), json.dumps(acc),
              flush=True)
    t = ["| model | threads | glowc f32 ms | glowc int8 ms | ORT f32 ms | ORT QDQ ms | "
         "ORT f32/QDQ | int8 glowc/ORT QDQ (rounds' range) |",
         "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for m, tm, _ in rows:
        for th in (1, 2):
            of, oq, ra = tm["of", th], tm["oq", th], tm["ratio", th]
            t.append("| %s | %d | %s | %s | %s | %s | %s | %s |" % (
                m, th, cell(tm["gf", th]), cell(tm["gq", th]), cell(of), cell(oq),
                cell(of / oq if of and oq else None),
                "%.3f (%.3f-%.3f)" % ra if ra else "n/a"))
    q = ["| model | ORT QDQ top-1 = float | ORT QDQ max err | glowc int8 top-1 = float | "
         "glowc int8 max err | max |output| float | ORT QDQ vs glowc int8 (output steps) |",
         "|---|---|---:|---:|---:|---:|---:|"]
    for m, _, ac in rows:
        q.append("| %s | %s | %s | %s | %s | %s | %s |" % (
            m, "yes" if ac["ort_top1"] else "no", cell(ac["ort_err"], "%.4g"),
            "yes" if ac["glowc_top1"] else "no", cell(ac["glowc_err"], "%.4g"),
            cell(ac["float_range"], "%.4g"), cell(ac["ort_vs_glowc_steps"], "%.0f")))
    z = ["| model | weights f32 bytes | weights int8 bytes | int8/f32 | executable f32 bytes | "
         "executable int8 bytes | int8/f32 |", "|---|---:|---:|---:|---:|---:|---:|"]
    for m, _, ac in rows:
        wf, wq, ef, eq = ac["weights_f"], ac["weights_q"], ac["exe_f"], ac["exe_q"]
        z.append("| %s | %s | %s | %s | %d | %d | %.3f |" % (
            m, cell(wf, "%d"), cell(wq, "%d"), cell(wq / wf if wf and wq else None, "%.3f"),
            ef, eq, eq / ef))
    cpu = open("/proc/cpuinfo").read()
    cpu_name = (re.search(r"model name\s*:\s*(.*)", cpu) or [None, "?"])[1]
    text = ("# int8: glowc against ONNX Runtime on glowc's QDQ models\n\nBatch 1, median of %d "
            "runs after a warm-up, the median of %d rounds in alternating order, on %s (%d cores; "
            "single-threaded runs on cpu %d); profile: the model's input and 7 random images; "
            "default quantization.\n\n"
            % (a.iters, a.rounds, cpu_name, os.cpu_count(), a.cpu) +
            "\n".join(t) + "\n\nOutputs on the model's input, against glowc float32:\n\n" +
            "\n".join(q) + "\n\nSize: the weights of glowc's memory plan (`glowc mem`) and the "
            "executables `glowc compile -o` writes (weights, code and runtime):\n\n" +
            "\n".join(z) + "\n")
    if all_notes:
        text += "\n" + "\n".join("- " + n for n in all_notes) + "\n"
    os.makedirs(os.path.join(ROOT, "out"), exist_ok=True)
    with open(os.path.join(ROOT, "out", "bench-quant.md"), "w") as f:
        f.write(text)
    print("\n" + text)


if __name__ == "__main__":
    main()
