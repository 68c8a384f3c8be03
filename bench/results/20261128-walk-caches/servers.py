#!/usr/bin/env python3
"""Medians of servers.sh: entries/s of each server per row, and the ratios
new / Ganesha, old / Ganesha, new / old with their per-invocation ranges.
    servers.py OUTDIR"""
import glob, json, os, statistics, sys
from collections import defaultdict

rates, per_run = defaultdict(list), defaultdict(list)
for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))):
    by = defaultdict(dict)
    for r in json.load(open(path))["runs"]:
        if r.get("ok"):
            t = r["target"]
            who = "ganesha" if "/export?" in t else ("new" if ":12080" in t else "old")
            by[r["point"]["op"]][who] = r["ops_per_sec"]
    for op, m in by.items():
        for who, v in m.items():
            rates[(op, who)].append(v)
        if len(m) == 3:
            per_run[op].append(m)
print("| row | nfsx (this build) | nfsx (before) | Ganesha | this / Ganesha | before / Ganesha | this / before | n |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for op in sorted(per_run):
    med = {w: statistics.median(rates[(op, w)]) for w in ("new", "old", "ganesha")}
    def ratio(a, b):
        rr = [m[a] / m[b] for m in per_run[op]]
        return f"**{med[a] / med[b]:.2f}** ({min(rr):.2f}-{max(rr):.2f})"
    print(f"| {op} | {med['new']:,.0f} | {med['old']:,.0f} | {med['ganesha']:,.0f} | {ratio('new', 'ganesha')} | "
          f"{ratio('old', 'ganesha')} | {ratio('new', 'old')} | {len(per_run[op])} |")
