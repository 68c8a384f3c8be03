#!/usr/bin/env python3
"""Medians and per-run ratios (nfsx / Ganesha) of clients.sh's runs:
summary.py OUTDIR"""
import glob, json, os, re, statistics, sys
from collections import defaultdict

out = sys.argv[1]
rates = defaultdict(list)  # (client, vers, op, server) -> [per run]
ratios = defaultdict(list)  # (client, vers, op) -> [per run]
for f in sorted(glob.glob(os.path.join(out, "*.json"))):
    client, vers, _ = re.match(r"(\w+)-v([\d.]+)-(\d+)\.json", os.path.basename(f)).groups()
    d = json.load(open(f))
    per = defaultdict(dict)
    for r in d["runs"]:
        server = "nfsx" if ":12080" in r["target"] else "ganesha"
        per[r["point"]["op"]][server] = r["ops_per_sec"]
    for op, s in per.items():
        for server, v in s.items():
            rates[(client, vers, op, server)].append(v)
        if len(s) == 2:
            ratios[(client, vers, op)].append(s["nfsx"] / s["ganesha"])
print("| client | protocol | row | nfsx | Ganesha | nfsx / Ganesha (per run) |")
print("|---|---|---|---:|---:|---:|")
for (client, vers, op), rs in sorted(ratios.items()):
    n = statistics.median(rates[(client, vers, op, "nfsx")])
    g = statistics.median(rates[(client, vers, op, "ganesha")])
    print(f"| {client} | NFSv{vers} | {op} | {n:,.0f} | {g:,.0f} | **{n / g:.2f}** ({min(rs):.2f}-{max(rs):.2f}) |")
