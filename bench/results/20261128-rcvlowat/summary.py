#!/usr/bin/env python3
"""Medians of ab.sh's rounds: each row, server and client setting; the
mark against none, and nfsx against Ganesha, as ratios of medians with
the per-round range."""
import csv, statistics, sys
from collections import defaultdict

out = sys.argv[1]
v = defaultdict(lambda: defaultdict(list))
for r in csv.DictReader(open(f"{out}/runs.tsv"), delimiter="\t"):
    for k in ("mbps", "ops_per_s", "server_us_per_call", "client_us_per_call", "server_cs_per_call", "client_cs_per_call"):
        v[(r["row"], r["server"], r["client"])][k].append(float(r[k]))
med = statistics.median
rate = lambda row: "ops_per_s" if row.startswith("randread") else "mbps"
print(f"{'row':16s} {'server':8s} {'client':6s} {'rate (median; range)':>24s} {'srv us':>7s} {'cli us':>7s} {'srv cs':>7s} {'cli cs':>7s}")
for (row, s, c), m in sorted(v.items()):
    x = m[rate(row)]
    print(f"{row:16s} {s:8s} {c:6s} {med(x):10.0f} ({min(x):.0f}-{max(x):.0f}){'':5s}"
          f"{med(m['server_us_per_call']):7.0f} {med(m['client_us_per_call']):7.0f} "
          f"{med(m['server_cs_per_call']):7.2f} {med(m['client_cs_per_call']):7.2f}")
def ratio(a, b, k):
    per = [p / q for p, q in zip(a[k], b[k])]
    return f"{med(a[k]) / med(b[k]):.2f} (per round {min(per):.2f}-{max(per):.2f})"
for row in sorted({k[0] for k in v}):
    k = rate(row)
    for s in ("nfsx", "ganesha"):
        if (row, s, "lowat") in v and (row, s, "none") in v:
            print(f"{row}: {s} mark / none {ratio(v[(row, s, 'lowat')], v[(row, s, 'none')], k)}")
    for c in ("lowat", "none"):
        if (row, "nfsx", c) in v and (row, "ganesha", c) in v:
            print(f"{row}: nfsx / Ganesha, client {c}: {ratio(v[(row, 'nfsx', c)], v[(row, 'ganesha', c)], k)}")
