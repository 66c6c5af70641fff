"""Shared by the training checks: the models (torch), sklearn's digits split,
glowc's shuffle replayed, and running `glowc train`."""
import os
import subprocess
import sys

import numpy as np
import onnx
import torch
import torch.nn as nn
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
GLOWC = os.environ.get("GLOWC", os.path.join(ROOT, "build", "glowc"))


# The bundled digits model's architecture, from the script that trains it.
sys.path.insert(0, os.path.join(ROOT, "fixtures", "models"))
from train_digits import DigitsNet  # noqa: E402,F401


class Mlp(nn.Module):
    """64 -> 32 -> tanh -> 16 -> sigmoid -> 10 over the flattened image."""

    def __init__(self):
        super().__init__()
        self.l1, self.l2, self.l3 = nn.Linear(64, 32), nn.Linear(32, 16), nn.Linear(16, 10)

    def forward(self, x):
        x = torch.flatten(x, 1)
        return self.l3(torch.sigmoid(self.l2(torch.tanh(self.l1(x)))))


class BnNet(nn.Module):
    """DigitsNet with training-mode batch norms (after the relus, so that
    torch's export does not fold them into the convolutions)."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.BatchNorm2d(8), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.BatchNorm2d(16), nn.MaxPool2d(2))
        self.classifier = nn.Linear(16 * 2 * 2, 10)
        # statistics and affine parameters away from 0 and 1, so that a rule
        # that ignored one of them would show
        for m in self.features:
            if isinstance(m, nn.BatchNorm2d):
                with torch.no_grad():
                    m.running_mean.uniform_(-0.5, 0.5)
                    m.running_var.uniform_(0.5, 2.0)
                    m.weight.uniform_(0.5, 1.5)
                    m.bias.uniform_(-0.2, 0.2)

    def forward(self, x):
        return self.classifier(torch.flatten(self.features(x), 1))


def digits_split():
    """80% train, 20% held out, images / 16 as f32 [N,1,8,8], labels i64."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    d = load_digits()
    x = (d.images / 16.0).astype(np.float32)[:, None, :, :]
    y = d.target.astype(np.int64)
    return train_test_split(x, y, test_size=0.2, random_state=0, stratify=y)


def export(model, path, sample):
    """ONNX (opset 13) with a dynamic batch axis, so `--batch` can bind it."""
    model.eval()
    torch.onnx.export(model, torch.from_numpy(sample), path, input_names=["image"],
                      output_names=["logits"], opset_version=13,
                      dynamic_axes={"image": {0: "batch"}, "logits": {0: "batch"}})


def initializers(path):
    return {t.name: numpy_helper.to_array(t) for t in onnx.load(path).graph.initializer}


def splitmix_shuffle(n, state):
    """tui/cmd_train.c's shuffle (splitmix64, Fisher-Yates); returns the order
    and the new state."""
    mask = (1 << 64) - 1
    order = list(range(n))
    for i in range(n - 1, 0, -1):
        state = (state + 0x9e3779b97f4a7c15) & mask
        z = state
        z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & mask
        z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & mask
        z ^= z >> 31
        j = z % (i + 1)
        order[i], order[j] = order[j], order[i]
    return order, state


def splitmix_uniform(n, state):
    """tui/cmd_train.c's dropout noise: n uniform [0, 1) floats of 24 bits
    from splitmix64; returns them (float32) and the new state."""
    mask = (1 << 64) - 1
    out = np.empty(n, np.float32)
    for i in range(n):
        state = (state + 0x9e3779b97f4a7c15) & mask
        z = state
        z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & mask
        z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & mask
        z ^= z >> 31
        out[i] = (z >> 40) * 2.0 ** -24
    return out, state


NOISE_STREAM = 0x6a09e667f3bcc909  # cmd_train.c: the noise's seed is the shuffle's xor this


def glowc_train(model, x, y, out, *args):
    """Runs glowc train; returns its stdout (raises with its stderr on failure)."""
    cmd = [GLOWC, "train", model, "--input", "image=" + x, "--labels", y, "-o", out,
           *[str(a) for a in args]]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.stderr.write(r.stdout + r.stderr)
        raise SystemExit("glowc train failed: " + " ".join(cmd))
    return r.stdout
