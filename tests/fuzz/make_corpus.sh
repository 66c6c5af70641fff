#!/bin/sh
# Seed corpora for the fuzz targets (tests/fuzz/fuzz_*.c), one folder each
# under OUT: text IR from fixtures/ (split at "// -----"), some ONNX models
# printed as text IR, a sample of the ONNX conformance models and tensors,
# and .npy files written by numpy. Kept to a few hundred files in all.
# usage: make_corpus.sh GLOWC OUT
set -e
GLOWC=$1
OUT=$2
DATA=/usr/share/libonnx-testdata/data
PYTHON=/usr/bin/python3
[ -x "$GLOWC" ] && [ -n "$OUT" ] || { echo "usage: $0 GLOWC OUT" >&2; exit 2; }

rm -rf "$OUT"
mkdir -p "$OUT/hl" "$OUT/lir" "$OUT/onnx" "$OUT/tensor" "$OUT/npy"

# A text fixture, one seed per "// -----" chunk.
split() { # file prefix outdir
    awk -v out="$3/$2" '
        BEGIN { n = 0; f = out "_" n }
        /^\/\/ -----/ { n++; f = out "_" n; next }
        { print > f }' "$1"
}

for f in $(find fixtures -name '*.hl' | sort); do
    split "$f" "$(echo "$f" | tr / _ | sed 's/\.hl$//')" "$OUT/hl"
done
for f in $(find fixtures -name '*.lir' | sort); do
    split "$f" "$(echo "$f" | tr / _ | sed 's/\.lir$//')" "$OUT/lir"
done
# Every sixth node test, and every model of the other suites.
models=$( (find "$DATA/node" -name model.onnx | sort | awk 'NR % 6 == 1';
           find "$DATA/pytorch-operator" "$DATA/simple" -name model.onnx | sort;
           find "$DATA/pytorch-converted" -name model.onnx | sort | awk 'NR % 4 == 1') )
for m in $models; do
    d=$(dirname "$m")
    b=$(basename "$(dirname "$d")")_$(basename "$d")
    cp "$m" "$OUT/onnx/$b.onnx"
    # Printed as text IR, the same models seed the text parser.
    case "$b" in node_*) "$GLOWC" print "$m" >"$OUT/hl/$b.hl" 2>/dev/null || rm -f "$OUT/hl/$b.hl" ;; esac
    for pb in "$d"/test_data_set_0/*.pb; do
        [ -f "$pb" ] && [ "$(wc -c <"$pb")" -lt 4096 ] || continue
        cp "$pb" "$OUT/tensor/${b}_$(basename "$pb")"
    done
done
# The printed models: keep one in three.
ls "$OUT/hl" | grep '^node_' | awk 'NR % 3 != 1' | sed "s|^|$OUT/hl/|" | xargs rm -f
# Every text seed that compiles, lowered, gives the LIR parser every
# instruction kind.
for f in "$OUT"/hl/*; do
    b=$(basename "$f" .hl)
    "$GLOWC" opt -O0 --emit=lir "$f" >"$OUT/lir/$b.lir" 2>/dev/null || rm -f "$OUT/lir/$b.lir"
done
ls "$OUT/tensor" | awk 'NR % 3 != 1' | sed "s|^|$OUT/tensor/|" | xargs rm -f

"$PYTHON" - "$OUT/npy" <<'PY'
import sys, numpy as np, os
out = sys.argv[1]
rng = np.random.default_rng(7)
shapes = [(), (0,), (1,), (3,), (2, 3), (2, 0, 4), (1, 2, 2, 2), (2, 1, 1, 1, 2)]
kinds = ['f4', 'f8', 'f2', 'i1', 'u1', 'i2', 'u2', 'i4', 'u4', 'i8', 'u8', '?']
n = 0
for k in kinds:
    for s in shapes[n % 3::3]:
        a = (rng.standard_normal(s) * 10).astype(k)
        np.save(os.path.join(out, f"{n:02d}_{k.replace('?', 'b1')}.npy"), a)
        n += 1
np.save(os.path.join(out, "fortran.npy"), np.asfortranarray(np.ones((2, 3), 'f4')))
np.save(os.path.join(out, "bigendian.npy"), np.ones((2,), '>f4'))
with open(os.path.join(out, "v2.npy"), "wb") as f:
    np.lib.format.write_array(f, np.arange(6, dtype='i4').reshape(2, 3), version=(2, 0))
with open(os.path.join(out, "v3.npy"), "wb") as f:
    np.lib.format.write_array(f, np.arange(4, dtype='f4'), version=(3, 0))
PY
# Dictionaries of the words each format is made of (libFuzzer -dict), taken
# from the tables so that they follow new operators.
words() { sed -n "s/^$1(\([A-Z0-9_]*\), *\([a-z0-9_]*\).*/\2/p" "$2"; }
# Numbers at the edges of 32 and 64 bits, where dimension arithmetic overflows.
bignums() {
    printf '"%s"\n' 9223372036854775807 -9223372036854775808 4611686018427387904 \
        3037000500 18446744073709551615 2147483647 -2147483648 4294967296 -1
}
attrs() { sed -n 's/^ATTR(\([a-z0-9_]*\),.*/\1/p' core/attrs.def; }
{
    for w in $(words NODE core/nodes.def) $(attrs) $(words ELEM core/elems.def) \
             func return constant dense splat opaque loc; do
        printf '"%s"\n' "$w"
    done
    printf '"%s"\n' '%' '->' '<' '>' 'x' '{' '}' '[' ']' '#1' '// -----'
    bignums
} >"$OUT/hl.dict"
{
    for w in $(words INSTR core/instrs.def) $(words NODE core/nodes.def) $(attrs) $(words ELEM core/elems.def) \
             declare program weight mutable const in out @in @out @inout dense splat opaque loc; do
        printf '"%s"\n' "$w"
    done
    bignums
} >"$OUT/lir.dict"
{
    sed -n 's/^ONNX_OP("\([A-Za-z0-9]*\)".*/"\1"/p' core/onnx/ops.def
    grep -ho 'on_attr_[a-z]*(on, "[a-z_]*"' core/onnx/*.c | sed 's/.*, //' | sort -u
    # the same edges as varints (int attributes, dims) and as raw int64 data
    printf '"%s"\n' '\xff\xff\xff\xff\xff\xff\xff\xff\x7f' '\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01' \
        '\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01' '\x80\x80\x80\x80\x08' '\xff\xff\xff\xff\x07' \
        '\xff\xff\xff\xff\xff\xff\xff\x7f' '\x00\x00\x00\x00\x00\x00\x00\x80' \
        '\x00\x00\x80\x7f' '\x00\x00\xc0\x7f' '\x00\x00\x80\xff'
} >"$OUT/onnx.dict"

for t in hl lir onnx tensor npy; do
    printf '%s: %s seeds\n' "$t" "$(ls "$OUT/$t" | wc -l)"
done
