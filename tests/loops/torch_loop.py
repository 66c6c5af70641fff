"""Data-dependent loops exported from torch (issue 16): a torch.jit.script
module with a while loop on a run-time condition (a Loop whose condition
is known only at run time), a for loop over a data-dependent count (a Loop
whose trip count is a run-time value), torch.arange and Tensor.repeat of
that count (Range and Tile with run-time operands, bounded by the count's
value range: a mask's sum is at most its size), exported by
torch.onnx.export at opset 17; and list.append in a for loop over that
count, then torch.stack, torch.cat and len of the list (a Loop carrying a
sequence, which glowc grows like a scan output). The inputs are
--late-inputs, so nothing folds. glowc runs it on the graph interpreter, the low-level interpreter and
native code, for inputs that run the loops 0 and several times, and must
match torch: integers exactly, floats within a relative 1e-5 of the largest
(float32 tanh and a linear layer in another order; measured about 1e-7).
When node and onnxruntime-node are at hand (ORT_NODE_MODULES, or
build/ort/node_modules), ONNX Runtime's outputs are checked the same way;
otherwise the script says ORT was not run.

Usage: torch_loop.py GLOWC WORKDIR"""
import os
import sys

import numpy as np
import onnx
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import engines  # noqa: E402

glowc, work = sys.argv[1:3]
os.makedirs(work, exist_ok=True)
torch.manual_seed(0)
RTOL = 1e-5


class Loops(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x, limit):
        y = self.lin(x)
        steps = torch.zeros((), dtype=torch.long)
        while bool(y.abs().sum() < limit):
            y = torch.tanh(self.lin(y)) * 2 + y
            steps = steps + 1
        n = (x > 0).sum()
        acc = torch.zeros(4)
        for k in range(int(n)):
            acc = acc + y[0] * (k + 1)
        return y, steps, acc, torch.arange(n) * 3, x[0, :2].repeat(int(n))


class Lists(torch.nn.Module):
    """list.append in a for loop over a data-dependent count, then
    torch.stack and torch.cat of the list and its length (a Loop carrying a
    sequence: SequenceEmpty, SequenceInsert, ConcatFromSequence)."""

    def forward(self, x, limit):
        n = int((x > 0).sum())
        rows = []
        y = x[0]
        for k in range(n):
            y = torch.tanh(y) * 0.5 + k
            rows.append(y)
        return torch.stack(rows), torch.cat(rows), torch.tensor(len(rows))


MODELS = {"loops": (Loops, ["y", "steps", "acc", "ar", "rep"]),
          "lists": (Lists, ["stacked", "cat", "len"])}
x0, limit0 = torch.randn(1, 4), torch.tensor(50.0)
CASES = {"runs": (x0, limit0), "no_iteration": (-x0.abs(), torch.tensor(0.0))}


def compare(label, got, want):
    bad, err = [], 0.0
    for n in want:
        a, r = got[n], want[n]
        if a.shape != r.shape:
            bad.append(f"{n} is {a.shape}, torch {r.shape}")
        elif r.dtype.kind == "i" and not np.array_equal(a, r):
            bad.append(f"{n} differs")
        else:
            e = np.abs(a - r).max(initial=0) / max(np.abs(r).max(initial=1), 1e-30)
            err = max(err, float(e))
            if e > RTOL:
                bad.append(f"{n} differs by {e:.3g} (relative)")
    print(f"{label}: {'matches torch' if not bad else 'DIFFERS: ' + '; '.join(bad)}"
          f" (max rel. error {err:.1e})")
    return not bad


ok = True
for mname, (cls, names) in MODELS.items():
    model = torch.jit.script(cls().eval())
    onnx_file = os.path.join(work, mname + ".onnx")
    torch.onnx.export(model, (x0, limit0), onnx_file, opset_version=17,
                      input_names=["x", "limit"], output_names=names)
    inputs = [i.name for i in onnx.load(onnx_file).graph.input]
    for case, (x, limit) in CASES.items():
        if mname == "lists" and case == "no_iteration":
            continue  # torch.stack of an empty list is torch's error
        files = {}
        for name, v in (("x", x), ("limit", limit)):
            if name in inputs:  # (torch drops an input the model does not read)
                files[name] = os.path.join(work, f"{case}_{name}.npy")
                np.save(files[name], v.numpy())
        with torch.no_grad():
            want = {n: r.numpy() for n, r in zip(names, model(x, limit))}
        for engine, got, err in engines.everywhere(glowc, onnx_file, files, work, mname + case,
                                                   names):
            label = f"{mname} {case} {engine}"
            if err:
                print(f"{label}: FAILED: {err}")
                ok = False
            else:
                ok &= compare(label, got, want)
if not engines.have_ort():
    print(engines.ORT_MISSING)
sys.exit(0 if ok else 1)
