#!/usr/bin/env python3
"""One `nfsx bench data` run's rate and each side's cost per call.

    per-call.py RUN_JSON SERVER_PERF CLIENT_PERF

RUN_JSON is the run's `--json` file (its first run is taken); the two
others are `perf stat -x, -e task-clock,context-switches` output for the
server process over the run and for the client. Prints one tab-separated
line: MB/s, calls, calls/s, server µs of CPU per call, client µs per call,
server context switches per call, client context switches per call."""
import json
import sys


def stat(path):
    values = {}
    for line in open(path):
        parts = line.strip().split(",")
        if len(parts) > 2 and parts[0][:1].isdigit():
            values[parts[2]] = float(parts[0])
    return values


run_json, server, client = sys.argv[1:4]
run = json.load(open(run_json))["runs"][0]
s, c, n = stat(server), stat(client), run["ops"]
print(
    f"{run['mbps']:.0f}\t{n}\t{run['ops_per_sec']:.0f}\t{s['task-clock'] * 1e3 / n:.1f}\t"
    f"{c['task-clock'] * 1e3 / n:.1f}\t{s['context-switches'] / n:.2f}\t{c['context-switches'] / n:.2f}"
)
