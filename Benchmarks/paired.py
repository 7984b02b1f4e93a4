#!/usr/bin/env python3
"""Times two commands run in turn (A B A B ...), each as a whole process, and prints one
Markdown table row: medians of A's wall seconds, B's wall seconds, the pairwise ratio
B / A (pairing keeps a ratio meaningful while the machine's speed drifts), A's CPU
seconds and A's peak resident MiB.

    python3 Benchmarks/paired.py --runs 3 --label put --a "$(printf '%q ' sh put.sh)" \
        --b "$(printf '%q ' openssl enc ...)"

Each command is one string split as a shell splits words (quote paths with printf %q);
it gets no shell. The figures are the kernel's for the command and everything it waited
for (wait4's rusage): CPU is their sum, the peak the largest single process's. Standard
library only.
"""
import argparse
import os
import shlex
import statistics
import subprocess
import sys
import time


def run(command):
    """Wall seconds, CPU seconds (user + system) and peak resident MiB of one run."""
    start = time.monotonic()
    process = subprocess.Popen(shlex.split(command), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.monotonic() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        sys.exit(f"paired.py: {command!r} ended with {process.returncode} (negative: the signal)")
    # ru_maxrss is KiB on Linux, bytes on macOS.
    peak = usage.ru_maxrss / (1 << 20 if sys.platform == "darwin" else 1 << 10)
    return wall, usage.ru_utime + usage.ru_stime, peak


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--label", required=True)
    parser.add_argument("--a", required=True, help="the command measured")
    parser.add_argument("--b", required=True, help="the yardstick")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs is at least 1")
    a, b = [], []
    for _ in range(args.runs):
        a.append(run(args.a))
        b.append(run(args.b))
    median = statistics.median
    cells = [args.label, f"{median(x[0] for x in a):.2f}", f"{median(y[0] for y in b):.2f}",
             f"{median(y[0] / x[0] for x, y in zip(a, b)):.2f}", f"{median(x[1] for x in a):.2f}",
             f"{median(x[2] for x in a):.1f}"]
    print("| " + " | ".join(cells) + " |")
    print(f"{args.label}: A walls {[round(x[0], 2) for x in a]}, B walls {[round(y[0], 2) for y in b]}", file=sys.stderr)


if __name__ == "__main__":
    main()
