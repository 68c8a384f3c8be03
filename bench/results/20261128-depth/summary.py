#!/usr/bin/env python3
"""Medians of run.sh's rounds: reads.tsv (both servers, 1 and 4 READs in
flight, CPU per READ of each side) and wire.tsv (the loopback probe)."""
import csv, statistics, sys
from collections import defaultdict

out = sys.argv[1]
rows = defaultdict(lambda: defaultdict(list))
for r in csv.DictReader(open(f"{out}/reads.tsv"), delimiter="\t"):
    for k, v in r.items():
        if k not in ("round", "case"):
            rows[r["case"]][k].append(float(v))
med = lambda xs: statistics.median(xs)
print("case                 MB/s (median; range)      server us/READ  client us/READ  server cs/READ  client cs/READ")
for case, v in rows.items():
    print(f"{case:20s} {med(v['mbps']):6.0f} ({min(v['mbps']):.0f}-{max(v['mbps']):.0f})"
          f"{med(v['server_us_per_read']):16.0f}{med(v['client_us_per_read']):16.0f}"
          f"{med(v['server_cs_per_read']):16.2f}{med(v['client_cs_per_read']):16.2f}")
for t in ("1t", "1t-nopoll", "4t"):
    a, b = rows.get(f"nfsx-{t}"), rows.get(f"ganesha-{t}")
    if a and b:
        per = [x / y for x, y in zip(a["mbps"], b["mbps"])]
        print(f"nfsx / Ganesha {t:10s} {med(a['mbps']) / med(b['mbps']):.2f} (per round {min(per):.2f}-{max(per):.2f})")
wire = defaultdict(list)
for r in csv.DictReader(open(f"{out}/wire.tsv"), delimiter="\t"):
    wire[(r["probe"], r["depth"])].append(float(r["mbps"]))
for (p, d), xs in sorted(wire.items()):
    print(f"wire {p:8s} depth {d}: {med(xs):6.0f} MB/s ({min(xs):.0f}-{max(xs):.0f})")
