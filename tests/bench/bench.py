#!/usr/bin/python3
"""make bench: glowc's CPU backend against ONNX Runtime, in one run.

For every model of the benchmark set (exported by fixtures/models/
export_models.py: random weights, fixed seed, batch 1), times inference with
glowc (`glowc bench --backend=cpu`, the JIT-compiled program) and with ONNX
Runtime (onnxruntime-node from npm, graph optimisations on), single-threaded
and with both cores, on the same input, and prints a table with the ratio
glowc/ORT; the table also goes to out/bench.md. Medians over ITERS runs after
a warm-up; both sides see the same machine at the same time.

Usage: bench.py GLOWC [--models m1,m2] [--iters N]
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MODELS = ["resnet18", "resnet50", "mobilenet_v2", "squeezenet1_1", "densenet121",
          "shufflenet_v2_x1_0", "efficientnet_b0", "transformer_encoder"]
ORT_DIR = os.path.join(ROOT, "build", "ort")
TIMING = re.compile(r"median ([0-9.]+) ms, min ([0-9.]+) ms")


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


def timing(cmd, env=None):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    m = TIMING.search(r.stdout)
    if r.returncode or not m:
        return None, (r.stderr.strip().splitlines() or ["?"])[-1]
    return float(m.group(1)), None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("glowc")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--iters", type=int, default=20)
    a = ap.parse_args()
    models = a.models.split(",")
    mdir = os.path.join(ROOT, "build", "models")
    subprocess.run([sys.executable, os.path.join(ROOT, "fixtures", "models", "export_models.py"),
                    mdir] + models, check=True, stdout=subprocess.DEVNULL)
    ensure_ort()
    node_env = dict(os.environ, NODE_PATH=os.path.join(ORT_DIR, "node_modules"))
    js = os.path.join(ROOT, "tests", "bench", "ort_bench.js")
    cpu = open("/proc/cpuinfo").read()
    cpu_name = (re.search(r"model name\s*:\s*(.*)", cpu) or [None, "?"])[1]
    rows = []
    for m in models:
        onnx = os.path.join(mdir, m + ".onnx")
        inp = os.path.join(mdir, m + ".input.npy")
        row = [m]
        notes = []
        for threads in (1, 2):
            g, gerr = timing([a.glowc, "bench", onnx, "--backend=cpu", "--threads", str(threads),
                              "--iters", str(a.iters), "--input", "input=" + inp])
            o, oerr = timing(["node", js, onnx, str(threads), str(a.iters), inp], env=node_env)
            row += [g, o, (g / o) if g and o else None]
            notes += [e for e in (gerr, oerr) if e]
        rows.append((row, notes))
        print(fmt_row(row), flush=True)
    table = ["| model | glowc 1T ms | ORT 1T ms | glowc/ORT 1T | glowc 2T ms | ORT 2T ms | glowc/ORT 2T |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for row, notes in rows:
        table.append("| " + " | ".join(cell(x) for x in row) + " |")
    text = ("# glowc vs ONNX Runtime\n\nBatch 1, median of %d runs after a warm-up, on %s "
            "(%d cores). ORT: onnxruntime-node, graph optimisations on.\n\n" %
            (a.iters, cpu_name, os.cpu_count()) + "\n".join(table) + "\n")
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
