#!/bin/sh
# For every pass of -O2 that changes MODEL, `glowc bisect MODEL
# --break-pass=P` must name P as the first bad pass -- bisection tested by
# miscompiling on purpose -- and without --break-pass it must name none.
# The same with --backend=cpu for the two native steps, codegen and
# llvm-opt, which bisect runs as JIT-compiled code.
# Usage: break_every_pass.sh GLOWC MODEL...
set -u
glowc=$1
shift
status=0
for model in "$@"; do
    if ! "$glowc" bisect "$model" >/dev/null 2>&1; then
        echo "bisect: $model: a pass already moves the outputs without --break-pass"
        status=1
    fi
    passes=$("$glowc" opt -O2 --stats "$model" 2>&1 >/dev/null |
        awk '/^  [a-z]/ && $1 != "import" && $1 != "pass" && $2 != "no" { print $1 }' | sort -u)
    n=0
    for p in $passes; do
        n=$((n + 1))
        out=$("$glowc" bisect "$model" --break-pass="$p" 2>&1)
        if ! printf '%s\n' "$out" | grep -q "^FIRST BAD PASS: $p (step"; then
            echo "bisect: $model --break-pass=$p: not named; bisect said:"
            printf '%s\n' "$out" | grep -E "FIRST BAD|no pass" | sed 's/^/  /'
            status=1
        fi
    done
    echo "bisect: $model: --break-pass named each of the $n passes that change it"
    if ! out=$("$glowc" bisect "$model" --backend=cpu 2>&1) ||
        ! printf '%s\n' "$out" | grep -q "^  [0-9]* *llvm-opt *ok"; then
        echo "bisect: $model --backend=cpu: the native steps do not run, or move the outputs:"
        printf '%s\n' "$out" | grep -E "codegen|llvm-opt|FIRST BAD|no pass|error" | sed 's/^/  /'
        status=1
    fi
    for p in codegen llvm-opt; do
        out=$("$glowc" bisect "$model" --backend=cpu --break-pass="$p" 2>&1)
        if ! printf '%s\n' "$out" | grep -q "^FIRST BAD PASS: $p (step"; then
            echo "bisect: $model --backend=cpu --break-pass=$p: not named; bisect said:"
            printf '%s\n' "$out" | grep -E "FIRST BAD|no pass|error" | sed 's/^/  /'
            status=1
        fi
    done
    echo "bisect: $model: --backend=cpu --break-pass named codegen and llvm-opt"
done
exit $status
