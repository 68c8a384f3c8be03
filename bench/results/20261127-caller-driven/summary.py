#!/usr/bin/env python3
"""Medians of ab.sh's runs: each row under drive_from_caller on and off,
against nfsx and Ganesha; the nfsx / Ganesha ratio of medians with the
per-invocation ratios, and on / off for each server.
    summary.py OUTDIR"""
import glob, json, os, statistics, sys
from collections import defaultdict

out = sys.argv[1]
# (row, mode, server) -> [rate]; (row, mode) -> [nfsx/ganesha per invocation]
rates, ratios = defaultdict(list), defaultdict(list)
for path in sorted(glob.glob(os.path.join(out, "*.json"))):
    mode, rest = os.path.basename(path).split("-", 1)
    stem = rest.rsplit("-", 1)[0]
    by_target = defaultdict(dict)
    for r in json.load(open(path))["runs"]:
        if not r.get("ok"):
            continue
        p = r["point"]
        row = f"{stem} {p['op']}" if "op" in p else stem
        metric = r.get("mbps") if p.get("io_size", 0) >= 1 << 20 else r.get("ops_per_sec")
        server = "ganesha" if r["target"].endswith("/export?version=3") else "nfsx"
        by_target[row][server] = metric
    for row, m in by_target.items():
        for server, v in m.items():
            rates[(row, mode, server)].append(v)
        if len(m) == 2:
            ratios[(row, mode)].append(m["nfsx"] / m["ganesha"])

rows = sorted({k[0] for k in rates})
print("| row | client setting | nfsx | Ganesha | nfsx / Ganesha (per run) | n |")
print("|---|---|---:|---:|---:|---:|")
med = {}
for row in rows:
    for mode in ("on", "off"):
        n, g = rates.get((row, mode, "nfsx"), []), rates.get((row, mode, "ganesha"), [])
        if not n or not g:
            continue
        med[(row, mode, "nfsx")], med[(row, mode, "ganesha")] = statistics.median(n), statistics.median(g)
        rr = ratios[(row, mode)]
        print(f"| {row} | {mode} | {statistics.median(n):,.0f} | {statistics.median(g):,.0f} | "
              f"**{statistics.median(n) / statistics.median(g):.2f}** ({min(rr):.2f}-{max(rr):.2f}) | {len(n)} |")
print()
for row in rows:
    for server in ("nfsx", "ganesha"):
        a, b = med.get((row, "on", server)), med.get((row, "off", server))
        if a and b:
            print(f"{row}: {server} on / off = {a / b:.2f}")
