#!/usr/bin/env python3
"""Median of several runs of a Strata benchmark's markdown table.

Usage: scripts/bench-median.py run1.md run2.md ... > median.md

Every file holds the same table (the benchmark's stdout). Each number in each cell is replaced
by the median of that number across the runs (numbers with a k/M suffix are compared by value);
the text around the numbers is the first run's. Ratios are therefore medians of the runs'
ratios, not ratios of the medians. Lines that differ in shape between runs are copied from the
first run.
"""
import re
import statistics
import sys

NUM = re.compile(r"(\d+(?:\.\d+)?)([kMG]?)")
SCALE = {"": 1.0, "k": 1e3, "M": 1e6, "G": 1e9}


def numbers(cell):
    return [(float(m.group(1)) * SCALE[m.group(2)], m) for m in NUM.finditer(cell)]


def fmt(value, match):
    suffix = match.group(2)
    text = match.group(1)
    decimals = len(text.split(".")[1]) if "." in text else 0
    return f"{value / SCALE[suffix]:.{decimals}f}{suffix}"


def median_line(lines):
    first = lines[0]
    if not first.startswith("|") or "---" in first:
        return first
    cells = [line.split("|") for line in lines]
    if len({len(c) for c in cells}) != 1:
        return first
    out = []
    for i, cell in enumerate(cells[0]):
        runs = [numbers(c[i]) for c in cells]
        if i < 2 or not runs[0] or len({len(r) for r in runs}) != 1:
            out.append(cell)
            continue
        pieces, last = [], 0
        for j, (_, m) in enumerate(runs[0]):
            med = statistics.median(r[j][0] for r in runs)
            pieces.append(cell[last:m.start()])
            pieces.append(fmt(med, m))
            last = m.end()
        pieces.append(cell[last:])
        out.append("".join(pieces))
    return "|".join(out)


def main():
    runs = [open(p).read().splitlines() for p in sys.argv[1:]]
    if not runs:
        sys.exit(__doc__)
    for i, line in enumerate(runs[0]):
        same = [r[i] for r in runs if i < len(r)]
        print(median_line(same) if len(same) == len(runs) else line)


if __name__ == "__main__":
    main()
