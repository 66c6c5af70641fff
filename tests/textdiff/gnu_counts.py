#!/usr/bin/python3
"""Checks the explorer's per-step line counts (+A -R) against GNU diff.

usage: gnu_counts.py GLOWC [--plain] MODEL...

For each model, the whole -O2 pipeline with code generation (--backend=cpu,
so codegen and llvm-opt are steps too) runs once through 'glowc opt --stats
--dump-dir': --stats lists each step's +added -removed lines (the session's
counts, which the explorer and the REPL show), --dump-dir writes each step's
text. Each step's text is
then diffed by GNU diff against the previous step's text at the same level
(graph, low-level or LLVM; a step that starts a level is diffed against
nothing), and the counts compared. GNU diff runs with --minimal: plain diff
gives up minimality on large inputs (DenseNet-121's llvm-opt: 96488 lines
added by plain diff, 90532 by diff --minimal), and glowc's diff is always
minimal; for a minimal script the counts are unique, so any disagreement is
a bug.

--plain compares with plain diff instead, to measure where its heuristics
leave minimality. Prints one line per model, 'MODEL: A/N steps agree', the steps that do not,
and exits 1 if any step disagrees.
"""
import os
import re
import subprocess
import sys
import tempfile

COUNTS = re.compile(r"\+(\d+) -(\d+) lines\)")


def glowc_counts(stats):
    """Each step's (added, removed) from opt --stats: a line per step, in
    order, naming it first ("no change", or "(..., +A -R lines)")."""
    steps = []
    for line in stats.split("pass statistics\n", 1)[1].splitlines():
        if not line.startswith("  ") or line[2] == " ":
            continue  # schedule's and allocate's second lines
        name = line.split()[0]
        m = COUNTS.search(line)
        steps.append((name, (int(m.group(1)), int(m.group(2))) if m else (0, 0)))
    return steps


DIFF = ["diff", "--minimal"]


def gnu_counts(a, b):
    out = subprocess.run(DIFF + [a, b], capture_output=True, text=True).stdout
    lines = out.splitlines()
    return (sum(l.startswith(">") for l in lines), sum(l.startswith("<") for l in lines))


def check_model(glowc, model):
    with tempfile.TemporaryDirectory() as tmp:
        dump = os.path.join(tmp, "steps")
        run = subprocess.run([glowc, "opt", model, "--backend=cpu", "--emit=llvm-opt", "--stats",
                              "--dump-dir", dump], capture_output=True, text=True, check=True)
        steps = glowc_counts(run.stderr)
        files = sorted(os.listdir(dump))
        empty = os.path.join(tmp, "empty")
        open(empty, "w").close()
        last_at = {}  # level (file extension) -> the last step's file
        agree, bad = 0, []
        for k, name in enumerate(files):
            ext = name.rsplit(".", 1)[1]
            path = os.path.join(dump, name)
            prev = last_at.get(ext, empty)
            last_at[ext] = path
            if k == 0:
                continue
            label, counts = steps[k]
            want = gnu_counts(prev, path)
            if counts == want:
                agree += 1
            else:
                bad.append("  step %d %s: glowc +%s -%s, GNU %s +%d -%d"
                           % (k, label, *(counts or ("?", "?")), " ".join(DIFF), *want))
        print("%s: %d/%d steps agree" % (os.path.basename(model), agree, len(files) - 1))
        for b in bad:
            print(b)
        return not bad


def main():
    args = sys.argv[1:]
    if len(args) < 2:
        sys.exit(__doc__)
    glowc = args[0]
    models = args[1:]
    if models and models[0] == "--plain":
        DIFF[:] = ["diff"]
        models = models[1:]
    ok = all([check_model(glowc, m) for m in models])
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
