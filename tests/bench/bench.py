#!/usr/bin/python3
"""make bench: glowc's CPU backend against ONNX Runtime, in one run.

For every model of the benchmark set (exported by fixtures/models/
export_models.py: random weights, fixed seed, batch 1, and the larger
inception_v3, vgg16 and resnet50 at batch 8), times inference with glowc
(`glowc bench --backend=cpu`, the JIT-compiled program) and with ONNX
Runtime (onnxruntime-node from npm, graph optimisations on), single-threaded
and with both cores, on the same input, and prints, into out/bench.md too:
- the time table, with the ratio glowc/ORT;
- the arithmetic: the model's GFLOP (conv/gemm/matmul multiply-adds x2,
  `glowc bench --flops`), GFLOP/s of both engines and their share of the FMA
  peak that `glowc bench --per-node` measures (a vector-FMA loop, per thread
  count);
- the first result: ORT's session creation plus first run (in its process,
  node's start not counted) against the wall time of `glowc run
  --backend=cpu` (a process: start, import, compile, run) with the model
  cache empty and full (the kernel engine cached, as after any first use),
  and of `glowc compile -o EXE` plus the executable's first run;
- the per-node profile's top rows for resnet50, single-threaded.
Medians over ITERS runs after a warm-up, in ROUNDS rounds per model and
thread count, the two engines in turn and every other round in the reverse
order (of two like runs in a row the later is the faster, by a few percent);
a time is the median of its rounds, the ratio glowc/ORT the median of the
rounds' own ratios (the host's speed drifts from minute to minute, and both
engines with it), shown with their range. Both sides see the same machine at
the same time. Single-threaded runs of both engines are pinned to the same
CPU (--cpu, default the last one): on a virtual machine the cores need not
be equal (on one of the team's, glowc's resnet50 took 46 ms on cpu 1 and
61 ms on cpu 0, ORT 43 and 48 ms), and a run the scheduler moves between
them measures neither.

Usage: bench.py GLOWC [--models m1,m2] [--iters N] [--rounds R] [--cpu N]
"""
import argparse
import glob
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MODELS = ["resnet18", "resnet50", "mobilenet_v2", "squeezenet1_1", "densenet121",
          "shufflenet_v2_x1_0", "efficientnet_b0", "transformer_encoder",
          "inception_v3", "vgg16", "resnet50_b8"]
ORT_DIR = os.path.join(ROOT, "build", "ort")
TIMING = re.compile(r"median ([0-9.]+) ms, min ([0-9.]+) ms")
FLOPS = re.compile(r"flops ([0-9.]+) GFLOP per run")
FIRST = re.compile(r"first ([0-9.]+) ms")
PEAK = re.compile(r"FMA peak ([0-9.]+) GFLOP/s")
TOP_ROWS = 10


def ensure_ort():
    """onnxruntime-node into build/ort (its install script would fetch GPU
    files; the CPU library ships in the package)."""
    if os.path.isdir(os.path.join(ORT_DIR, "node_modules", "onnxruntime-node")):
        return
    if not shutil.which("npm"):
        sys.exit("bench: npm is not installed (Debian: apt-get install npm)")
    os.makedirs(ORT_DIR, exist_ok=True)
    env = dict(os.environ, ONNXRUNTIME_NODE_INSTALL="skip")
    subprocess.run(["npm", "install", "--prefix", ORT_DIR, "--no-audit", "--no-fund",
                    "onnxruntime-node@1"], check=True, env=env, stdout=subprocess.DEVNULL)


def timing(cmd, env=None, cpu=None):
    """(median ms, stdout) of a `glowc bench` or ort_bench.js run (on CPU
    cpu alone if given), or (None, its last error line)."""
    pin = (lambda: os.sched_setaffinity(0, {cpu})) if cpu is not None else None
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, preexec_fn=pin)
    m = TIMING.search(r.stdout)
    if r.returncode or not m:
        return None, (r.stderr.strip().splitlines() or ["?"])[-1]
    return float(m.group(1)), r.stdout


def timed_rounds(cmds, rounds, cpu=None):
    """cmds: (key, argv, env) triples, each a timing() command. Runs them in
    turn, `rounds` times, every other round in reverse order (of two like
    runs in a row the later is the faster, by a few percent). Returns, per
    key, the times of the rounds it succeeded in (None where it failed) and
    its output: that of a successful run, else its last error line."""
    times, outs = {k: [] for k, _, _ in cmds}, {}
    for r in range(rounds):
        for key, cmd, env in (cmds if r % 2 == 0 else cmds[::-1]):
            ms, out = timing(cmd, env, cpu)
            times[key].append(ms)
            if ms is not None or key not in outs:
                outs[key] = out
    return times, outs


def round_ratios(num, den):
    """The per-round ratios num / den where both runs succeeded."""
    return [a / b for a, b in zip(num, den) if a is not None and b]


def median_of(times):
    ok = [t for t in times if t is not None]
    return statistics.median(ok) if ok else None


def found(pattern, text):
    m = pattern.search(text or "")
    return float(m.group(1)) if m else None


def wall(cmd, env=None):
    """Seconds a command takes, None if it fails."""
    t0 = time.perf_counter()
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    return time.perf_counter() - t0 if r.returncode == 0 else None


def cache_dir():
    e = os.environ
    return e.get("GLOWC_CACHE_DIR") or os.path.join(
        e.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "glowc")


def first_results(glowc, onnx, inp):
    """(glowc run with the model cache empty, then full, compile -o + the
    executable's first run), seconds of wall time. Each in a cache holding
    only the precompiled parts (engine, interface, executable runtime, the
    linker's command), copied
    from the usual cache after a warm-up run has put them there."""
    feed = ["--input", "input=" + inp]
    with tempfile.TemporaryDirectory() as tmp:
        cache = os.path.join(tmp, "cache")
        os.makedirs(cache)
        subprocess.run([glowc, "compile", onnx, "-o", os.path.join(tmp, "warm")],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for f in glob.glob(os.path.join(cache_dir(), "*")):
            if not os.path.basename(f).startswith("model-") and os.path.isfile(f):
                shutil.copy(f, cache)
        env = dict(os.environ, GLOWC_CACHE_DIR=cache)
        run = [glowc, "run", onnx, "--backend=cpu", "--output-dir", tmp] + feed
        cold, warm = wall(run, env), wall(run, env)
        exe = os.path.join(tmp, "model.exe")
        c = wall([glowc, "compile", onnx, "-o", exe], env)
        r = wall([exe, "--output-dir", tmp] + feed) if c else None
        return cold, warm, (c + r) if c and r else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("glowc")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3,
                    help="times each engine this many times, alternating the order")
    ap.add_argument("--cpu", type=int, default=max(os.sched_getaffinity(0)),
                    help="the CPU single-threaded runs are pinned to")
    a = ap.parse_args()
    if a.rounds < 1:
        sys.exit("bench: --rounds %d: at least 1" % a.rounds)
    if a.cpu not in os.sched_getaffinity(0):
        sys.exit("bench: --cpu %d: not one of this process's CPUs %s"
                 % (a.cpu, sorted(os.sched_getaffinity(0))))
    models = a.models.split(",")
    mdir = os.path.join(ROOT, "build", "models")
    subprocess.run([sys.executable, os.path.join(ROOT, "fixtures", "models", "export_models.py"),
                    mdir] + models, check=True, stdout=subprocess.DEVNULL)
    ensure_ort()
    node_env = dict(os.environ, NODE_PATH=os.path.join(ORT_DIR, "node_modules"))
    js = os.path.join(ROOT, "tests", "bench", "ort_bench.js")
    cpu = open("/proc/cpuinfo").read()
    cpu_name = (re.search(r"model name\s*:\s*(.*)", cpu) or [None, "?"])[1]
    # The FMA peak per thread count, and resnet50's per-node rows (1 thread).
    peak, profile = {}, []
    r50 = [os.path.join(mdir, "resnet50.onnx"), "--input",
           "input=" + os.path.join(mdir, "resnet50.input.npy")]
    for threads in (1, 2):
        _, out = timing([a.glowc, "bench", "--backend=cpu", "--per-node", "--threads",
                         str(threads), "--iters", str(a.iters)] + r50,
                        cpu=a.cpu if threads == 1 else None)
        peak[threads] = found(PEAK, out)
        if threads == 1 and out and peak[1]:
            lines = out.splitlines()
            head = next((i for i, l in enumerate(lines) if l.lstrip().startswith("#")), None)
            if head is not None:
                profile = lines[head:head + 1 + TOP_ROWS]
    print("FMA peak: %s GFLOP/s (1 thread), %s GFLOP/s (2 threads)"
          % (cell(peak[1]), cell(peak[2])), flush=True)
    rows, compute, firsts = [], [], []
    for m in models:
        onnx = os.path.join(mdir, m + ".onnx")
        inp = os.path.join(mdir, m + ".input.npy")
        row, crow = [m], [m, None]
        notes = []
        ort_first = None
        for threads in (1, 2):
            pin = a.cpu if threads == 1 else None
            got, outs = timed_rounds(
                [("g", [a.glowc, "bench", onnx, "--backend=cpu", "--flops", "--threads",
                        str(threads), "--iters", str(a.iters), "--input", "input=" + inp], None),
                 ("o", ["node", js, onnx, str(threads), str(a.iters), inp], node_env)],
                a.rounds, pin)
            g, o = median_of(got["g"]), median_of(got["o"])
            gout, oout = outs["g"], outs["o"]
            ratios = round_ratios(got["g"], got["o"])
            ratio = ("%.2f (%.2f-%.2f)" % (statistics.median(ratios), min(ratios), max(ratios))
                     if len(ratios) > 1 else cell(ratios[0]) if ratios else None)
            row += [g, o, ratio]
            notes += [e for e, ok in ((gout, g), (oout, o)) if not ok]
            gflop = found(FLOPS, gout) if g else None
            crow[1] = crow[1] or gflop
            for ms in (g, o):
                rate = gflop / (ms * 1e-3) if gflop and ms else None
                crow += [rate, 100 * rate / peak[threads] if rate and peak[threads] else None]
            if threads == 1 and o:
                ort_first = found(FIRST, oout)
        cold, warm, exe = first_results(a.glowc, onnx, inp)
        of = ort_first * 1e-3 if ort_first else None
        firsts.append([m, of] + [x for t in (cold, warm, exe)
                                 for x in (t, t / of if t and of else None)])
        rows.append((row, notes))
        compute.append(crow)
        print(fmt_row(row), flush=True)
    table = ["| model | glowc 1T ms | ORT 1T ms | glowc/ORT 1T | glowc 2T ms | ORT 2T ms | glowc/ORT 2T |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for row, notes in rows:
        table.append("| " + " | ".join(cell(x) for x in row) + " |")
    ctable = ["| model | GFLOP | glowc 1T GFLOP/s | %peak | ORT 1T GFLOP/s | %peak "
              "| glowc 2T GFLOP/s | %peak | ORT 2T GFLOP/s | %peak |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for crow in compute:
        ctable.append("| " + " | ".join(cell(x) for x in crow) + " |")
    ftable = ["| model | ORT create + first run s | glowc run s (cache empty) | /ORT "
              "| glowc run s (model cached) | /ORT | compile -o + run s | /ORT |",
              "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for f in firsts:
        ftable.append("| " + " | ".join(cell(x) for x in f) + " |")
    text = ("# glowc vs ONNX Runtime\n\nBatch 1 (resnet50_b8: 8), median of %d runs after a "
            "warm-up, in %d rounds of alternating order (the ratio: the median of the rounds' "
            "ratios, and their range), on %s (%d cores; single-threaded runs of both engines on cpu %d). "
            "ORT: onnxruntime-node, graph optimisations on.\n\n"
            % (a.iters, a.rounds, cpu_name, os.cpu_count(), a.cpu) + "\n".join(table) + "\n")
    text += ("\n## Arithmetic\n\nGFLOP per run counted from glowc's program (conv, gemm, "
             "matmul: multiply-adds x2), for both engines. FMA peak (glowc bench --per-node's "
             "vector-FMA loop): %s GFLOP/s with 1 thread, %s with 2.\n\n"
             % (cell(peak[1]), cell(peak[2])) + "\n".join(ctable) + "\n")
    text += ("\n## First result\n\nORT: session creation and the first run, timed inside "
             "node (its start and library load not counted). glowc: wall time of the whole "
             "process (`glowc run --backend=cpu`, default threads), first with no entry of "
             "the model in the cache, then with one; the kernel engine is cached in both "
             "(it is compiled once per glowc build and machine). `compile -o`: writing the "
             "executable, then its first run.\n\n" + "\n".join(ftable) + "\n")
    if profile:
        text += ("\n## resnet50, the per-node profile's top rows (1 thread)\n\n```\n" +
                 "\n".join(profile) + "\n```\n")
    for row, notes in rows:
        for n in notes:
            text += "\n- %s: %s" % (row[0], n)
    os.makedirs(os.path.join(ROOT, "out"), exist_ok=True)
    with open(os.path.join(ROOT, "out", "bench.md"), "w") as f:
        f.write(text + "\n")
    print("\n" + text)


def cell(x):
    if x is None:
        return "n/a"
    if isinstance(x, float):
        return "%.2f" % x
    return str(x)


def fmt_row(row):
    return "  ".join(cell(x).rjust(10) for x in row)


if __name__ == "__main__":
    main()
