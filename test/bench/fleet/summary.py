"""summary.py TABLE.md...: make bench-fleet's ratios over several runs.

Reads the tables test/bench/fleet/table.py wrote (OUT/run-K/table.md with
RUNS=K) and prints, for each row that every run has, the patched/stock
ratio of each run and their median: on a shared 2-core machine one run's
CPU or tail latency moves by a third between runs of the same binaries,
and the median of alternating runs is the figure to compare with 1.1x.
"""
import re
import statistics
import sys

# "(300/300 pods)" and "(300/300 pods seen bound first)" differ from run to
# run; the row is the same.
COUNTS = re.compile(r",?\s*\(\d+/\d+ pods[^)]*\)")


def read(path):
    rows = {}
    for line in open(path):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or cells[0] in ("what", "---"):
            continue
        try:
            rows[COUNTS.sub("", cells[0])] = float(cells[3])
        except ValueError:
            continue  # "n/a (stock 0)", "1 (both 0)", "no figures"
    return rows


def main(paths):
    if not paths:
        sys.exit("usage: summary.py TABLE.md...")
    runs = [read(p) for p in paths]
    print("bench-fleet: patched/stock in each of %d runs, and the median\n" % len(runs))
    print("| what | " + " | ".join("run %d" % (i + 1) for i in range(len(runs))) + " | median |")
    print("| --- |" + " --- |" * (len(runs) + 1))
    for what in runs[0]:
        vals = [r.get(what) for r in runs]
        if any(v is None for v in vals):
            continue
        print("| %s | %s | %.2f |" % (what, " | ".join("%.2f" % v for v in vals), statistics.median(vals)))


if __name__ == "__main__":
    main(sys.argv[1:])
