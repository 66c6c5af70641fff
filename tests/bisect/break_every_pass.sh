#!/bin/sh
# For every pass of -O2 that changes MODEL, `glowc bisect MODEL
# --break-pass=P` must name P as the first bad pass -- bisection tested by
# miscompiling on purpose -- and without --break-pass it must name none.
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
done
exit $status
