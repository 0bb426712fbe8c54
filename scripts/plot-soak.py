#!/usr/bin/python3
"""Draws `herald-bench soak`'s per-minute CSV: requests a second and p99 latency by kind of request.

    scripts/plot-soak.py soak.csv docs/images/soak.png [--events "3.5:herald 2 killed,6:standby restarted"]

Needs Debian's python3-matplotlib.
"""
import argparse
import csv
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("csv")
    parser.add_argument("png")
    parser.add_argument("--events", default="", help="minute:label pairs, comma-separated, drawn as vertical lines")
    args = parser.parse_args()

    rate = defaultdict(dict)
    p99 = defaultdict(dict)
    with open(args.csv) as handle:
        for row in csv.DictReader(handle):
            minute = int(row["minute"])
            rate[row["kind"]][minute] = float(row["per_second"])
            p99[row["kind"]][minute] = float(row["p99_ms"])

    figure, (top, bottom) = plt.subplots(2, 1, figsize=(10, 7), sharex=True)
    for kind in sorted(rate):
        minutes = sorted(rate[kind])
        top.plot(minutes, [rate[kind][m] for m in minutes], marker="o", label=kind)
        bottom.plot(minutes, [p99[kind][m] for m in minutes], marker="o", label=kind)
    top.set_ylabel("requests / s")
    top.set_title("herald-bench soak: 3 Herald processes behind HAProxy, primary + read standby")
    bottom.set_ylabel("p99 latency (ms)")
    bottom.set_yscale("log")
    bottom.set_xlabel("minute of the run")
    for axis in (top, bottom):
        axis.grid(True, alpha=0.3)
        for event in filter(None, args.events.split(",")):
            minute, label = event.split(":", 1)
            axis.axvline(float(minute), color="grey", linestyle="--")
            if axis is top:
                axis.text(float(minute), axis.get_ylim()[1] * 0.95, " " + label, fontsize=8, va="top")
    top.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    figure.tight_layout()
    figure.savefig(args.png, dpi=110)


if __name__ == "__main__":
    main()
