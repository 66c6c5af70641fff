#!/bin/sh
# Usage: check_floor.sh GLOWC DIR...
#
# CONFORM_ARGS (environment) are passed to conform: an -O level, a backend.
# CONFORM_FLOORS (environment) names the floors file next to this script:
# floors.txt by default, whose floors hold for every configuration that can
# fall back on the interpreter; a configuration with its own count (native
# code with no fallback: floors-cpu.txt) names its own file.
#
# Runs `GLOWC conform DIR` for each ONNX backend suite folder, prints the
# suite's summary line, and fails when the suite passes fewer tests than its
# floor in floors.txt (next to this script), when a suite has no floor, or
# when the conform command itself does not finish normally (crash, bad
# arguments, no summary). Failing tests are normal while the count stays at
# or above the floor; conform's own exit status 1 only says some failed.
set -u

if [ $# -lt 2 ]; then
    echo "usage: $0 GLOWC DIR..." >&2
    exit 2
fi
glowc=$1
shift
floors="$(dirname "$0")/${CONFORM_FLOORS:-floors.txt}"
if [ ! -x "$glowc" ]; then
    echo "check_floor: '$glowc' is not an executable" >&2
    exit 2
fi
if [ ! -r "$floors" ]; then
    echo "check_floor: cannot read $floors" >&2
    exit 2
fi

tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM
status=0

for dir in "$@"; do
    suite=$(basename "$dir")
    floor=$(awk -v s="$suite" '$1 == s && $1 !~ /^#/ { print $2; exit }' "$floors")
    case $floor in
    '' | *[!0-9]*)
        echo "$suite: FAIL: no floor recorded in $floors"
        status=1
        continue
        ;;
    esac

    # shellcheck disable=SC2086 # CONFORM_ARGS is a list of words
    "$glowc" conform ${CONFORM_ARGS:-} "$dir" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    summary=$(tail -n 1 "$tmp/out")
    # 0: all passed; 1: some tests failed. Anything else (128+N for a signal)
    # means the command itself broke, and so does a missing summary line.
    if [ $rc -gt 1 ] || ! printf '%s\n' "$summary" |
        grep -Eq '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$'; then
        if [ $rc -gt 128 ]; then
            why="killed by signal $((rc - 128))"
        else
            why="exit status $rc, no summary line"
        fi
        echo "$suite: FAIL: '$glowc conform $dir' did not finish ($why)"
        tail -n 20 "$tmp/err" | sed 's/^/  /'
        status=1
        continue
    fi

    passed=${summary%% passed*}
    echo "$suite${CONFORM_ARGS:+ ($CONFORM_ARGS)}: $summary (floor $floor)"
    if [ "$passed" -lt "$floor" ]; then
        echo "$suite: FAIL: $passed passed, below the floor of $floor; failing tests:"
        grep '^FAIL ' "$tmp/out" | sed 's/^/  /'
        status=1
    elif [ "$passed" -gt "$floor" ]; then
        echo "$suite: above the floor: raise it to $passed in $floors"
    fi
done
exit $status
