#!/usr/bin/env python3
"""Medians of ab.sh's runs: each row under each client variant, against
nfsx and Ganesha; the nfsx / Ganesha ratio of medians with the
per-invocation ratios, then each variant against the first for each server.
    summary.py OUTDIR [VARIANT ...]   (variant order; default: by name)"""
import glob, json, os, statistics, sys
from collections import defaultdict

out = sys.argv[1]
rates, ratios, variants = defaultdict(list), defaultdict(list), set()
for path in sorted(glob.glob(os.path.join(out, "*.json"))):
    variant, rest = os.path.basename(path).split("-", 1)
    variants.add(variant)
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
            rates[(row, variant, server)].append(v)
        if len(m) == 2:
            ratios[(row, variant)].append(m["nfsx"] / m["ganesha"])

variants = sys.argv[2:] or sorted(variants)
rows = sorted({k[0] for k in rates})
print("| row | client | nfsx | Ganesha | nfsx / Ganesha (per run) | n |")
print("|---|---|---:|---:|---:|---:|")
med = {}
for row in rows:
    for v in variants:
        n, g = rates.get((row, v, "nfsx"), []), rates.get((row, v, "ganesha"), [])
        if not n or not g:
            continue
        med[(row, v, "nfsx")], med[(row, v, "ganesha")] = statistics.median(n), statistics.median(g)
        rr = ratios[(row, v)]
        print(f"| {row} | {v} | {statistics.median(n):,.0f} | {statistics.median(g):,.0f} | "
              f"**{statistics.median(n) / statistics.median(g):.2f}** ({min(rr):.2f}-{max(rr):.2f}) | {len(n)} |")
print()
for row in rows:
    for v in variants[1:]:
        for server in ("nfsx", "ganesha"):
            a, b = med.get((row, v, server)), med.get((row, variants[0], server))
            if a and b:
                print(f"{row}: {server} {v} / {variants[0]} = {a / b:.2f}")
