#!/usr/bin/python3
"""Draws `herald-bench curves`'s CSV into a directory: request latency and CPU against notifications per
user (curves-per-user.png), against the copies in the whole table (curves-table.png) and against the
channels per user (curves-channels.png); the fan-out's time and bytes per copy against the audience
(curves-audience.png). Each figure is drawn when the CSV has its rows.

    scripts/plot-curves.py docs/images/curves.csv docs/images

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
    parser.add_argument("directory")
    args = parser.parse_args()

    latency = defaultdict(lambda: defaultdict(dict))
    cpu = defaultdict(lambda: defaultdict(dict))
    fanout = {}
    storage = {}
    with open(args.csv) as handle:
        for row in csv.DictReader(handle):
            size = int(row["size"])
            if row["curve"] == "audience":
                fanout[size] = float(row["seconds"])
                storage[size] = float(row["bytes_per_copy"])
            else:
                latency[row["curve"]][row["request"]][size] = float(row["p50_ms"])
                cpu[row["curve"]][row["request"]][size] = float(row["herald_us"]) + float(row["postgres_us"])

    axes = {"per_user": ("notifications of the user", "per-user"), "table": ("copies in the whole table", "table"),
            "channels": ("channels of the user", "channels")}
    for curve, (label, name) in axes.items():
        if curve in latency:
            requests_figure(latency[curve], cpu[curve], label, f"{args.directory}/curves-{name}.png")
    if fanout:
        audience_figure(fanout, storage, f"{args.directory}/curves-audience.png")


def requests_figure(latency, cpu, label, path):
    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    for request in latency:
        sizes = sorted(latency[request])
        left.plot(sizes, [latency[request][s] for s in sizes], marker="o", label=request)
        right.plot(sizes, [cpu[request][s] for s in sizes], marker="o", label=request)
    left.set(xscale="log", xlabel=label, ylabel="median latency, ms", title="Latency, one at a time")
    right.set(xscale="log", xlabel=label, ylabel="µs of CPU per request (Herald + PostgreSQL)", title="CPU per request")
    for axis in (left, right):
        axis.set_ylim(bottom=0)
        axis.grid(True, which="both", alpha=0.3)
        axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def audience_figure(fanout, storage, path):
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
    figure.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
