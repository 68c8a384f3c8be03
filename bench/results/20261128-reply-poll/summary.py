#!/usr/bin/env python3
"""Medians of ab.sh's runs: each row under each reply-poll budget, against
nfsx and Ganesha; the nfsx / Ganesha ratio of medians with the
per-invocation ratios, and each budget against budget 0 for each server.
    summary.py OUTDIR"""
import glob, json, os, statistics, sys
from collections import defaultdict

out = sys.argv[1]
# (row, mode, server) -> [rate]; (row, mode) -> [nfsx/ganesha per invocation]
rates, ratios, modes = defaultdict(list), defaultdict(list), set()
for path in sorted(glob.glob(os.path.join(out, "*.json"))):
    mode, rest = os.path.basename(path).split("-", 1)
    modes.add(mode)
    stem = rest.rsplit("-", 1)[0]
    by_target = defaultdict(dict)
    for r in json.load(open(path))["runs"]:
        if not r.get("ok"):
            continue
        p = r["point"]
        row = f"{stem} {p['op']}" if "op" in p else stem
        metric = r.get("mbps") if p.get("io_size", 0) >= 1 << 20 else r.get("ops_per_sec")
        server = "ganesha" if "/export?" in r["target"] else "nfsx"
        by_target[row][server] = metric
    for row, m in by_target.items():
        for server, v in m.items():
            rates[(row, mode, server)].append(v)
        if len(m) == 2:
            ratios[(row, mode)].append(m["nfsx"] / m["ganesha"])

modes = sorted(modes, key=lambda m: int(m.removeprefix("poll")))
rows = sorted({k[0] for k in rates})
print("| row | reply_poll_us | nfsx | Ganesha | nfsx / Ganesha (per run) | n |")
print("|---|---:|---:|---:|---:|---:|")
med = {}
for row in rows:
    for mode in modes:
        n, g = rates.get((row, mode, "nfsx"), []), rates.get((row, mode, "ganesha"), [])
        if not n or not g:
            continue
        med[(row, mode, "nfsx")], med[(row, mode, "ganesha")] = statistics.median(n), statistics.median(g)
        rr = ratios[(row, mode)]
        print(f"| {row} | {mode.removeprefix('poll')} | {statistics.median(n):,.0f} | {statistics.median(g):,.0f} | "
              f"**{statistics.median(n) / statistics.median(g):.2f}** ({min(rr):.2f}-{max(rr):.2f}) | {len(n)} |")
print()
for row in rows:
    for mode in modes[1:]:
        for server in ("nfsx", "ganesha"):
            a, b = med.get((row, mode, server)), med.get((row, modes[0], server))
            if a and b:
                print(f"{row}: {server} {mode} / {modes[0]} = {a / b:.2f}")
