#!/usr/bin/python3
"""Kernel cases for the int8 convolutions on aarch64: one .hl function of
qlinear_conv nodes over the shape classes of k_qconvp.c's packed kernel and
k_qconv.c's fully connected rows (strides 1-3, dilation, padding on each
side, pointwise, 1-3 input channels past a multiple of four, weights
packed 4, 16 and 64 rows a group (1x1 convs too), maps whose
flattened rows end a tile with 1-4 vectors, batch 2, u8 and i8 activations
and results, multipliers and biases that the sdot tile requantizes itself
and ones it leaves to the row store, 1x1 maps that are one dot product per
row), with random weights and inputs (seed 0).

`write(dir)` writes cases.hl and one .npy per input and returns the
--input arguments; tests/aarch64/run.py compiles the function for aarch64
with and without dotprod, runs both under qemu and requires the
interpreter's bytes (and the host's). Exact: integer sums in any order, the
interpreter's requantization.
"""
import os

import numpy as np


def out_side(n, k, s, d, p0, p1):
    return (n + p0 + p1 - d * (k - 1) - 1) // s + 1


def cases(rng):
    """(name, dict) of each case."""
    out = []
    # (batch, cin, cout, h, w, kh, kw, stride, dilation, pads)
    shapes = [
        (1, 4, 4, 8, 8, 1, 1, 1, 1, (0, 0, 0, 0)),      # pointwise, one tile
        (1, 16, 8, 12, 12, 1, 1, 1, 1, (0, 0, 0, 0)),   # pointwise, 144 = 2 tiles + 1 vector
        (1, 8, 12, 9, 9, 3, 3, 1, 1, (1, 1, 1, 1)),     # 3x3 same
        (2, 5, 8, 10, 9, 3, 3, 2, 1, (1, 0, 1, 1)),     # 5 channels, stride 2, batch 2
        (1, 3, 16, 17, 17, 3, 3, 2, 1, (1, 1, 1, 1)),   # 3 channels (mobilenet's first)
        (1, 7, 4, 11, 13, 5, 3, 1, 2, (2, 1, 2, 1)),    # dilation 2, 5x3
        (1, 12, 8, 14, 14, 3, 3, 3, 1, (0, 2, 1, 0)),   # stride 3, uneven pads
        (1, 32, 8, 7, 7, 3, 3, 1, 1, (1, 1, 1, 1)),     # 7x7: 49 positions
        (1, 6, 4, 20, 6, 1, 3, 1, 1, (0, 1, 0, 1)),     # 1x3
        (1, 64, 12, 16, 16, 1, 1, 2, 1, (0, 0, 0, 0)),  # pointwise stride 2
        (1, 9, 4, 24, 24, 3, 3, 1, 1, (1, 1, 1, 1)),    # several bands
        # weights packed 16 and 64 rows a group (core/qpack.h: small maps,
        # M a multiple of 16, K = C' taps >= 1024), which the sdot tile
        # steps through by the group's rows
        (1, 116, 16, 7, 7, 3, 3, 1, 1, (1, 1, 1, 1)),   # G 16 on 7x7
        (1, 116, 64, 10, 10, 3, 3, 2, 1, (1, 1, 1, 1)),  # G 64, stride 2 onto 5x5
        # 1x1 packed 16 rows a group (49 positions or fewer, K >= 1024),
        # and stride 1 without padding over several bands: the band's
        # words one run of the plane (k_qconvp.c's fill_band)
        (1, 1024, 16, 7, 7, 1, 1, 1, 1, (0, 0, 0, 0)),  # 1x1 G 16 on 7x7
        (1, 4, 4, 40, 30, 3, 3, 1, 1, (0, 0, 0, 0)),    # 3x3 unpadded, three bands
    ]
    for i, (n, c, m, h, w, kh, kw, s, d, pads) in enumerate(shapes):
        out.append(("conv%d" % i, dict(n=n, c=c, m=m, h=h, w=w, kh=kh, kw=kw, s=s, d=d, pads=pads,
                                       fc=False)))
    for i, c in enumerate((7, 64, 100, 300, 1280)):  # fully connected: 1x1 maps
        out.append(("fc%d" % i, dict(n=1, c=c, m=8 + 4 * (i % 2), h=1, w=1, kh=1, kw=1, s=1, d=1,
                                     pads=(0, 0, 0, 0), fc=True)))
    kinds = [("u8", "u8"), ("i8", "u8"), ("u8", "i8"), ("i8", "i8")]
    for i, (_, c) in enumerate(out):
        c["ex"], c["ey"] = kinds[i % 4]
        # every third case: multipliers of 1/4 and more (the row store's
        # requantization, not the tile's), small weights keeping sums small
        c["big"] = i % 3 == 2
        c["huge_bias"] = i == 4  # a bias the tile may not start from
    return out


def dense(a):
    return "dense<[%s]>" % ", ".join(str(v) for v in a.reshape(-1).tolist())


def fmt(v):
    return "%.9g" % v


def write(directory, seed=0):
    """cases.hl and its inputs in directory; returns (path, --input specs, names)."""
    rng = np.random.RandomState(seed)
    params, body, results, outs, specs = [], [], [], [], []
    for name, c in cases(rng):
        n, ci, m, h, w, kh, kw, s, d = (c[k] for k in ("n", "c", "m", "h", "w", "kh", "kw", "s", "d"))
        pt, pl, pb, pr = c["pads"]
        oh, ow = out_side(h, kh, s, d, pt, pb), out_side(w, kw, s, d, pl, pr)
        ex, ey = c["ex"], c["ey"]
        lo, hi = (0, 256) if ex == "u8" else (-128, 128)
        xz = rng.randint(lo, hi)
        if c["big"]:  # near x_zp, so that sums times multipliers near 1 stay in range
            x = np.clip(xz + rng.randint(-6, 7, (n, ci, h, w)), lo, hi - 1)
        else:
            x = rng.randint(lo, hi, (n, ci, h, w))
        x = x.astype(np.uint8 if ex == "u8" else np.int8)
        path = os.path.join(directory, "x_%s.npy" % name)
        np.save(path, x)
        specs.append("x_%s=%s" % (name, path))
        if c["big"]:  # sparse -1/0/1
            wt = rng.choice([-1, 0, 0, 0, 1], (m, ci, kh, kw)).astype(np.int8)
        else:
            wt = rng.randint(-128, 128, (m, ci, kh, kw)).astype(np.int8)
        k = ci * kh * kw
        xs, ws = 0.02, rng.uniform(0.005, 0.02, m)
        # y's scale puts the typical sum some 40 steps from y_zp
        dx = x.astype(np.float64) - xz
        spread = np.sqrt(k * np.mean(dx * dx) * np.mean(wt.astype(np.float64) ** 2))
        ys = xs * ws.mean() * spread / 40.0
        if c["big"]:
            ys = xs * ws.min() * 1.5  # multipliers about 0.7-2.7
        yz = rng.randint(-40, 40) + (128 if ey == "u8" else 0)
        bias = rng.randint(-20, 20, m) if c["big"] else rng.randint(-3000, 3000, m)
        bias = bias.astype(np.int64)
        if c["huge_bias"]:
            bias[::2] = 2 ** 31 - 2 - k * 255 * 128
        params.append("%%x_%s: %s<%dx%dx%dx%d>" % (name, ex, n, ci, h, w))
        p = "%s_" % name
        body += [
            "  %%%sxs = constant f32<> dense<[%s]>" % (p, fmt(xs)),
            "  %%%sxz = constant %s<> dense<[%d]>" % (p, ex, xz),
            "  %%%sw = constant i8<%dx%dx%dx%d, axis=0> %s" % (p, m, ci, kh, kw, dense(wt)),
            "  %%%sws = constant f32<%d> dense<[%s]>" % (p, m, ", ".join(fmt(v) for v in ws)),
            "  %%%swz = constant i8<%d> splat<0>" % (p, m),
            "  %%%sys = constant f32<> dense<[%s]>" % (p, fmt(ys)),
            "  %%%syz = constant %s<> dense<[%d]>" % (p, ey, yz),
            "  %%%sb = constant i32<%d> %s" % (p, m, dense(bias)),
            "  %%%sy = qlinear_conv(%%x_%s, %%%sxs, %%%sxz, %%%sw, %%%sws, %%%swz, %%%sys, %%%syz, "
            "%%%sb) {kernel=[%d,%d], strides=[%d,%d], dilations=[%d,%d], pads=[%d,%d,%d,%d]} : "
            "%s<%dx%dx%dx%d>" % (p, name, p, p, p, p, p, p, p, p, kh, kw, s, s, d, d, pt, pl, pb,
                                 pr, ey, n, m, oh, ow),
        ]
        results.append("y_%s: %s<%dx%dx%dx%d>" % (name, ey, n, m, oh, ow))
        outs.append("%%%sy" % p)
    text = "\n".join(
        ["// Generated by tests/aarch64/qconv_cases.py (seed %d)." % seed,
         "func @qconv_cases(%s) -> (%s) {" % (", ".join(params), ", ".join(results))]
        + body + ["  return %s" % ", ".join(outs), "}", ""])
    path = os.path.join(directory, "cases.hl")
    with open(path, "w") as f:
        f.write(text)
    return path, specs, [r.split(":")[0] for r in results]


if __name__ == "__main__":
    import sys
    print(write(sys.argv[1] if len(sys.argv) > 1 else "."))
