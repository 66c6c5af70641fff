#!/usr/bin/python3
"""The differential tester: random valid models (gen.py), run by glowc in
several configurations, every output compared.

usage: difftest.py GLOWC [--seeds N] [--first S] [--jobs J] [--out DIR] [--ort]
                   [--native-every K] [--no-minimise] [--keep] [--break-pass PASS]

For each seed, the model runs as
    O0-interp   glowc run -O0                       the imported graph (the reference)
    O2-interp   glowc run -O2                       after the graph passes
    O2-lir      glowc run -O2 --backend=interp-lir  the allocated low-level program
    O2-cpu      glowc run -O2 --backend=cpu         native code (--fallback=interp:
                                                    operators libjit lacks run interpreted)
and with --ort also under ONNX Runtime (onnxruntime-node in build/ort), which
is then the reference that every glowc configuration is compared with.

Tolerance: out and ref agree where |out - ref| <= RTOL |ref| + ATOL * scale,
scale = max(1, max |ref| over that output); NaN matches NaN, an infinity
itself. Why: the configurations legitimately differ only in rounding --
sums in another order or with FMA (conv, matmul, reductions: at most
gamma_n ~ n 6e-8 of the sum of magnitudes, n <= a few hundred here), the
vector exp/tanh/sigmoid (2 ulps), folded batchnorm and reciprocals -- which
the generator keeps from being amplified (bounded values, no division by
near-zero, epsilon >= 1e-2): about 1e-5 of a tensor's scale after 25 nodes.
A miscompile moves values by the size of the values themselves. 1e-3 sits
between the two with two orders of magnitude to spare on each side.

A disagreement is saved under OUT/seed-S/ (model.onnx, the inputs, report.txt
saying which outputs of which configuration disagreed and by how much),
minimised (min/model.onnx: outputs dropped, nodes cut from their producers
or bypassed, while the same configuration still disagrees) and diagnosed:
O2-cpu wrong while O2-lir is right is a native kernel (named from the
minimised model's low-level program); otherwise `glowc bisect` names the
pass. Seeds the generator cannot make valid are skipped with its message; a
crash of the generator fails the run. The last line is
`N passed, N failed, N skipped`; exit status 1 when anything failed.
"""
import argparse
import concurrent.futures as cf
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback

import numpy as np
import onnx
from onnx import helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
ORT_DIR = os.environ.get("DIFFTEST_ORT_DIR", os.path.join(ROOT, "build", "ort"))
RTOL, ATOL = 1e-3, 1e-3
TIMEOUT = 300

CONFIGS = [  # name, glowc run arguments
    ("O0-interp", ["-O0"]),
    ("O2-interp", ["-O2"]),
    ("O2-lir", ["-O2", "--backend=interp-lir"]),
    ("O2-cpu", ["-O2", "--backend=cpu", "--fallback=interp"]),
]


class Runner:
    def __init__(self, glowc, ort, extra=()):
        self.glowc = glowc
        self.ort = ort
        self.extra = list(extra)  # for the -O2 runs and bisect (--break-pass: the tester's own test)

    def run(self, config, model, inputs, workdir, threads):
        """{output: array} or an error string ('crash: ...', 'error: ...')."""
        outdir = tempfile.mkdtemp(prefix=config + ".", dir=workdir)
        if config == "ort":
            cmd = ["node", os.path.join(os.path.dirname(__file__), "ort_run.js"), model, outdir]
            cmd += ["%s=%s" % kv for kv in sorted(inputs.items())]
            env = dict(os.environ, NODE_PATH=os.path.join(ORT_DIR, "node_modules"))
        else:
            args = dict(CONFIGS)[config]
            cmd = [self.glowc, "run", model] + args + ["--output-dir", outdir]
            if "-O2" in args:
                cmd += self.extra
            if "--backend=cpu" in args:
                cmd += ["--threads", str(threads)]
            for k, p in sorted(inputs.items()):
                cmd += ["--input", "%s=%s" % (k, p)]
            env = None
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT, env=env)
        except subprocess.TimeoutExpired:
            return "timeout: %s after %d s" % (config, TIMEOUT)
        if r.returncode < 0 or r.returncode > 128:
            return "crash: %s (status %d): %s" % (config, r.returncode, last_line(r.stderr))
        if r.returncode:
            return "error: %s: %s" % (config, last_line(r.stderr))
        outs = {}
        for f in os.listdir(outdir):
            if f.endswith(".npy"):
                outs[f[:-4]] = np.load(os.path.join(outdir, f))
        shutil.rmtree(outdir, ignore_errors=True)
        return outs


def last_line(text):
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    errs = [ln for ln in lines if "error" in ln]
    return (errs or lines or ["(no message)"])[0][:300]


def compare(out, ref):
    """[(output, max |diff|, how many elements beyond tolerance, first index)]."""
    bad = []
    for name, want in ref.items():
        got = out.get(name)
        if got is None or got.shape != want.shape:
            bad.append((name, float("inf"), -1, "shape %s vs %s" % (
                None if got is None else got.shape, want.shape)))
            continue
        w = want.astype(np.float64)
        g = got.astype(np.float64)
        finite = np.isfinite(w)
        scale = max(1.0, float(np.max(np.abs(w[finite]))) if finite.any() else 1.0)
        with np.errstate(invalid="ignore"):
            diff = np.abs(g - w)
            ok = diff <= RTOL * np.abs(w) + ATOL * scale
            ok |= (np.isnan(w) & np.isnan(g)) | (np.isinf(w) & (g == w))
        if not ok.all():
            idx = np.argwhere(~ok)[0]
            d = diff[~ok]
            md = float(np.nanmax(d)) if np.isfinite(d).any() else float("inf")
            bad.append((name, md, int((~ok).sum()), "first at %s: %r vs %r" % (
                tuple(int(i) for i in idx), float(g[tuple(idx)]), float(w[tuple(idx)]))))
    return bad


class Seed:
    """The outcome of one seed."""

    def __init__(self, seed):
        self.seed = seed
        self.status = "passed"  # passed, failed, skipped, generator-crash
        self.message = ""
        self.failures = {}  # config -> text
        self.causes = []    # (config, cause)
        self.native = True


def configs_for(ort):
    names = [c for c, _ in CONFIGS]
    return (["ort"] + names) if ort else names


def check(runner, model_path, inputs, workdir, threads, only=None, native=True):
    """(reference name, {config: outputs or error}, {config: disagreement list or error})."""
    names = [c for c in configs_for(runner.ort) if native or c != "O2-cpu"]
    if only:
        names = [names[0]] + [c for c in only if c != names[0]]
    results = {c: runner.run(c, model_path, inputs, workdir, threads) for c in names}
    ref_name = names[0]
    ref = results[ref_name]
    bad = {}
    if isinstance(ref, str):
        bad[ref_name] = ref
        return ref_name, results, bad
    for c in names[1:]:
        r = results[c]
        if isinstance(r, str):
            bad[c] = r
        else:
            d = compare(r, ref)
            if d:
                bad[c] = d
    return ref_name, results, bad


def describe(bad):
    lines = []
    for c, d in bad.items():
        if isinstance(d, str):
            lines.append("%s: %s" % (c, d))
            continue
        for name, md, n, where in d:
            lines.append("%s: output %s: %s element(s) beyond tolerance, max |diff| %.4g, %s" % (
                c, name, n if n >= 0 else "all", md, where))
    return "\n".join(lines)


def save_case(model, data, folder):
    os.makedirs(folder, exist_ok=True)
    onnx.save(model, os.path.join(folder, "model.onnx"))
    paths = {}
    for k, a in data.items():
        p = os.path.join(folder, k + ".npy")
        np.save(p, a)
        paths[k] = p
    return paths


# ---- minimisation ------------------------------------------------------------

def dce(model):
    """Drops nodes no output needs, and inputs no node reads."""
    g = model.graph
    need = {o.name for o in g.output}
    keep = []
    for n in reversed(list(g.node)):
        if any(o in need for o in n.output):
            keep.append(n)
            need.update(i for i in n.input if i)
    keep.reverse()
    del g.node[:]
    g.node.extend(keep)
    ins = [i for i in g.input if i.name in need]
    del g.input[:]
    g.input.extend(ins)
    inits = [t for t in g.initializer if t.name in need]
    del g.initializer[:]
    g.initializer.extend(inits)
    return model


def value_types(model):
    inf = onnx.shape_inference.infer_shapes(model)
    vt = {}
    for v in list(inf.graph.value_info) + list(inf.graph.input) + list(inf.graph.output):
        vt[v.name] = v
    return vt


def set_nodes(m, nodes):
    nodes = list(nodes)
    del m.graph.node[:]
    m.graph.node.extend(nodes)


def isolate(model, value, vt):
    """The producer of `value` alone, its float inputs from other nodes made
    graph inputs (first), and the cone of `value` (second)."""
    g = model.graph
    producer = {o: n for n in g.node for o in n.output}
    n = producer[value]
    cut = [i for i in n.input if i in producer and i in vt and
           vt[i].type.tensor_type.elem_type == onnx.TensorProto.FLOAT]
    out = []
    for inputs in (cut, []):
        m = onnx.ModelProto()
        m.CopyFrom(model)
        del m.graph.output[:]
        m.graph.output.append(vt[value])
        for i in inputs:
            m.graph.input.append(vt[i])
        gone = set(inputs)
        set_nodes(m, [x for x in m.graph.node if not any(o in gone for o in x.output)])
        out.append(("isolate %s%s" % (n.name, " (cut from its producers)" if inputs else ""),
                    dce(m), inputs))
    return out


def candidates(model):
    """Smaller models, most promising first: fewer outputs, a node cut from its
    producers (its inputs become graph inputs), a node bypassed."""
    g = model.graph
    vt = value_types(model)
    inits = {t.name for t in g.initializer}
    producer = {o: n for n in g.node for o in n.output}
    outs = [o.name for o in g.output]
    if len(outs) > 1:
        for o in outs:
            m = onnx.ModelProto()
            m.CopyFrom(model)
            keep = [x for x in m.graph.output if x.name != o]
            del m.graph.output[:]
            m.graph.output.extend(keep)
            yield "drop output %s" % o, dce(m), []
    # cut: every input a node reads from another node becomes a graph input
    for n in reversed(list(g.node)):
        cut = [i for i in n.input if i in producer and i in vt and
               vt[i].type.tensor_type.elem_type == onnx.TensorProto.FLOAT]
        if not cut:
            continue
        m = onnx.ModelProto()
        m.CopyFrom(model)
        for i in cut:
            m.graph.input.append(vt[i])
        gone = set(cut)
        set_nodes(m, [x for x in m.graph.node if not any(o in gone for o in x.output)])
        yield "cut %s from its producers" % n.name, dce(m), cut
    # bypass: a node whose output has the type of one of its inputs
    for n in g.node:
        if len(n.output) != 1 or n.output[0] not in vt:
            continue
        ot = vt[n.output[0]].type
        for i in n.input:
            if not i or i in inits or i not in vt or vt[i].type != ot:
                continue
            if i in {x.name for x in g.input} and n.output[0] in outs:
                continue  # an output that is an input: not a model glowc need run
            m = onnx.ModelProto()
            m.CopyFrom(model)
            set_nodes(m, [x for x in m.graph.node if x.name != n.name])
            for x in m.graph.node:
                for k, v in enumerate(x.input):
                    if v == n.output[0]:
                        x.input[k] = i
            for o in m.graph.output:
                if o.name == n.output[0]:
                    o.name = i
            names = [o.name for o in m.graph.output]
            if len(set(names)) != len(names):
                continue
            yield "bypass %s" % n.name, dce(m), []
            break


def minimise(runner, model, data, config, folder, threads, budget=30):
    """The smallest model found on which `config` still disagrees; writes it
    to folder/min. Returns (model, data, steps, runs).

    First one run with every value a graph output names the earliest value
    `config` gets wrong; its node alone, then its cone, are tried. Then
    greedily: outputs dropped, nodes cut from their producers, nodes
    bypassed, while it still fails, within `budget` runs."""
    work = tempfile.mkdtemp(prefix="min.", dir=folder)
    rng = np.random.default_rng(0)
    steps, runs = [], 0

    def fails(what, m, new_inputs):
        nonlocal runs, model, data
        try:
            onnx.checker.check_model(m)
        except Exception:
            return False
        d = {k: a for k, a in data.items() if k in {i.name for i in m.graph.input}}
        vt = value_types(m)
        for i in new_inputs:
            shape = [x.dim_value for x in vt[i].type.tensor_type.shape.dim]
            d[i] = rng.uniform(-1, 1, size=shape).astype(np.float32)
        case = os.path.join(work, "try%d" % runs)
        paths = save_case(m, d, case)
        runs += 1
        _, _, bad = check(runner, os.path.join(case, "model.onnx"), paths, case, threads,
                          only=[config])
        shutil.rmtree(case, ignore_errors=True)
        if config in bad and not str(bad[config]).startswith("error: O0"):
            model, data = m, d
            steps.append(what)
            return True
        return False

    # every value an output: which is the first that disagrees?
    vt = value_types(model)
    every = onnx.ModelProto()
    every.CopyFrom(model)
    have = {o.name for o in every.graph.output}
    order = [o for n in model.graph.node for o in n.output
             if o in vt and vt[o].type.tensor_type.elem_type == onnx.TensorProto.FLOAT]
    for o in order:
        if o not in have:
            every.graph.output.append(vt[o])
    case = os.path.join(work, "every")
    paths = save_case(every, data, case)
    runs += 1
    _, _, bad = check(runner, os.path.join(case, "model.onnx"), paths, case, threads,
                      only=[config])
    if isinstance(bad.get(config), list):
        wrong = {name for name, _, _, _ in bad[config]}
        first = next((o for o in order if o in wrong), None)
        if first:
            for what, m, new_inputs in isolate(model, first, vt):
                if fails(what, m, new_inputs):
                    break
    changed = True
    while changed and runs < budget:
        changed = False
        for what, m, new_inputs in candidates(model):
            if runs >= budget:
                break
            if fails(what, m, new_inputs):
                changed = True
                break
    shutil.rmtree(work, ignore_errors=True)
    save_case(model, data, os.path.join(folder, "min"))
    return model, data, steps, runs


def lir_instructions(glowc, model_path):
    r = subprocess.run([glowc, "opt", "-O2", "--emit=lir", model_path], capture_output=True,
                       text=True, timeout=TIMEOUT)
    kinds = []
    in_prog = False
    for ln in r.stdout.splitlines():
        if ln.startswith("program"):
            in_prog = True
            continue
        m = re.match(r"\s+([a-z_0-9]+) @", ln)
        if in_prog and m and m.group(1) not in ("allocactivation", "deallocactivation",
                                                "tensorview", "copy"):
            kinds.append(m.group(1))
    return sorted(set(kinds))


def diagnose(runner, seed, folder, model, data, bad, threads, do_min):
    """Minimises on the first failing configuration and names the cause."""
    order = configs_for(runner.ort)
    failing = [c for c in order if c in bad]
    config = failing[0]
    if isinstance(bad[config], str) and bad[config].startswith(("error:", "crash:", "timeout:")):
        kind = bad[config].split(":")[0]
    else:
        kind = "wrong result"
    report = []
    if do_min:
        mmodel, mdata, steps, runs = minimise(runner, model, data, config, folder, threads)
        report.append("minimised on %s in %d runs: %d -> %d nodes (%s)" % (
            config, runs, len(model.graph.node), len(mmodel.graph.node),
            ", ".join(steps) if steps else "nothing removed"))
        report.append("nodes left: " + " ".join(n.op_type for n in mmodel.graph.node))
        mpath = os.path.join(folder, "min", "model.onnx")
        mins = {k: os.path.join(folder, "min", k + ".npy") for k in mdata}
        _, _, mbad = check(runner, mpath, mins, folder, threads)
        report.append("minimised model:\n  " + describe(mbad).replace("\n", "\n  "))
    else:
        mpath = os.path.join(folder, "model.onnx")
        mins = {k: os.path.join(folder, k + ".npy") for k in data}
        mbad = bad
    # the cause
    if kind != "wrong result":  # glowc's own message says what
        msg = mbad.get(config) if isinstance(mbad.get(config), str) else bad[config]
        return config, re.sub(r"/[^ ]*/", "", msg), report
    if config == "ort" or (runner.ort and "O0-interp" in mbad):
        cause = "import/interpreter (O0-interp differs from ONNX Runtime)"
    elif config == "O0-interp":
        cause = "import (the reference run failed)"
    elif "O2-cpu" in mbad and "O2-lir" not in mbad and "O2-interp" not in mbad:
        cause = "native kernel: " + ", ".join(lir_instructions(runner.glowc, mpath) or ["?"])
    else:
        cmd = [runner.glowc, "bisect", mpath, "-O2"] + runner.extra
        for k, p in sorted(mins.items()):
            cmd += ["--input", "%s=%s" % (k, p)]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT)
        with open(os.path.join(folder, "bisect.txt"), "w") as f:
            f.write("$ %s\n%s%s" % (" ".join(cmd), r.stdout, r.stderr))
        m = re.search(r"FIRST BAD PASS: *([A-Za-z0-9_-]+)", r.stdout)
        cause = "pass " + m.group(1) if m else "bisect named no pass (see bisect.txt)"
    return config, "%s: %s" % (kind, cause), report


def run_seed(runner, seed, out, threads, do_min, keep, native):
    res = Seed(seed)
    res.native = native
    try:
        model, data = gen.generate(seed, runner.ort)
    except gen.Skip as e:
        res.status, res.message = "skipped", str(e)
        return res
    except Exception:
        res.status, res.message = "generator-crash", traceback.format_exc()
        return res
    work = tempfile.mkdtemp(prefix="seed%d." % seed, dir=out)
    try:
        paths = save_case(model, data, work)
        _, _, bad = check(runner, os.path.join(work, "model.onnx"), paths, work, threads,
                          native=native)
        if not bad:
            return res
        res.status = "failed"
        folder = os.path.join(out, "seed-%d" % seed)
        shutil.rmtree(folder, ignore_errors=True)
        save_case(model, data, folder)
        text = describe(bad)
        try:
            config, cause, rep = diagnose(runner, seed, folder, model, data, bad, threads, do_min)
        except Exception:  # the tester's own bug: reported, the disagreement still counts
            config = next(iter(bad))
            cause, rep = "undiagnosed (the tester failed)", [traceback.format_exc()]
        res.failures = {c: d for c, d in bad.items()}
        res.causes = [(c, cause if c == config else "(follows)") for c in bad]
        res.message = "seed %d: %s\ncause: %s (%s)\n%s" % (seed, text, cause, config, "\n".join(rep))
        with open(os.path.join(folder, "report.txt"), "w") as f:
            f.write("glowc difftest, seed %d, %d nodes: %s\n\n%s\n" % (
                seed, len(model.graph.node), " ".join(n.op_type for n in model.graph.node),
                res.message))
        return res
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)


def ensure_ort():
    if os.path.isdir(os.path.join(ORT_DIR, "node_modules", "onnxruntime-node")):
        return None
    if not shutil.which("npm") or not shutil.which("node"):
        return "npm or node is not installed (Debian: apt-get install npm)"
    os.makedirs(ORT_DIR, exist_ok=True)
    env = dict(os.environ, ONNXRUNTIME_NODE_INSTALL="skip")
    try:
        r = subprocess.run(["npm", "install", "--prefix", ORT_DIR, "--no-audit", "--no-fund",
                            "onnxruntime-node@1"], env=env, capture_output=True, text=True,
                           timeout=600)
    except subprocess.TimeoutExpired:
        return "npm install timed out (is the registry reachable?)"
    if r.returncode:
        return "npm could not install onnxruntime-node (is the registry reachable?): " + \
            last_line(r.stderr)
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("glowc")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--first", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "difftest"))
    ap.add_argument("--ort", action="store_true")
    ap.add_argument("--no-minimise", action="store_true")
    ap.add_argument("--keep", action="store_true", help="keep every seed's files")
    ap.add_argument("--break-pass", metavar="PASS",
                    help="make PASS miscompile at -O2 (to see the tester catch and name it)")
    ap.add_argument("--native-every", type=int, default=1,
                    help="native code (O2-cpu) on every K-th seed only (its compile costs "
                         "seconds); 0: never")
    a = ap.parse_args()
    if a.seeds < 1 or a.jobs < 1 or a.native_every < 0:
        sys.exit("difftest: --seeds and --jobs take a number >= 1, --native-every >= 0")
    glowc = os.path.abspath(a.glowc)
    if not os.access(glowc, os.X_OK):
        sys.exit("difftest: %s is not an executable" % a.glowc)
    if a.ort:
        err = ensure_ort()
        if err:
            print("difftest-ort: cannot compare with ONNX Runtime: " + err)
            sys.exit(1)
    os.makedirs(a.out, exist_ok=True)
    runner = Runner(glowc, a.ort, ["--break-pass=" + a.break_pass] if a.break_pass else [])
    seeds = range(a.first, a.first + a.seeds)
    t0 = time.time()
    results = []
    # threads alternate 1 and 2 (every online CPU would oversubscribe with jobs)
    with cf.ThreadPoolExecutor(max_workers=a.jobs) as ex:
        futs = [ex.submit(run_seed, runner, s, a.out, 1 + s % 2, not a.no_minimise, a.keep,
                          a.native_every > 0 and (s - a.first) % a.native_every == 0)
                for s in seeds]
        for f in futs:
            r = f.result()
            results.append(r)
            if r.status == "skipped":
                print("seed %d skipped: %s" % (r.seed, r.message), flush=True)
            elif r.status == "generator-crash":
                print("seed %d: the generator crashed:\n%s" % (r.seed, r.message), flush=True)
            elif r.status == "failed":
                print("FAIL " + r.message.replace("\n", "\n  ") + "\n  saved in %s" %
                      os.path.join(a.out, "seed-%d" % r.seed), flush=True)
    dt = time.time() - t0
    passed = sum(r.status == "passed" for r in results)
    failed = sum(r.status in ("failed", "generator-crash") for r in results)
    skipped = sum(r.status == "skipped" for r in results)
    crashes = sum(r.status == "generator-crash" for r in results)
    by_config, by_cause = {}, {}
    for r in results:
        for c, cause in r.causes:
            by_config[c] = by_config.get(c, 0) + 1
            if cause != "(follows)":
                by_cause[cause] = by_cause.get(cause, 0) + 1
    ran = len(results) - skipped
    native = sum(r.status != "skipped" and getattr(r, "native", False) for r in results)
    print("seeds %d..%d: %d run (%d skipped, %d of them also as native code) in %.1f s, "
          "%.2f models/s, %d job(s)%s" % (
              a.first, a.first + a.seeds - 1, ran, skipped, native, dt, ran / dt if dt else 0,
              a.jobs, ", against ONNX Runtime" if a.ort else ""))
    print("disagreements by configuration: " + (", ".join(
        "%s %d" % kv for kv in sorted(by_config.items())) or "none"))
    print("disagreements by cause: " + ("; ".join(
        "%s: %d" % kv for kv in sorted(by_cause.items())) or "none"))
    if crashes:
        print("the generator crashed on %d seed(s)" % crashes)
    print("%d passed, %d failed, %d skipped" % (passed, failed, skipped))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
