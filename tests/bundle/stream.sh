#!/bin/sh
# A recurrent cell streamed through its bundle (tests/bundle/stream.c: one
# call per step, the state output copied into the state input) must give,
# bit for bit, what `glowc run --stream ... --carry h_next=h --backend=cpu`
# gives (fixtures/run/inputs/stream.py checks that against numpy): the same
# native code, called the same way.
# Usage: stream.sh GLOWC
set -eu
glowc=$1
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT INT TERM

/usr/bin/python3 "$root/fixtures/run/inputs/stream.py" "$glowc" "$out" >/dev/null
"$glowc" compile "$out/cell.onnx" --bundle "$out/b" >/dev/null
clang-19 -std=c17 -O2 -Wall -Werror -I"$out/b" "$here/stream.c" "$out/b/cell.o" -lm -lpthread \
    -o "$out/stream"
# x.npy holds 6x1x4 float32: its last 96 bytes.
tail -c 96 "$out/x.npy" >"$out/x.raw"
"$out/stream" "$out/b/cell.weights" "$out/x.raw" 6 >"$out/got.txt"
/usr/bin/python3 - "$out" <<'PY'
import sys, numpy as np
d = sys.argv[1]
got = np.loadtxt(f"{d}/got.txt", dtype=np.float32)
run = f"{d}/out-O2--backend_cpu"
want = np.concatenate([np.load(f"{run}/y.npy").ravel(), np.load(f"{run}/h_next.npy")[-1].ravel()])
if got.shape != want.shape or not np.array_equal(got, want):
    print(f"bundle stream: the bundle's steps differ from glowc run --stream:\n{got}\n{want}")
    sys.exit(1)
print("bundle stream: 6 steps through the bundle, state carried by the caller, equal to glowc run --stream")
PY
