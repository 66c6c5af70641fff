#!/usr/bin/python3
"""Instructions an aarch64 executable runs under qemu-aarch64, counted from
qemu's own log: `-d in_asm` prints each translated block's instructions
once, `-d exec` (with nochain, so that no block jumps straight into the
next unlogged) a line per block run; the count is the sum over runs of the
block's length. A figure that does not depend on the host's load, unlike
qemu's time (which is no speed figure at all). Debian's qemu-user ships no
TCG plugins (contrib/plugins/insn), hence the log.

Usage: python3 tests/aarch64/count_insns.py [--qemu-cpu max] EXE ARGS...
Prints the total, the sdot/udot/usdot among them, and the most run
functions (the symbol qemu names each block by).
"""
import argparse
import collections
import os
import re
import subprocess
import sys
import tempfile

BLOCK = re.compile(r"^0x([0-9a-f]+):\s+([0-9a-f]{8})\s")
TRACE = re.compile(r"^Trace \d+: 0x[0-9a-f]+ \[[0-9a-f]+/([0-9a-f]+)/")
# The dot products by encoding (qemu 7.2's disassembler prints them as
# .byte): (mask, value) of sdot/udot by element and vector, usdot and
# sudot by element and usdot vector (Arm ARM, Advanced SIMD).
DOT = ((0xBFC0F400, 0x0F80E000), (0xBFC0F400, 0x2F80E000), (0xBFE0FC00, 0x0E809400),
       (0xBFE0FC00, 0x2E809400), (0xBFC0F400, 0x0F80F000), (0xBFC0F400, 0x0F00F000),
       (0xBFE0FC00, 0x0E809C00))


def is_dot(word):
    return any(word & mask == value for mask, value in DOT)


def count(log):
    """(total, dot products, {function: instructions}) of qemu's log."""
    blocks = {}  # pc -> (function, instructions, dot products), the latest translation
    total = dots = 0
    per_fn = collections.Counter()
    name, pc, n, d = None, None, 0, 0
    with open(log, errors="replace") as f:
        for line in f:
            if line.startswith("IN:"):  # a function's first block
                name, pc, n, d = line[3:].strip() or "?", None, 0, 0
                continue
            if line.startswith("----"):  # the next block of the same function
                pc, n, d = None, 0, 0
                continue
            m = BLOCK.match(line)
            if m and name is not None:
                pc = pc if pc is not None else int(m.group(1), 16)
                n += 1
                d += is_dot(int(m.group(2), 16))
                blocks[pc] = (name, n, d)
                continue
            m = TRACE.match(line)
            if m:
                fn, k, kd = blocks.get(int(m.group(1), 16), ("?", 0, 0))
                total += k
                dots += kd
                per_fn[fn] += k
    return total, dots, per_fn


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--qemu-cpu", default="max")
    ap.add_argument("exe")
    ap.add_argument("args", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="glowc-insns-") as tmp:
        log = os.path.join(tmp, "qemu.log")
        subprocess.run(["qemu-aarch64", "-cpu", a.qemu_cpu, "-d", "in_asm,exec,nochain", "-D", log,
                        a.exe] + a.args, check=True, stdout=subprocess.DEVNULL)
        total, dots, per_fn = count(log)
    print("%s: %d instructions run, %d of them dot products" % (os.path.basename(a.exe), total, dots))
    for fn, k in per_fn.most_common(5):
        print("  %12d  %5.1f%%  %s" % (k, 100.0 * k / max(total, 1), fn))
    return 0


if __name__ == "__main__":
    sys.exit(main())
