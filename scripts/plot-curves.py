#!/usr/bin/python3
"""Draws `herald-bench curves`'s CSV: request latency and CPU against notifications per user, and the
fan-out's time and bytes per copy against the audience.

    scripts/plot-curves.py curves.csv docs/images/curves-per-user.png docs/images/curves-audience.png

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
    parser.add_argument("per_user_png")
    parser.add_argument("audience_png")
    args = parser.parse_args()

    latency = defaultdict(dict)
    cpu = defaultdict(dict)
    fanout = {}
    storage = {}
    with open(args.csv) as handle:
        for row in csv.DictReader(handle):
            size = int(row["size"])
            if row["curve"] == "per_user":
                latency[row["request"]][size] = float(row["p50_ms"])
                cpu[row["request"]][size] = float(row["herald_us"]) + float(row["postgres_us"])
            elif row["curve"] == "audience":
                fanout[size] = float(row["seconds"])
                storage[size] = float(row["bytes_per_copy"])

    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    for request in latency:
        sizes = sorted(latency[request])
        left.plot(sizes, [latency[request][s] for s in sizes], marker="o", label=request)
        right.plot(sizes, [cpu[request][s] for s in sizes], marker="o", label=request)
    left.set(xscale="log", xlabel="notifications of the user", ylabel="median latency, ms", title="Latency, one at a time")
    right.set(xscale="log", xlabel="notifications of the user", ylabel="µs of CPU per request (Herald + PostgreSQL)",
              title="CPU per request")
    for axis in (left, right):
        axis.set_ylim(bottom=0)
        axis.grid(True, which="both", alpha=0.3)
        axis.legend()
    figure.tight_layout()
    figure.savefig(args.per_user_png, dpi=110)

    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    sizes = sorted(fanout)
    left.plot(sizes, [fanout[s] for s in sizes], marker="o")
    left.set(xscale="log", yscale="log", xlabel="users reached", ylabel="seconds until the last batch committed",
             title="Fan-out of one send")
    right.plot(sizes, [storage[s] for s in sizes], marker="o")
    right.set(xscale="log", xlabel="users reached", ylabel="bytes per copy (table + indexes)", title="Storage per copy")
    right.set_ylim(bottom=0)
    for axis in (left, right):
        axis.grid(True, which="both", alpha=0.3)
    figure.tight_layout()
    figure.savefig(args.audience_png, dpi=110)


if __name__ == "__main__":
    main()
