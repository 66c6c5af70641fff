#!/usr/bin/python3
"""make bench-train: glowc's training step against torch's, in one run
(issue 19's figures).

resnet18 (torchvision, random weights, seed 0) exported in train() mode at
opset 13 with a symbolic batch, so its batch norms normalise by the batch's
statistics as torch's do in training; batch 8 of random 224x224 images and
labels; plain SGD (lr 0.01). glowc: `glowc train --backend=cpu` over STEPS
batches per epoch, EPOCHS epochs, the time per step from its epoch lines
(compilation not counted: it comes before the first epoch), the median over
the epochs after the first. torch: the same model and batches, model.train(),
torch.optim.SGD, the median step after one warm-up step. Both with 1 and 2
threads (torch.set_num_threads).

Memory: `glowc mem --train` at batch 8: the arena, the parameters and
outputs (weights in and updated), and the sum the issue compares it with:
weights + gradients (each the size of the weights) + the kept activations,
the forward values the backward part reads (those still live when the
forward part has made its last value).

Usage: bench_train.py GLOWC [--steps N] [--epochs E] [--threads 1,2]"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np

try:
    import torch
    import torchvision
except ImportError:
    sys.exit("bench-train needs python3-torch and python3-torchvision (Debian packages)")

BATCH = 8


def export(path):
    torch.manual_seed(0)
    m = torchvision.models.resnet18(num_classes=1000)
    m.train()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(m, torch.randn(2, 3, 224, 224), path, opset_version=13,
                          input_names=["image"], output_names=["logits"],
                          dynamic_axes={"image": {0: "batch"}, "logits": {0: "batch"}},
                          training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)
    torch.manual_seed(0)
    return torchvision.models.resnet18(num_classes=1000)  # the same initial weights


def glowc_steps(glowc, model, x, y, steps, epochs, threads, tmp):
    out = os.path.join(tmp, "trained.onnx")
    cmd = [glowc, "train", model, "--input", "image=" + x, "--labels", y, "--batch", str(BATCH),
           "--epochs", str(epochs), "--lr", "0.01", "--threads", str(threads), "-o", out]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        sys.exit("glowc train failed:\n" + r.stderr)
    times = [float(t) for t in re.findall(r"^epoch \d+/\d+ .* ([0-9.]+) s$", r.stdout, re.M)]
    if len(times) != epochs:
        sys.exit("unexpected glowc train output:\n" + r.stdout)
    return statistics.median(times[1:]) / steps * 1e3


def torch_steps(model, xs, ys, steps, threads):
    torch.set_num_threads(threads)
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    times = []
    for i in range(steps + 1):
        xb = torch.from_numpy(xs[i % steps * BATCH:(i % steps + 1) * BATCH])
        yb = torch.from_numpy(ys[i % steps * BATCH:(i % steps + 1) * BATCH])
        t0 = time.perf_counter()
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(xb), yb)
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    return statistics.median(times[1:]) * 1e3


def memory(glowc, model):
    r = subprocess.run([glowc, "mem", "--train", model, "--dim", "batch=%d" % BATCH, "-O2"],
                       capture_output=True, text=True)
    if r.returncode:
        sys.exit("glowc mem failed:\n" + r.stderr)
    rows = []
    for line in r.stdout.splitlines():
        f = line.split()
        if len(f) >= 6 and f[0].startswith("%"):
            rows.append((int(f[2]), int(f[3]), int(f[4]), f[-1]))
    arena = int(re.search(r"arena (\d+) bytes", r.stdout).group(1))
    io = int(re.search(r"inputs and outputs (\d+) bytes", r.stdout).group(1))
    # Forward values are those of the model's nodes (not a gradient's, the
    # loss's or the step's); the forward part ends when the last of them is
    # made, and those still live then are what the backward part keeps.
    # (Gradient nodes that read only the weights may be scheduled earlier,
    # so the first ".grad" buffer does not mark the end.)
    fwd = [(size, first, last) for size, first, last, src in rows
           if src.startswith("/") and not src.endswith(".grad")]
    end = max(first for _, first, _ in fwd)
    kept = sum(size for size, first, last in fwd if first < end < last)
    return arena, io, kept


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("glowc")
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--threads", default="1,2")
    a = ap.parse_args()
    glowc = os.path.abspath(a.glowc)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "resnet18_train.onnx")
        ref = export(path)
        rng = np.random.default_rng(0)
        xs = rng.standard_normal((a.steps * BATCH, 3, 224, 224)).astype(np.float32)
        ys = rng.integers(0, 1000, a.steps * BATCH).astype(np.int64)
        x, y = os.path.join(tmp, "x.npy"), os.path.join(tmp, "y.npy")
        np.save(x, xs)
        np.save(y, ys)
        print("resnet18, batch %d, SGD, ms per training step (median; load %s)"
              % (BATCH, os.getloadavg()[0]))
        print("| threads | glowc | torch | glowc/torch |")
        print("|---:|---:|---:|---:|")
        for t in [int(v) for v in a.threads.split(",")]:
            g = glowc_steps(glowc, path, x, y, a.steps, a.epochs, t, tmp)
            p = torch_steps(ref, xs, ys, a.steps, t)
            print("| %d | %.0f | %.0f | %.2f |" % (t, g, p, g / p), flush=True)
        arena, io, kept = memory(glowc, path)
        weights = sum(p.numel() * 4 for p in ref.parameters())
        mb = 1 << 20
        print("\nmemory (glowc mem --train, batch %d): arena %.1f MB + parameters and outputs "
              "%.1f MB = %.1f MB; weights %.1f MB + gradients %.1f MB + kept activations %.1f MB "
              "= %.1f MB (ratio %.2f)"
              % (BATCH, arena / mb, io / mb, (arena + io) / mb, weights / mb, weights / mb,
                 kept / mb, (2 * weights + kept) / mb, (arena + io) / (2 * weights + kept)))


if __name__ == "__main__":
    main()
