"""Exports torchvision 0.14's SSDlite and Faster R-CNN (MobileNetV3 backbone)
with random weights for issue 16's detector figure, with their input image
and torch's own outputs, into OUTDIR (cached: skipped when OUTDIR/stamp
holds this script's hash).

Random weights give near-constant scores on a flat image, so the image is
synthetic with structure (rectangles and gradients at several scales); the
score threshold is lowered so tens of boxes survive NMS (see THRESH).

Usage: export_detectors.py OUTDIR"""
import hashlib
import os
import sys

import numpy as np
import torch
import torchvision

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
me = hashlib.sha256(open(__file__, "rb").read()).hexdigest()
stamp = os.path.join(out, "stamp")
if os.path.exists(stamp) and open(stamp).read() == me:
    sys.exit(0)

SIZE = 320


def image():
    g = torch.Generator().manual_seed(1)
    y, x = torch.meshgrid(torch.linspace(0, 1, SIZE), torch.linspace(0, 1, SIZE), indexing="ij")
    img = torch.stack([x, y, 0.5 * (x + y)])
    for _ in range(12):
        x0, y0 = torch.randint(0, SIZE - 40, (2,), generator=g).tolist()
        w, h = torch.randint(20, 120, (2,), generator=g).tolist()
        img[:, y0:y0 + h, x0:x0 + w] = torch.rand(3, 1, 1, generator=g)
    return img.unsqueeze(0)


D = torchvision.models.detection
MODELS = {
    "ssdlite": lambda: D.ssdlite320_mobilenet_v3_large(weights=None, weights_backbone=None),
    "frcnn": lambda: D.fasterrcnn_mobilenet_v3_large_320_fpn(weights=None, weights_backbone=None),
}
KEEP = 30  # about this many detections per model: tens, as the issue asks


def calibrate(model, x):
    """Fresh BatchNorm statistics (mean 0, variance 1) shrink the activations
    by about 1e-2 per block, so the heads see zeros and every score is
    1/classes. One pass in training mode over three views of the image sets
    the statistics from data (momentum None: their plain average), as a
    trained model's are."""
    model.eval()
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.reset_running_stats()
            m.momentum = None
            m.train()
    with torch.no_grad():
        model([x, x.flip(-1), x.flip(-2)])
    return model.eval()


def set_thresh(model, name, t, n):
    heads = model if name == "ssdlite" else model.roi_heads
    heads.score_thresh, heads.detections_per_img = t, n


def pick_thresh(model, name, x):
    """The score threshold in the widest gap between the sorted scores of
    detections KEEP/2 .. 2*KEEP, so that a score moved by rounding (1e-6)
    does not cross it and the count is the same everywhere."""
    set_thresh(model, name, 0.0, 4 * KEEP)
    with torch.no_grad():
        s = model([x])[0]["scores"].sort(descending=True).values
    lo, hi = KEEP // 2, min(2 * KEEP, len(s) - 1)
    i = max(range(lo, hi), key=lambda i: float(s[i] - s[i + 1]))
    return float(s[i] + s[i + 1]) / 2


x = image()
np.save(os.path.join(out, "image.npy"), x[0].numpy())  # the models take a list of CHW images
for name, make in MODELS.items():
    torch.manual_seed(0)
    model = calibrate(make(), x[0])
    t = pick_thresh(model, name, x[0])
    set_thresh(model, name, t, 4 * KEEP)
    with torch.no_grad():
        r = model([x[0]])[0]
    for k in ("boxes", "scores", "labels"):
        np.save(os.path.join(out, f"{name}.torch.{k}.npy"), r[k].numpy())
    print(f"{name}: score threshold {t:.6g}, {len(r['boxes'])} boxes, scores "
          f"{float(r['scores'].min()):.4g}..{float(r['scores'].max()):.4g}")
    # The outputs in the order of the model's dict (SSD: boxes, scores,
    # labels; Faster R-CNN: boxes, labels, scores), named by its keys.
    torch.onnx.export(model, ([x[0]],), os.path.join(out, name + ".onnx"), opset_version=13,
                      input_names=["image"], output_names=list(r.keys()))
open(stamp, "w").write(me)
