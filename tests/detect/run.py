"""A detection-style head exported from torch (issue 16): a small conv
backbone with random weights, boxes decoded from a grid, scores through a
sigmoid, `torch.nonzero` on the score threshold and `torchvision.ops.nms` --
NonZero, Gather and NonMaxSuppression in ONNX, every result after them
bounded-dynamic. The image is a --late-input, so nothing folds. glowc runs
it on the graph interpreter, the low-level interpreter and native code, and
must keep exactly the boxes torch keeps (same count, same indices) with the
same coordinates and scores within a relative 1e-5 of the largest (float32
convolutions summed in another order; measured about 1e-7). When node and
onnxruntime-node are at hand (ORT_NODE_MODULES, or build/ort/node_modules),
ONNX Runtime's outputs are checked the same way; otherwise the script says
ORT was not run.

Usage: run.py GLOWC WORKDIR"""
import os
import sys

import numpy as np
import torch
import torchvision

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import engines  # noqa: E402

glowc, work = sys.argv[1:3]
os.makedirs(work, exist_ok=True)
torch.manual_seed(0)
RTOL = 1e-5


class Det(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.box = torch.nn.Conv2d(8, 4, 1)
        self.cls = torch.nn.Conv2d(8, 1, 1)

    def forward(self, x):
        f = torch.relu(self.conv(x))
        raw = self.box(f).permute(0, 2, 3, 1).reshape(-1, 4)
        h, w = x.shape[2], x.shape[3]
        ys = torch.arange(h, dtype=torch.float32).view(h, 1).expand(h, w).reshape(-1)
        xs = torch.arange(w, dtype=torch.float32).view(1, w).expand(h, w).reshape(-1)
        cx, cy = xs + torch.tanh(raw[:, 0]), ys + torch.tanh(raw[:, 1])
        bw, bh = torch.exp(raw[:, 2]) * 2, torch.exp(raw[:, 3]) * 2
        boxes = torch.stack([cx - bw / 2, cy - bh / 2, cx + bw / 2, cy + bh / 2], dim=1)
        scores = torch.sigmoid(self.cls(f)).reshape(-1)
        keep = torch.nonzero(scores > 0.5).squeeze(1)
        boxes, scores = boxes[keep], scores[keep]
        idx = torchvision.ops.nms(boxes, scores, 0.3)
        return boxes[idx], scores[idx], keep[idx].float()


model = Det().eval()
x = torch.randn(1, 3, 12, 12)
xfile = os.path.join(work, "x.npy")
np.save(xfile, x.numpy())
onnx_file = os.path.join(work, "det.onnx")
NAMES = ["boxes", "scores", "keep"]
with torch.no_grad():
    want = {n: r.numpy() for n, r in zip(NAMES, model(x))}
    torch.onnx.export(model, (x,), onnx_file, opset_version=13, input_names=["x"],
                      output_names=NAMES)


def compare(label, got):
    bad = []
    for n in NAMES:
        a, r = got[n], want[n]
        if a.shape != r.shape:
            bad.append(f"{n} is {a.shape}, torch {r.shape}")
        elif n == "keep" and not np.array_equal(a, r):
            bad.append("other boxes kept")
        elif np.abs(a - r).max(initial=0) > RTOL * np.abs(r).max(initial=1):
            bad.append(f"{n} differs by {np.abs(a - r).max():.3g}")
    print(f"{label}: {len(want['keep'])} boxes kept, "
          f"{'matches torch' if not bad else 'DIFFERS: ' + '; '.join(bad)}")
    return not bad


ok = True
for engine, got, err in engines.everywhere(glowc, onnx_file, {"x": xfile}, work, "", NAMES):
    if err:
        print(f"{engine}: FAILED: {err}")
        ok = False
    else:
        ok &= compare(engine, got)
if not engines.have_ort():
    print(engines.ORT_MISSING)
sys.exit(0 if ok else 1)
