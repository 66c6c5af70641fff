#!/usr/bin/python3
"""Random valid ONNX models from a seed, for the differential tester.

    gen.py SEED OUTDIR [--ort]    writes OUTDIR/model.onnx and OUTDIR/NAME.npy per input

Every shape is valid by construction: each operator is drawn with operands
that already exist and attributes chosen so that its output shape is
computed here, the same way ONNX defines it. Values are kept away from
overflow and from the places where float rounding decides a discontinuous
result, so that any two correct implementations agree within the tester's
tolerance:
  - every value carries a bound on its magnitude; a value past BOUND_MAX is
    scaled back (a Mul by a constant) before anything uses it, and exp-like
    operators only take values below EXP_MAX;
  - Div divides by constants or by values bounded away from 0, Log and Sqrt
    take values bounded below by a positive number (tracked as `lo`);
  - comparisons (the condition of Where) read graph inputs only, which every
    configuration sees bit for bit; casts go f32 -> f64 -> f32, exactly;
  - LayerNormalization's epsilon is at least 1e-2, so that a row of nearly
    equal values is amplified at most tenfold.
With --ort the models also avoid the one place where glowc and ONNX Runtime
differ on purpose (a max pool window wholly inside the padding: -inf in
glowc, -FLT_MAX in ORT; README, "Pooling").

A seed for which no valid model of at least MIN_NODES nodes comes out
raises Skip (the runner reports it, never as a pass); any other exception
is a bug of the generator and fails the run.
"""
import math
import os
import random
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
MIN_NODES, MAX_NODES = 3, 25
BOUND_MAX = 16.0  # magnitudes past this are scaled back before use
EXP_MAX = 8.0     # exp, softplus, sinh, ... take only values this small


class Skip(Exception):
    """The seed cannot give a valid model; the message says why."""


class NoFit(Exception):
    """This operator does not fit the values drawn; try another one."""


class Val:
    def __init__(self, name, shape, bound, lo=None):
        self.name, self.shape, self.bound, self.lo = name, tuple(shape), float(bound), lo
        self.uses = 0


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def conv_out(size, k, s, d, p0, p1):
    span = d * (k - 1) + 1
    return -1 if size + p0 + p1 < span else (size + p0 + p1 - span) // s + 1


def pool_out(size, k, s, d, p0, p1, ceil):
    avail = size + p0 + p1 - (d * (k - 1) + 1)
    if avail < 0:
        return -1
    if not ceil:
        return avail // s + 1
    out = -(-avail // s) + 1
    # A last window starting in the end padding is dropped by newer ONNX
    # (and glowc, torch) but not by older shape inference: avoided.
    return -1 if (out - 1) * s >= size + p0 else out


class Gen:
    def __init__(self, seed, ort=False):
        self.r = random.Random(seed)
        self.np = np.random.default_rng(seed)
        self.ort = ort
        self.nodes, self.inits, self.inputs, self.vals = [], [], [], []
        self.data = {}
        self.n = 0

    # ---- names, constants, inputs ------------------------------------------
    def name(self, base):
        self.n += 1
        return "%s_%d" % (base, self.n)

    def const(self, arr, base="c"):
        nm = self.name(base)
        self.inits.append(numpy_helper.from_array(np.asarray(arr), nm))
        return nm

    def fconst(self, shape, lo=-1.0, hi=1.0):
        a = self.np.uniform(lo, hi, size=shape).astype(np.float32)
        return self.const(a, "w"), a

    def i64(self, values):
        return self.const(np.array(values, dtype=np.int64), "i")

    def new_input(self, shape):
        nm = "in%d" % len(self.inputs)
        self.inputs.append(helper.make_tensor_value_info(nm, TensorProto.FLOAT, list(shape)))
        self.data[nm] = self.np.uniform(-1, 1, size=shape).astype(np.float32)
        v = Val(nm, shape, 1.0)
        v.is_input = True
        self.vals.append(v)
        return v

    def node(self, op, ins, shape, bound, lo=None, **attrs):
        out = self.name(op.lower())
        self.nodes.append(helper.make_node(op, ins, [out], name=out, **attrs))
        v = Val(out, shape, bound, lo)
        self.vals.append(v)
        return v

    def use(self, v):
        v.uses += 1
        return v.name

    # ---- picking operands --------------------------------------------------
    def pick(self, cond=lambda v: True):
        """A value, recent ones more likely (so that chains form)."""
        cands = [v for v in self.vals if cond(v)]
        if not cands:
            raise NoFit()
        w = [1.0 + 3.0 * (i + 1) / len(cands) for i in range(len(cands))]
        v = self.r.choices(cands, weights=w)[0]
        if v.bound > BOUND_MAX:
            v = self.rescale(v)
        return v

    def rescale(self, v):
        s = 1.0 / v.bound
        w = self.const(np.array(s, dtype=np.float32))
        nv = self.node("Mul", [self.use(v), w], v.shape, 1.0)
        return nv

    def rand_shape(self, rank, hi=6):
        return tuple(self.r.randint(1, hi) for _ in range(rank))

    def bcast_shape(self, shape):
        """A shape that broadcasts to `shape`: a suffix, some axes 1."""
        k = len(shape) if self.r.random() < 0.6 else self.r.randint(0, len(shape))
        suf = shape[len(shape) - k:]
        return tuple(d if self.r.random() < 0.7 else 1 for d in suf)

    # ---- operators -----------------------------------------------------------
    def op_conv(self):
        x = self.pick(lambda v: len(v.shape) in (3, 4) and numel(v.shape) <= 10000)
        n, c = x.shape[0], x.shape[1]
        sp = x.shape[2:]
        divs = [g for g in range(1, c + 1) if c % g == 0]
        g = self.r.choice([1, 1, c] + divs)
        m = g * self.r.randint(1, 3 if g > 1 else 6)
        ks, ss, ds, p0, p1, outs = [], [], [], [], [], []
        for size in sp:
            for _ in range(20):
                k = self.r.choice([1, 1, 2, 3, 3])
                s = self.r.choice([1, 1, 2, 3])
                d = self.r.choice([1, 1, 1, 2])
                a = self.r.choice([0, 0, self.r.randint(0, k), self.r.randint(0, k + 1)])
                b = self.r.choice([0, 0, self.r.randint(0, k), self.r.randint(0, k + 1)])
                o = conv_out(size, k, s, d, a, b)
                if 1 <= o <= 26:
                    break
            else:
                raise NoFit()
            ks.append(k), ss.append(s), ds.append(d), p0.append(a), p1.append(b), outs.append(o)
        fan = (c // g) * numel(ks)
        a = 1.0 / math.sqrt(fan)
        w, _ = self.fconst((m, c // g) + tuple(ks), -a, a)
        ins = [self.use(x), w]
        bias = self.r.random() < 0.7
        if bias:
            ins.append(self.fconst((m,), -0.5, 0.5)[0])
        attrs = dict(kernel_shape=ks, strides=ss, dilations=ds, pads=p0 + p1, group=g)
        return self.node("Conv", ins, (n, m) + tuple(outs), x.bound * math.sqrt(fan) + 0.5, **attrs)

    def op_pool(self):
        x = self.pick(lambda v: len(v.shape) in (3, 4))
        kind = self.r.choice(["MaxPool", "AveragePool"])
        ceil = self.r.random() < 0.3
        ks, ss, ds, p0, p1, outs = [], [], [], [], [], []
        for size in x.shape[2:]:
            for _ in range(20):
                k = self.r.randint(1, 3)
                s = self.r.randint(1, 3)
                d = self.r.choice([1, 1, 2]) if kind == "MaxPool" else 1
                a, b = self.r.randint(0, k - 1), self.r.randint(0, k - 1)  # ONNX: pads < kernel
                o = pool_out(size, k, s, d, a, b, ceil)
                if o >= 1 and not (self.ort and kind == "MaxPool" and
                                   self.empty_window(size, k, s, d, a, o)):
                    break
            else:
                raise NoFit()
            ks.append(k), ss.append(s), ds.append(d), p0.append(a), p1.append(b), outs.append(o)
        attrs = dict(kernel_shape=ks, strides=ss, pads=p0 + p1, ceil_mode=int(ceil))
        if kind == "MaxPool":
            attrs["dilations"] = ds
        elif self.r.random() < 0.5:
            attrs["count_include_pad"] = 1
        return self.node(kind, [self.use(x)], x.shape[:2] + tuple(outs), x.bound, **attrs)

    @staticmethod
    def empty_window(size, k, s, d, p0, out):
        for o in range(out):
            if all(not (0 <= o * s - p0 + i * d < size) for i in range(k)):
                return True
        return False

    def op_global_pool(self):
        x = self.pick(lambda v: len(v.shape) >= 3)
        kind = self.r.choice(["GlobalAveragePool", "GlobalMaxPool"])
        return self.node(kind, [self.use(x)], x.shape[:2] + (1,) * (len(x.shape) - 2), x.bound)

    def op_binary(self):
        x = self.pick(lambda v: len(v.shape) >= 1)
        op = self.r.choice(["Add", "Sub", "Mul", "Div"])
        swap = self.r.random() < 0.3 and op != "Div"
        if op == "Div":
            ys = self.bcast_shape(x.shape)
            cands = [v for v in self.vals if v.lo is not None and v.lo >= 0.25 and
                     self.broadcasts(v.shape, x.shape)]
            if cands and self.r.random() < 0.5:
                y = self.r.choice(cands)
                yname, yb, ylo = self.use(y), y.bound, y.lo
            else:
                a = self.np.uniform(0.5, 2.0, size=ys).astype(np.float32)
                a *= self.np.choice(np.array([-1.0, 1.0], dtype=np.float32), size=ys)
                yname, yb, ylo = self.const(a, "w"), 2.0, 0.5
            return self.node("Div", [self.use(x), yname], x.shape, x.bound / ylo)
        # the other operand: an existing value that broadcasts, a constant or a new input
        same = [v for v in self.vals if v is not x and self.broadcasts(v.shape, x.shape)]
        roll = self.r.random()
        if same and roll < 0.5:
            y = self.pick(lambda v: v is not x and self.broadcasts(v.shape, x.shape))
            yname, yb = self.use(y), y.bound
        elif roll < 0.8:
            yname, _ = self.fconst(self.bcast_shape(x.shape))
            yb = 1.0
        else:
            y = self.new_input(self.bcast_shape(x.shape))
            yname, yb = self.use(y), 1.0
        ins = [yname, self.use(x)] if swap else [self.use(x), yname]
        bound = x.bound * yb if op == "Mul" else x.bound + yb
        return self.node(op, ins, x.shape, bound)

    @staticmethod
    def broadcasts(small, big):
        if len(small) > len(big):
            return False
        return all(a == b or a == 1 for a, b in zip(small[::-1], big[::-1]))

    UNARY = [  # op, attrs maker, bound(b), lo, needs
        ("Relu", None, lambda b: b, 0.0, None),
        ("Sigmoid", None, lambda b: 1.0, 0.0, None),
        ("Tanh", None, lambda b: 1.0, None, None),
        ("LeakyRelu", lambda r: dict(alpha=r.choice([0.01, 0.1, 0.3])), lambda b: b, None, None),
        ("Elu", lambda r: dict(alpha=r.choice([1.0, 0.5])), lambda b: b, None, None),
        ("Selu", None, lambda b: 1.06 * b + 1.8, None, None),
        ("Celu", lambda r: dict(alpha=r.choice([1.0, 2.0])), lambda b: b, None, None),
        ("Softplus", None, lambda b: b + 1.0, 0.0, "exp"),
        ("Softsign", None, lambda b: 1.0, None, None),
        ("HardSigmoid", lambda r: dict(alpha=0.2, beta=0.5), lambda b: 1.0, 0.0, None),
        ("HardSwish", None, lambda b: b, None, None),
        ("Abs", None, lambda b: b, 0.0, None),
        ("Neg", None, lambda b: b, None, None),
        ("Exp", None, lambda b: math.exp(b), 0.0, "exp"),
        ("Erf", None, lambda b: 1.0, None, None),
        ("Sin", None, lambda b: 1.0, None, None),
        ("Cos", None, lambda b: 1.0, None, None),
        ("Atan", None, lambda b: 1.6, None, None),
        ("Sqrt", None, lambda b: math.sqrt(b), 0.0, "pos"),
        ("Log", None, lambda b: max(abs(math.log(b)), 2.0), None, "pos"),
        ("Reciprocal", None, lambda b: 4.0, 0.0, "pos"),
    ]

    def op_unary(self):
        op, attrs, fb, lo, need = self.r.choice(self.UNARY)
        if need == "exp":
            x = self.pick(lambda v: v.bound <= EXP_MAX)
        elif need == "pos":
            x = self.pick(lambda v: v.lo is not None and v.lo >= 0.25)
        else:
            x = self.pick()
        a = attrs(self.r) if attrs else {}
        return self.node(op, [self.use(x)], x.shape, fb(x.bound), lo, **a)

    def op_shift_positive(self):
        """sigmoid(x) + c or |x| + c: a value bounded away from 0 for Div, Log, Sqrt."""
        x = self.pick()
        c = self.r.choice([0.5, 1.0, 2.0])
        s = self.node(self.r.choice(["Sigmoid", "Abs"]), [self.use(x)], x.shape, max(1.0, x.bound), 0.0)
        return self.node("Add", [self.use(s), self.const(np.array(c, dtype=np.float32))],
                         x.shape, s.bound + c, c)

    def op_clip(self):
        x = self.pick()
        lo = self.r.choice([-1.0, -0.5, 0.0])
        hi = self.r.choice([0.5, 1.0, 6.0])
        ins = [self.use(x), self.const(np.array(lo, dtype=np.float32))]
        if self.r.random() < 0.8:
            ins.append(self.const(np.array(hi, dtype=np.float32)))
        return self.node("Clip", ins, x.shape, max(abs(lo), min(x.bound, hi)))

    def op_prelu(self):
        x = self.pick(lambda v: len(v.shape) >= 2)
        slope, _ = self.fconst((x.shape[1],) + (1,) * (len(x.shape) - 2), 0.0, 0.5)
        return self.node("PRelu", [self.use(x), slope], x.shape, x.bound)

    def op_matmul(self):
        x = self.pick(lambda v: len(v.shape) >= 2 and v.shape[-1] <= 64)
        k = x.shape[-1]
        n = self.r.randint(1, 12)
        a = 1.0 / math.sqrt(k)
        if self.r.random() < 0.6:
            bshape = (k, n) if self.r.random() < 0.7 else self.bcast_shape(x.shape[:-2]) + (k, n)
            b, _ = self.fconst(bshape, -a, a)
            bb = 1.0
        else:
            y = self.new_input(self.bcast_shape(x.shape[:-2]) + (k, n))
            b, bb = self.use(y), 1.0
            bshape = y.shape
        batch = np.broadcast_shapes(x.shape[:-2], tuple(bshape[:-2]))
        return self.node("MatMul", [self.use(x), b], tuple(batch) + (x.shape[-2], n),
                         x.bound * bb * math.sqrt(k))

    def op_gemm(self):
        x = self.pick(lambda v: len(v.shape) == 2 and v.shape[-1] <= 64)
        ta = self.r.random() < 0.3
        m, k = (x.shape[1], x.shape[0]) if ta else x.shape
        n = self.r.randint(1, 12)
        tb = self.r.random() < 0.5
        a = 1.0 / math.sqrt(k)
        b, _ = self.fconst((n, k) if tb else (k, n), -a, a)
        ins = [self.use(x), b]
        if self.r.random() < 0.7:
            ins.append(self.fconst(self.r.choice([(n,), (1, n), (m, n), (m, 1)]))[0])
        alpha = self.r.choice([1.0, 0.5, 2.0])
        beta = self.r.choice([1.0, 0.5])
        return self.node("Gemm", ins, (m, n), alpha * x.bound * math.sqrt(k) + beta,
                         alpha=alpha, beta=beta, transA=int(ta), transB=int(tb))

    def op_reshape(self):
        x = self.pick()
        total = numel(x.shape)
        dims, rest = [], total
        for _ in range(self.r.randint(0, 3)):
            divs = [d for d in range(1, rest + 1) if rest % d == 0]
            d = self.r.choice(divs)
            dims.append(d)
            rest //= d
        dims.append(rest)
        self.r.shuffle(dims)
        spec = list(dims)
        if self.r.random() < 0.3:
            spec[self.r.randrange(len(spec))] = -1
        return self.node("Reshape", [self.use(x), self.i64(spec)], tuple(dims), x.bound, x.lo)

    def op_flatten(self):
        x = self.pick(lambda v: len(v.shape) >= 1)
        axis = self.r.randint(0, len(x.shape))
        shape = (numel(x.shape[:axis]), numel(x.shape[axis:]))
        return self.node("Flatten", [self.use(x)], shape, x.bound, x.lo, axis=axis)

    def op_transpose(self):
        x = self.pick(lambda v: len(v.shape) >= 2)
        perm = list(range(len(x.shape)))
        self.r.shuffle(perm)
        return self.node("Transpose", [self.use(x)], tuple(x.shape[p] for p in perm), x.bound, x.lo,
                         perm=perm)

    def op_concat(self):
        x = self.pick(lambda v: len(v.shape) >= 1)
        axis = self.r.randrange(len(x.shape))
        parts = [x]
        for v in self.vals:
            if v is not x and len(v.shape) == len(x.shape) and all(
                    a == b for i, (a, b) in enumerate(zip(v.shape, x.shape)) if i != axis):
                parts.append(v)
        self.r.shuffle(parts)
        parts = parts[:self.r.randint(1, 3)]
        if len(parts) == 1:  # a new input of the same shape but the axis
            shape = list(x.shape)
            shape[axis] = self.r.randint(1, 4)
            parts.append(self.new_input(shape))
        shape = list(x.shape)
        shape[axis] = sum(p.shape[axis] for p in parts)
        ax = axis - len(shape) if self.r.random() < 0.3 else axis
        return self.node("Concat", [self.use(p) for p in parts], tuple(shape),
                         max(p.bound for p in parts), axis=ax)

    def op_split(self):
        x = self.pick(lambda v: any(d >= 2 for d in v.shape))
        axes = [i for i, d in enumerate(x.shape) if d >= 2]
        axis = self.r.choice(axes)
        d = x.shape[axis]
        nparts = self.r.randint(2, min(3, d))
        cuts = sorted(self.r.sample(range(1, d), nparts - 1))
        sizes = [b - a for a, b in zip([0] + cuts, cuts + [d])]
        outs = [self.name("split") for _ in sizes]
        self.nodes.append(helper.make_node("Split", [self.use(x), self.i64(sizes)], outs,
                                           name=outs[0], axis=axis))
        last = None
        for o, s in zip(outs, sizes):
            shape = list(x.shape)
            shape[axis] = s
            last = Val(o, shape, x.bound, x.lo)
            self.vals.append(last)
        return last

    def op_slice(self):
        x = self.pick(lambda v: len(v.shape) >= 1)
        axes = self.r.sample(range(len(x.shape)), self.r.randint(1, len(x.shape)))
        starts, ends, steps, shape = [], [], [], list(x.shape)
        for a in axes:
            d = x.shape[a]
            st = self.r.choice([1, 1, 2, -1, -2])
            for _ in range(20):
                b = self.r.randint(-d - 1, d + 1)
                e = self.r.choice([self.r.randint(-d - 1, d + 1), 2**62 if st > 0 else -2**62])
                cnt = len(range(*slice(b, e, st).indices(d)))
                if cnt >= 1:
                    break
            else:
                raise NoFit()
            starts.append(b), ends.append(e), steps.append(st)
            shape[a] = cnt
        ins = [self.use(x), self.i64(starts), self.i64(ends), self.i64(axes), self.i64(steps)]
        return self.node("Slice", ins, tuple(shape), x.bound, x.lo)

    def op_squeeze(self):
        x = self.pick(lambda v: 1 in v.shape)
        ones = [i for i, d in enumerate(x.shape) if d == 1]
        axes = sorted(self.r.sample(ones, self.r.randint(1, len(ones))))
        shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
        return self.node("Squeeze", [self.use(x), self.i64(axes)], shape, x.bound, x.lo)

    def op_unsqueeze(self):
        x = self.pick(lambda v: len(v.shape) <= 4)
        at = self.r.randint(0, len(x.shape))
        shape = x.shape[:at] + (1,) + x.shape[at:]
        ax = at - len(shape) if self.r.random() < 0.3 else at
        return self.node("Unsqueeze", [self.use(x), self.i64([ax])], shape, x.bound, x.lo)

    def op_reduce(self):
        x = self.pick(lambda v: len(v.shape) >= 1)
        op = self.r.choice(["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceSumSquare",
                            "ReduceL2", "ReduceLogSumExp", "ReduceL1"])
        if op == "ReduceLogSumExp" and x.bound > EXP_MAX:
            raise NoFit()
        axes = sorted(self.r.sample(range(len(x.shape)), self.r.randint(1, len(x.shape))))
        keep = self.r.random() < 0.5
        shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape) if keep or i not in axes)
        cnt = numel([x.shape[a] for a in axes])
        bound = {"ReduceSum": x.bound * cnt, "ReduceSumSquare": x.bound ** 2 * cnt,
                 "ReduceL1": x.bound * cnt, "ReduceL2": x.bound * math.sqrt(cnt),
                 "ReduceLogSumExp": x.bound + math.log(cnt)}.get(op, x.bound)
        axes_given = [a - len(x.shape) if self.r.random() < 0.3 else a for a in axes]
        if op == "ReduceSum":  # opset 13+: axes is an input
            return self.node(op, [self.use(x), self.i64(axes_given)], shape, bound, keepdims=int(keep))
        return self.node(op, [self.use(x)], shape, bound, axes=axes_given, keepdims=int(keep))

    def op_softmax(self):
        x = self.pick(lambda v: len(v.shape) >= 1)
        op = self.r.choice(["Softmax", "Softmax", "LogSoftmax"])
        axis = self.r.randint(-len(x.shape), len(x.shape) - 1)
        bound = 1.0 if op == "Softmax" else 2 * x.bound + math.log(numel(x.shape)) + 1
        return self.node(op, [self.use(x)], x.shape, bound, 0.0 if op == "Softmax" else None,
                         axis=axis)

    def op_layernorm(self):
        x = self.pick(lambda v: len(v.shape) >= 1)
        axis = self.r.randint(-len(x.shape), len(x.shape) - 1)
        norm = x.shape[axis:] if axis >= 0 else x.shape[len(x.shape) + axis:]
        scale, _ = self.fconst(norm, 0.5, 1.5)
        ins = [self.use(x), scale]
        if self.r.random() < 0.7:
            ins.append(self.fconst(norm)[0])
        eps = self.r.choice([1e-2, 5e-2, 1e-1])
        # |x - mean| / sqrt(var + eps) <= sqrt(numel) whatever x is
        bound = 1.5 * math.sqrt(numel(norm)) + 1
        return self.node("LayerNormalization", ins, x.shape, bound, axis=axis, epsilon=eps)

    def op_batchnorm(self):
        x = self.pick(lambda v: len(v.shape) >= 2)
        c = x.shape[1]
        scale, _ = self.fconst((c,), 0.5, 1.5)
        bias, _ = self.fconst((c,))
        mean, _ = self.fconst((c,), -0.5, 0.5)
        var, _ = self.fconst((c,), 0.5, 2.0)
        return self.node("BatchNormalization", [self.use(x), scale, bias, mean, var], x.shape,
                         1.5 * (x.bound + 0.5) / math.sqrt(0.5) + 1,
                         epsilon=self.r.choice([1e-5, 1e-3]))

    def op_gather(self):
        x = self.pick(lambda v: len(v.shape) >= 1)
        axis = self.r.randrange(len(x.shape))
        d = x.shape[axis]
        irank = self.r.choice([0, 1, 1, 2])
        ishape = tuple(self.r.randint(1, 4) for _ in range(irank))
        idx = self.np.integers(-d, d, size=ishape).astype(np.int64)
        shape = x.shape[:axis] + ishape + x.shape[axis + 1:]
        ax = axis - len(x.shape) if self.r.random() < 0.3 else axis
        return self.node("Gather", [self.use(x), self.const(idx, "idx")], shape, x.bound, x.lo,
                         axis=ax)

    def op_where(self):
        x = self.pick(lambda v: len(v.shape) >= 1)
        # The condition compares a graph input with a constant: every
        # configuration sees the same bits there.
        cin = self.new_input(self.bcast_shape(x.shape))
        cmp = self.r.choice(["Greater", "Less"])
        cond = self.name("cond")
        self.nodes.append(helper.make_node(cmp, [self.use(cin), self.const(np.array(
            self.r.uniform(-0.5, 0.5), dtype=np.float32))], [cond], name=cond))
        other = self.pick(lambda v: v is not x and self.broadcasts(v.shape, x.shape)) \
            if self.r.random() < 0.5 and any(v is not x and self.broadcasts(v.shape, x.shape)
                                             for v in self.vals) else None
        if other is None:
            oname, ob = self.fconst(self.bcast_shape(x.shape))[0], 1.0
        else:
            oname, ob = self.use(other), other.bound
        ins = [cond, self.use(x), oname] if self.r.random() < 0.5 else [cond, oname, self.use(x)]
        return self.node("Where", ins, x.shape, max(x.bound, ob))

    def op_cast(self):
        """f32 -> f64 -> f32: exact both ways; sometimes an f64 op between."""
        x = self.pick()
        d = self.name("cast")
        self.nodes.append(helper.make_node("Cast", [self.use(x)], [d], name=d, to=TensorProto.DOUBLE))
        src = d
        if self.r.random() < 0.4:
            e = self.name("relu64")
            self.nodes.append(helper.make_node("Relu", [d], [e], name=e))
            src = e
        return self.node("Cast", [src], x.shape, x.bound, x.lo, to=TensorProto.FLOAT)

    def op_pad(self):
        """Pad: the next picks prefer it, so that a conv or a pool often
        follows (fold-pad merges them)."""
        x = self.pick(lambda v: len(v.shape) >= 1)
        r = len(x.shape)
        mode = self.r.choice(["constant", "constant", "constant", "reflect", "edge"])
        pads = []
        for i in range(2 * r):
            d = x.shape[i % r]
            # channels and batch of an image-like value are rarely padded
            if r >= 3 and i % r < 2 and self.r.random() < 0.8:
                pads.append(0)
                continue
            hi = d - 1 if mode == "reflect" else 3
            pads.append(self.r.randint(0, max(0, hi)) if self.r.random() < 0.7 else 0)
        shape = tuple(d + pads[i] + pads[r + i] for i, d in enumerate(x.shape))
        ins = [self.use(x), self.i64(pads)]
        value = 0.0
        if mode == "constant" and self.r.random() < 0.3:
            value = self.r.choice([0.5, -1.0])
            ins.append(self.const(np.array(value, dtype=np.float32)))
        return self.node("Pad", ins, shape, max(x.bound, abs(value)), mode=mode)

    def op_expand(self):
        x = self.pick(lambda v: len(v.shape) <= 4 and 1 in v.shape or len(v.shape) < 3)
        extra = self.r.randint(0, 1)
        shape = tuple(self.r.randint(1, 3) for _ in range(extra)) + tuple(
            self.r.randint(2, 4) if d == 1 and self.r.random() < 0.6 else d for d in x.shape)
        spec = [1 if self.r.random() < 0.3 and i >= extra and x.shape[i - extra] == shape[i] else shape[i]
                for i in range(len(shape))]
        return self.node("Expand", [self.use(x), self.i64(spec)], shape, x.bound, x.lo)

    def op_tile(self):
        x = self.pick(lambda v: len(v.shape) >= 1 and numel(v.shape) <= 500)
        reps = [self.r.choice([1, 1, 2, 3]) for _ in x.shape]
        return self.node("Tile", [self.use(x), self.i64(reps)],
                         tuple(d * k for d, k in zip(x.shape, reps)), x.bound, x.lo)

    def op_variadic(self):
        x = self.pick()
        op = self.r.choice(["Max", "Min", "Sum", "Mean"])
        others = [v for v in self.vals if v is not x and self.broadcasts(v.shape, x.shape)]
        parts = [x] + self.r.sample(others, min(len(others), self.r.randint(1, 2)))
        if len(parts) == 1:
            parts.append(self.new_input(self.bcast_shape(x.shape)))
        bound = sum(p.bound for p in parts) if op == "Sum" else max(p.bound for p in parts)
        return self.node(op, [self.use(p) for p in parts], x.shape, bound)

    def op_pow(self):
        pos = [v for v in self.vals if v.lo is not None and v.lo >= 0.25]
        if pos and self.r.random() < 0.5:
            x = self.pick(lambda v: v.lo is not None and v.lo >= 0.25)
            e = self.r.choice([0.5, 1.5, -1.0, 2.5])
        else:
            x = self.pick()
            e = self.r.choice([2.0, 3.0])
        b = max(x.bound, 1.0) ** abs(e) if e > 0 else 1.0 / x.lo
        return self.node("Pow", [self.use(x), self.const(np.array(e, dtype=np.float32))],
                         x.shape, b, 0.0 if e == 2.0 or x.lo is not None else None)

    def op_instnorm(self):
        x = self.pick(lambda v: len(v.shape) >= 3)
        c = x.shape[1]
        scale, _ = self.fconst((c,), 0.5, 1.5)
        bias, _ = self.fconst((c,))
        eps = self.r.choice([1e-2, 1e-1])
        return self.node("InstanceNormalization", [self.use(x), scale, bias], x.shape,
                         1.5 * math.sqrt(numel(x.shape[2:])) + 1, epsilon=eps)

    def op_conv_transpose(self):
        x = self.pick(lambda v: len(v.shape) in (3, 4) and numel(v.shape) <= 2048)
        n, c = x.shape[0], x.shape[1]
        g = self.r.choice([1, 1] + [d for d in range(2, c + 1) if c % d == 0][:1])
        m = g * self.r.randint(1, 3)
        ks, ss, ds, p0, p1, ops, outs = [], [], [], [], [], [], []
        for size in x.shape[2:]:
            for _ in range(20):
                k = self.r.randint(1, 3)
                s = self.r.randint(1, 2)
                d = self.r.choice([1, 1, 2])
                op = self.r.randint(0, s - 1) if self.r.random() < 0.3 else 0
                a, b = self.r.randint(0, k - 1), self.r.randint(0, k - 1)
                o = s * (size - 1) + op + (k - 1) * d + 1 - a - b
                if 1 <= o <= 24:
                    break
            else:
                raise NoFit()
            ks.append(k), ss.append(s), ds.append(d), p0.append(a), p1.append(b), ops.append(op)
            outs.append(o)
        fan = (c // g) * numel(ks)
        a = 1.0 / math.sqrt(fan)
        w, _ = self.fconst((c, m // g) + tuple(ks), -a, a)
        ins = [self.use(x), w]
        if self.r.random() < 0.5:
            ins.append(self.fconst((m,), -0.5, 0.5)[0])
        attrs = dict(kernel_shape=ks, strides=ss, dilations=ds, pads=p0 + p1, group=g)
        if any(ops):
            attrs["output_padding"] = ops
        return self.node("ConvTranspose", ins, (n, m) + tuple(outs), x.bound * math.sqrt(fan) + 0.5,
                         **attrs)

    def op_depth_to_space(self):
        if self.r.random() < 0.5:
            x = self.pick(lambda v: len(v.shape) == 4 and v.shape[1] % 4 == 0)
            mode = self.r.choice(["DCR", "CRD"])
            n, c, h, w = x.shape
            return self.node("DepthToSpace", [self.use(x)], (n, c // 4, 2 * h, 2 * w), x.bound,
                             x.lo, blocksize=2, mode=mode)
        x = self.pick(lambda v: len(v.shape) == 4 and v.shape[2] % 2 == 0 and v.shape[3] % 2 == 0)
        n, c, h, w = x.shape
        return self.node("SpaceToDepth", [self.use(x)], (n, 4 * c, h // 2, w // 2), x.bound, x.lo,
                         blocksize=2)

    def op_cumsum(self):
        x = self.pick(lambda v: len(v.shape) >= 1)
        axis = self.r.randrange(len(x.shape))
        return self.node("CumSum", [self.use(x), self.const(np.array(axis, dtype=np.int64), "i")],
                         x.shape, x.bound * x.shape[axis], exclusive=int(self.r.random() < 0.3),
                         reverse=int(self.r.random() < 0.3))

    OPS = [  # name, weight
        ("conv", 6), ("pool", 3), ("global_pool", 1), ("binary", 6), ("unary", 6),
        ("shift_positive", 1), ("clip", 1), ("prelu", 1), ("matmul", 3), ("gemm", 2),
        ("reshape", 2), ("flatten", 1), ("transpose", 2), ("concat", 2), ("split", 1),
        ("slice", 2), ("squeeze", 1), ("unsqueeze", 1), ("reduce", 2), ("softmax", 2),
        ("layernorm", 1), ("batchnorm", 1), ("gather", 2), ("where", 1), ("cast", 1),
        ("pad", 2), ("expand", 1), ("tile", 1), ("variadic", 1), ("pow", 1), ("instnorm", 1),
        ("conv_transpose", 2), ("depth_to_space", 1), ("cumsum", 1),
    ]

    # ---- the model ---------------------------------------------------------
    def build(self):
        target = self.r.randint(MIN_NODES, MAX_NODES)
        # 1-3 inputs; the first often image-like so that conv and pooling fit
        rank = self.r.choice([3, 4, 4, 2])
        shape = (self.r.randint(1, 2),) + self.rand_shape(rank - 1, 7)
        if self.r.random() < 0.25:  # big enough for whole vector tiles and thread splits
            shape = (1, self.r.randint(4, 16), self.r.randint(8, 24), self.r.randint(8, 24))
        self.new_input(shape)
        for _ in range(self.r.randint(0, 2)):
            self.new_input(self.rand_shape(self.r.randint(1, 4)))
        names, weights = zip(*self.OPS)
        tries = 0
        while len(self.nodes) < target and tries < 400:
            tries += 1
            op = self.r.choices(names, weights=weights)[0]
            saved = (len(self.nodes), len(self.inits), len(self.inputs), len(self.vals),
                     [v.uses for v in self.vals])
            try:
                v = getattr(self, "op_" + op)()
            except NoFit:
                self.undo(saved)
                continue
            if numel(v.shape) == 0 or numel(v.shape) > 20000 or len(self.nodes) > MAX_NODES:
                self.undo(saved)
                continue
        if len(self.nodes) < MIN_NODES:
            raise Skip("only %d nodes fit after %d tries" % (len(self.nodes), tries))
        outs = [v for v in self.vals if v.uses == 0 and not getattr(v, "is_input", False)]
        if not outs:
            raise Skip("no value is left unused to be an output")
        used_inputs = {i for n in self.nodes for i in n.input}
        graph_inputs = [i for i in self.inputs if i.name in used_inputs]
        self.data = {k: a for k, a in self.data.items() if k in used_inputs}
        g = helper.make_graph(
            self.nodes, "difftest", graph_inputs,
            [helper.make_tensor_value_info(v.name, TensorProto.FLOAT, list(v.shape)) for v in outs],
            self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="glowc-difftest")
        m.ir_version = 8
        try:
            onnx.checker.check_model(m, full_check=True)
        except Exception as e:  # the generator's shapes disagree with ONNX's: its bug
            raise RuntimeError("generated an invalid model: %s" % e)
        return m, self.data

    def undo(self, saved):
        nn, ni, nin, nv, uses = saved
        del self.nodes[nn:], self.inits[ni:], self.inputs[nin:], self.vals[nv:]
        for v, u in zip(self.vals, uses):
            v.uses = u
        for k in list(self.data):
            if k not in {i.name for i in self.inputs}:
                del self.data[k]


def check_shapes(model):
    """Every output shape the generator computed against ONNX's inference."""
    inf = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    known = {v.name: v for v in list(inf.graph.value_info) + list(inf.graph.output)}
    for o in model.graph.output:
        t = known[o.name].type.tensor_type
        got = [d.dim_value for d in t.shape.dim]
        want = [d.dim_value for d in o.type.tensor_type.shape.dim]
        if got != want:
            raise RuntimeError("output %s: generator says %s, ONNX infers %s" % (o.name, want, got))


def generate(seed, ort=False):
    """(model, {input name: array}); raises Skip."""
    m, data = Gen(seed, ort).build()
    check_shapes(m)
    return m, data


def write(model, data, outdir):
    os.makedirs(outdir, exist_ok=True)
    onnx.save(model, os.path.join(outdir, "model.onnx"))
    for k, a in data.items():
        np.save(os.path.join(outdir, k + ".npy"), a)


def main(argv):
    if len(argv) < 3:
        sys.stderr.write(__doc__)
        return 2
    if not argv[1].isdigit():
        sys.stderr.write("gen.py: the seed is a number >= 0, not '%s'\n" % argv[1])
        return 2
    try:
        m, data = generate(int(argv[1]), "--ort" in argv[3:])
    except Skip as e:
        print("seed %s skipped: %s" % (argv[1], e))
        return 3
    write(m, data, argv[2])
    print("seed %s: %d nodes, %d inputs, %d outputs" % (argv[1], len(m.graph.node),
                                                       len(m.graph.input), len(m.graph.output)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
