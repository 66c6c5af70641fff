#!/usr/bin/python3
"""glowc's training against torch's, on sklearn's digits (make test-train).

1. Gradients: one glowc SGD step (lr 100, one batch of 64) gives each
   parameter's gradient as (W0 - W1) / 100; torch autograd in double
   precision on the same weights and batch is the reference. Each
   parameter's gradient must agree within 1e-4 of its largest magnitude:
   glowc accumulates in float32 over 64 samples (errors near 1e-6 of the
   scale), a wrong rule is off by the gradient's own size.
2. The first 20 losses of plain SGD (batch 32, lr 0.05) from the same
   initial weights on the same batches (glowc's shuffle replayed here) must
   match torch's (float32) within 1e-3 relative: float32 rounding in two
   summation orders stays near 1e-6 over 20 steps. The same for Adam
   (torch.optim.Adam, non-default betas, eps and weight decay): its step
   divides by sqrt(v), which amplifies rounding in tiny second moments, and
   the limit is the same 1e-3.
3. Training from scratch (the seeded initial weights), glowc and torch with
   the same hyperparameters and batches; the held-out accuracy of the
   weights glowc wrote, evaluated by torch, must reach 97%.
Usage: check_torch.py [--skip-train] [--epochs E] [--backend B]"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (GLOWC, ROOT, BnNet, DigitsNet, Mlp, NOISE_STREAM, digits_split, export,  # noqa: E402
                    glowc_train, initializers, splitmix_shuffle, splitmix_uniform, np, torch)

LR_GRAD = 100.0


def load(model, weights, dtype=torch.float32):
    model.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in weights.items()})
    return model.to(dtype)


def check_gradients(name, cls, tmp, xt, yt, backend):
    init = os.path.join(tmp, name + "_init.onnx")
    torch.manual_seed(0)
    export(cls(), init, xt[:2])
    xs, ys = xt[:64], yt[:64]
    np.save(os.path.join(tmp, "gx.npy"), xs)
    np.save(os.path.join(tmp, "gy.npy"), ys)
    out = os.path.join(tmp, name + "_step.onnx")
    glowc_train(init, os.path.join(tmp, "gx.npy"), os.path.join(tmp, "gy.npy"), out,
                "--epochs", 1, "--batch", 64, "--lr", LR_GRAD, "--backend", backend)
    w0, w1 = initializers(init), initializers(out)
    m = load(cls(), w0, torch.float64)
    loss = torch.nn.functional.cross_entropy(m(torch.from_numpy(xs).double()),
                                             torch.from_numpy(ys))
    loss.backward()
    worst = 0.0
    for k, p in m.named_parameters():
        ref = p.grad.numpy()
        got = (w0[k].astype(np.float64) - w1[k].astype(np.float64)) / LR_GRAD
        err = np.abs(got - ref).max() / max(np.abs(ref).max(), 1e-30)
        worst = max(worst, err)
        print(f"  {name} {k:22s} {str(list(ref.shape)):16s} max|grad| {np.abs(ref).max():.3e}"
              f"  error {err:.2e}")
        if err > 1e-4:
            raise SystemExit(f"FAIL: {name} gradient of {k} off by {err:.2e} of its scale")
    print(f"gradients {name}: every parameter within {worst:.2e} of its scale (limit 1e-4)")


def torch_sgd(model, xt, yt, epochs, batch, lr, momentum, wd, seed, steps=None, log=None,
              adam=None):
    if adam is None:
        opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum, weight_decay=wd)
    else:
        opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=wd, **adam)
    state, losses, times = seed, [], []
    x, y = torch.from_numpy(xt), torch.from_numpy(yt)
    for _ in range(epochs):
        t0 = time.time()
        order, state = splitmix_shuffle(len(xt), state)
        for k in range(len(xt) // batch):
            idx = torch.tensor(order[k * batch:(k + 1) * batch])
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x[idx]), y[idx])
            loss.backward()
            opt.step()
            losses.append(loss.item())
            if steps and len(losses) == steps:
                return losses, times
        times.append(time.time() - t0)
    return losses, times


def check_losses(tmp, xt, yt, backend, adam=False):
    """Plain SGD (lr 0.05), or Adam (lr 0.01, betas 0.8 and 0.99, eps 1e-6,
    weight decay 1e-3: none of torch's defaults, so each option is exercised)."""
    init = os.path.join(tmp, "digits_init.onnx")
    if adam:
        lr, wd, extra = 0.01, 1e-3, ["--optimizer=adam", "--beta1", 0.8, "--beta2", 0.99,
                                    "--eps", 1e-6, "--weight-decay", 1e-3]
        opt = dict(betas=(0.8, 0.99), eps=1e-6)
    else:
        lr, wd, extra, opt = 0.05, 0, [], None
    out = glowc_train(init, os.path.join(tmp, "xt.npy"), os.path.join(tmp, "yt.npy"),
                      os.path.join(tmp, "l.onnx"), "--epochs", 1, "--batch", 32, "--lr", lr,
                      "--print-steps", "--backend", backend, *extra)
    got = [float(v) for v in re.findall(r"step \d+ loss (\S+)", out)][:20]
    torch.set_num_threads(1)
    want, _ = torch_sgd(load(DigitsNet(), initializers(init)), xt, yt, 1, 32, lr, 0, wd, 0, 20,
                        adam=opt)
    worst = max(abs(g - w) / abs(w) for g, w in zip(got, want))
    name = "Adam" if adam else "SGD"
    for i in (0, 9, 19):
        print(f"  {name} step {i + 1:2d}: glowc {got[i]:.6f}  torch {want[i]:.6f}")
    if len(got) < 20 or worst > 1e-3:
        raise SystemExit(f"FAIL: the first 20 {name} losses differ by {worst:.2e} relative "
                         f"(limit 1e-3)")
    print(f"losses ({name}): the first 20 within {worst:.2e} relative of torch's (limit 1e-3)")


def check_batch_norm(tmp, xt, yt, backend):
    """BnNet trained in training mode by both (SGD lr 0.02): the first 20
    losses within 1e-3 relative (float32 in two summation orders; the
    differences grow from 1e-7 at step 1 as rounding is amplified through
    the batch statistics, to about 1e-5 at step 20), and after one step
    every weight and running statistic within 1e-5 of its largest magnitude
    (one step of float32 rounding; a biased variance moves the running
    variance by 1/(n-1) of a tenth of the batch's, near 3e-5 here, a wrong
    momentum by far more)."""
    init = os.path.join(tmp, "bn_init.onnx")
    torch.manual_seed(1)
    export(BnNet(), init, xt[:2])
    w0 = initializers(init)
    if not any(k.endswith("running_mean") for k in w0):
        raise SystemExit("FAIL: the exported BnNet has no batch norm left (folded by export)")
    log = glowc_train(init, os.path.join(tmp, "xt.npy"), os.path.join(tmp, "yt.npy"),
                      os.path.join(tmp, "bn_epoch.onnx"), "--epochs", 1, "--batch", 32,
                      "--lr", 0.02, "--print-steps", "--backend", backend)
    got = [float(v) for v in re.findall(r"step \d+ loss (\S+)", log)][:20]
    torch.set_num_threads(1)
    want, _ = torch_sgd(load(BnNet(), w0).train(), xt, yt, 1, 32, 0.02, 0, 0, 0, 20)
    worst = max(abs(g - w) / abs(w) for g, w in zip(got, want))
    for i in (0, 9, 19):
        print(f"  BN step {i + 1:2d}: glowc {got[i]:.6f}  torch {want[i]:.6f}")
    if len(got) < 20 or worst > 1e-3:
        raise SystemExit(f"FAIL: the first 20 batch-norm losses differ by {worst:.2e} relative "
                         f"(limit 1e-3)")
    # one step on 32 samples
    np.save(os.path.join(tmp, "x32.npy"), xt[:32])
    np.save(os.path.join(tmp, "y32.npy"), yt[:32])
    out = os.path.join(tmp, "bn_step.onnx")
    glowc_train(init, os.path.join(tmp, "x32.npy"), os.path.join(tmp, "y32.npy"), out,
                "--epochs", 1, "--batch", 32, "--lr", 0.02, "--backend", backend)
    m = load(BnNet(), w0).train()
    torch_sgd(m, xt[:32], yt[:32], 1, 32, 0.02, 0, 0, 0)
    w1, wworst = initializers(out), 0.0
    for k, v in m.state_dict().items():
        if k.endswith("num_batches_tracked"):
            continue
        r = v.numpy().astype(np.float64)
        err = np.abs(w1[k].astype(np.float64) - r).max() / max(np.abs(r).max(), 1e-30)
        wworst = max(wworst, err)
        if err > 1e-5:
            raise SystemExit(f"FAIL: after one step {k} is off by {err:.2e} of its scale")
        if k.endswith(("running_mean", "running_var")) and np.array_equal(w1[k], w0[k]):
            raise SystemExit(f"FAIL: {k} did not move")
    print(f"batch norm (training mode): the first 20 losses within {worst:.2e} relative "
          f"(limit 1e-3); weights and running statistics after a step within {wworst:.2e} "
          f"of their scale (limit 1e-5)")


def check_dropout(tmp, xt, yt, backend):
    """The MLP with a dropout (ratio 0.5) after its first activation, trained
    in training mode (SGD lr 0.1, batch 32): glowc draws the dropout's noise
    from its seeded generator, replayed here so that torch applies the same
    masks (keep where noise >= 0.5, times 2). The first 20 losses must match
    within 1e-5 relative: float32 in two summation orders stays near 1e-7,
    while the untrained MLP's losses all sit near ln 10, so that torch without
    the masks is off by only 4e-3 (measured) -- the issue's 1e-3 would leave
    too little margin to catch a wrong mask."""
    import onnx
    from onnx import helper, numpy_helper
    init = os.path.join(tmp, "mlp_drop.onnx")
    torch.manual_seed(2)
    export(Mlp(), init, xt[:2])
    m = onnx.load(init)
    tanh = next(n for n in m.graph.node if n.op_type == "Tanh")
    for n in m.graph.node:
        n.input[:] = ["dropped" if i == tanh.output[0] else i for i in n.input]
    m.graph.initializer.append(numpy_helper.from_array(np.array(0.5, np.float32), "ratio"))
    m.graph.node.insert(list(m.graph.node).index(tanh) + 1,
                        helper.make_node("Dropout", [tanh.output[0], "ratio"], ["dropped"],
                                         name="drop"))
    onnx.save(m, init)
    seed = 5
    log = glowc_train(init, os.path.join(tmp, "xt.npy"), os.path.join(tmp, "yt.npy"),
                      os.path.join(tmp, "drop_out.onnx"), "--epochs", 1, "--batch", 32,
                      "--lr", 0.1, "--seed", seed, "--print-steps", "--backend", backend)
    got = [float(v) for v in re.findall(r"step \d+ loss (\S+)", log)][:20]
    model = load(Mlp(), {k: v for k, v in initializers(init).items() if k != "ratio"})
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    order, _ = splitmix_shuffle(len(xt), seed)
    noise_state, want = seed ^ NOISE_STREAM, []
    x, y = torch.from_numpy(xt), torch.from_numpy(yt)
    for k in range(20):
        idx = torch.tensor(order[k * 32:(k + 1) * 32])
        noise, noise_state = splitmix_uniform(32 * 32, noise_state)
        keep = torch.from_numpy((noise >= 0.5).astype(np.float32).reshape(32, 32)) * 2
        h = torch.tanh(model.l1(torch.flatten(x[idx], 1))) * keep
        out = model.l3(torch.sigmoid(model.l2(h)))
        loss = torch.nn.functional.cross_entropy(out, y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        want.append(loss.item())
    worst = max(abs(g - w) / abs(w) for g, w in zip(got, want))
    for i in (0, 9, 19):
        print(f"  dropout step {i + 1:2d}: glowc {got[i]:.6f}  torch {want[i]:.6f}")
    if len(got) < 20 or worst > 1e-5:
        raise SystemExit(f"FAIL: the first 20 dropout losses differ by {worst:.2e} relative "
                         f"(limit 1e-5)")
    print(f"dropout (training mode, ratio 0.5, the same masks): the first 20 losses within "
          f"{worst:.2e} relative of torch's (limit 1e-5)")


def accuracy(model, x, y):
    with torch.no_grad():
        return float((model(torch.from_numpy(x)).argmax(1).numpy() == y).mean()) * 100


def check_training(tmp, xt, yt, xv, yv, epochs, backend):
    init = os.path.join(tmp, "digits_init.onnx")
    hyper = dict(batch=32, lr=0.1, momentum=0.9, wd=1e-4)
    trained = os.path.join(tmp, "digits_trained.onnx")
    t0 = time.time()
    out = glowc_train(init, os.path.join(tmp, "xt.npy"), os.path.join(tmp, "yt.npy"), trained,
                      "--epochs", epochs, "--batch", hyper["batch"], "--lr", hyper["lr"],
                      "--momentum", hyper["momentum"], "--weight-decay", hyper["wd"],
                      "--validate", os.path.join(tmp, "xv.npy") + "," + os.path.join(tmp, "yv.npy"),
                      "--backend", backend)
    total = time.time() - t0
    sys.stdout.write(out)
    secs = [float(s) for s in re.findall(r"  (\S+) s$", out, re.M)]
    acc = accuracy(load(DigitsNet(), initializers(trained)), xv, yv)
    torch.set_num_threads(2)
    m = load(DigitsNet(), initializers(init))
    _, times = torch_sgd(m, xt, yt, epochs, hyper["batch"], hyper["lr"], hyper["momentum"],
                         hyper["wd"], 0)
    tacc = accuracy(m, xv, yv)
    print(f"training ({backend}, batch 32, SGD lr 0.1 momentum 0.9 weight decay 1e-4, "
          f"{epochs} epochs on {len(xt)} samples):")
    print(f"  glowc: held-out accuracy {acc:.2f}% (its weights, evaluated by torch), "
          f"{np.median(secs) * 1000:.1f} ms per epoch (median), {total:.1f} s in all with compilation")
    print(f"  torch: held-out accuracy {tacc:.2f}%, {np.median(times) * 1000:.1f} ms per epoch "
          f"(median, 2 threads)")
    if acc < 97:
        raise SystemExit(f"FAIL: held-out accuracy {acc:.2f}% < 97%")
    check_trained_runs(tmp, trained, xv)


def check_trained_runs(tmp, trained, xv):
    """The model glowc wrote runs on `glowc run` and on ONNX Runtime (when
    node and onnxruntime-node are at hand) with the held-out images, both
    giving torch's logits for the same weights within 1e-5 of the largest
    (float32, the summation orders differ: about 1e-7 measured)."""
    xf = os.path.join(tmp, "xv.npy")
    with torch.no_grad():
        want = load(DigitsNet(), initializers(trained))(torch.from_numpy(xv)).numpy()
    runs = {}
    out = os.path.join(tmp, "run_trained")
    r = subprocess.run([GLOWC, "run", trained, "--input", "image=" + xf, "--output-dir", out],
                       capture_output=True, text=True)
    if r.returncode:
        raise SystemExit("FAIL: glowc run on the trained model: " + r.stderr)
    runs["glowc run"] = np.load(os.path.join(out, "logits.npy"))
    modules = os.environ.get("ORT_NODE_MODULES") or os.path.join(ROOT, "build", "ort", "node_modules")
    if shutil.which("node") and os.path.isdir(os.path.join(modules, "onnxruntime-node")):
        out = os.path.join(tmp, "ort_trained")
        os.makedirs(out, exist_ok=True)
        r = subprocess.run(["node", os.path.join(ROOT, "tests", "difftest", "ort_run.js"), trained, out,
                            "image=" + xf], capture_output=True, text=True,
                           env=dict(os.environ, NODE_PATH=modules))
        if r.returncode:
            raise SystemExit("FAIL: ONNX Runtime on the trained model: " + r.stderr)
        runs["ONNX Runtime"] = np.load(os.path.join(out, "logits.npy"))
    else:
        print("  ONNX Runtime: not run on the trained model (no node or onnxruntime-node; "
              "set ORT_NODE_MODULES)")
    scale = np.abs(want).max()
    for who, got in runs.items():
        err = np.abs(got - want).max() / scale
        print(f"  the trained model on {who}: {len(xv)} held-out logits within {err:.1e} of torch's "
              f"(limit 1e-5)")
        if got.shape != want.shape or err > 1e-5:
            raise SystemExit(f"FAIL: {who} on the trained model differs from torch by {err:.2e}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--skip-train", action="store_true")
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--backend", default="cpu")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        xt, xv, yt, yv = digits_split()
        for n, v in (("xt", xt), ("yt", yt), ("xv", xv), ("yv", yv)):
            np.save(os.path.join(tmp, n + ".npy"), v)
        check_gradients("mlp", Mlp, tmp, xt, yt, a.backend)
        check_gradients("digits", DigitsNet, tmp, xt, yt, a.backend)
        check_gradients("bn", BnNet, tmp, xt, yt, a.backend)  # training-mode batch norm
        check_losses(tmp, xt, yt, a.backend)
        check_losses(tmp, xt, yt, a.backend, adam=True)
        check_batch_norm(tmp, xt, yt, a.backend)
        check_dropout(tmp, xt, yt, a.backend)
        if not a.skip_train:
            check_training(tmp, xt, yt, xv, yv, a.epochs, a.backend)
    print("PASS")


if __name__ == "__main__":
    main()
