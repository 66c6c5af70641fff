#!/bin/sh
# Compiles the bundled digits model to a bundle, builds the README's example
# program against it, and checks its answer on every sample against
# `glowc run` on the same sample (the interpreter is the reference).
# Usage: run.sh GLOWC
set -eu
glowc=$1
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT INT TERM

"$glowc" compile "$root/fixtures/models/digits.onnx" --bundle "$out" >/dev/null
clang-19 -std=c17 -O2 -Wall -Werror -I"$out" "$here/example.c" "$out/digits.o" -lm -lpthread \
    -o "$out/example"
# The same example against a --no-threads bundle, linked without -lpthread.
"$glowc" compile "$root/fixtures/models/digits.onnx" --bundle "$out/nt" --no-threads >/dev/null
clang-19 -std=c17 -O2 -Wall -Werror -I"$out/nt" "$here/example.c" "$out/nt/digits.o" -lm \
    -o "$out/example_nt"
status=0
for npy in "$root"/fixtures/models/digits_samples/sample_*.npy; do
    # An .npy of 64 floats ends with their 256 bytes.
    tail -c 256 "$npy" >"$out/image.raw"
    got=$("$out/example" "$out/digits.weights" "$out/image.raw")
    got_nt=$("$out/example_nt" "$out/nt/digits.weights" "$out/image.raw")
    if [ "$got_nt" != "$got" ]; then
        echo "bundle: $(basename "$npy"): the --no-threads bundle says $got_nt, the threaded one $got"
        status=1
    fi
    "$glowc" run "$root/fixtures/models/digits.onnx" --input "image=$npy" \
        --output-dir "$out" >/dev/null 2>&1
    want=$(/usr/bin/python3 -c "import numpy as n; print(int(n.load('$out/logits.npy').argmax()))")
    if [ "$got" != "$want" ]; then
        echo "bundle: $(basename "$npy"): the bundle says $got, glowc run says $want"
        status=1
    fi
done
# An operator without a libjit kernel (Hardmax) runs, with --fallback=interp,
# in the interpreter's kernel linked into the executable: same bytes as glowc
# run (both fill the input from the same fixed-seed generator).
hm=/usr/share/libonnx-testdata/data/node/test_hardmax_axis_1/model.onnx
mkdir -p "$out/exe" "$out/ref"
"$glowc" compile --fallback=interp "$hm" -o "$out/hardmax" >/dev/null
"$out/hardmax" --output-dir "$out/exe" >/dev/null 2>&1
"$glowc" run "$hm" --output-dir "$out/ref" >/dev/null 2>&1
if ! cmp -s "$out/exe/y.npy" "$out/ref/y.npy"; then
    echo "bundle: the compiled Hardmax (interpreter fallback) differs from glowc run"
    status=1
fi
[ $status -eq 0 ] && echo "bundle: the README example (threads and --no-threads) agrees with glowc run on every sample"
exit $status
