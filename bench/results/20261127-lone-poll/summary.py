#!/usr/bin/env python3
"""ab.sh's nfsx bench rows: for each row the medians of this build with
lone_poll_us at its default (on), with lone_poll_us = 0 (off) and of
Ganesha, the ratios of medians and the per-run ratios (runs alternate, so
run i of each target ran side by side).
    summary.py OUTDIR"""
import glob, json, os, statistics, sys
from collections import defaultdict

out = sys.argv[1]
print("| row | on | off | Ganesha | on / Ganesha (per run) | on / off (per run) |")
print("|---|---:|---:|---:|---:|---:|")
for path in sorted(glob.glob(os.path.join(out, "*.json"))):
    stem = os.path.basename(path)[:-5]
    rows = defaultdict(lambda: defaultdict(dict))  # row -> server -> run -> rate
    for r in json.load(open(path))["runs"]:
        if not r.get("ok"):
            continue
        p = r["point"]
        row = f"{stem} {p['op']}" if "op" in p else stem
        t = r["target"]
        server = "ganesha" if "/export?" in t else ("on" if "/on/" in t else "off")
        rows[row][server][r["run"]] = r["ops_per_sec"]
    for row, by in rows.items():
        med = {s: statistics.median(v.values()) for s, v in by.items()}
        def per_run(a, b):
            rr = [by[a][i] / by[b][i] for i in by[a] if i in by[b]]
            return f"{min(rr):.2f}-{max(rr):.2f}"
        print(f"| {row} | {med['on']:,.0f} | {med['off']:,.0f} | {med['ganesha']:,.0f} | "
              f"**{med['on'] / med['ganesha']:.2f}** ({per_run('on', 'ganesha')}) | "
              f"{med['on'] / med['off']:.2f} ({per_run('on', 'off')}) |")
