#!/usr/bin/env python3
"""Medians per row and target of run.sh's JSON files, the nfsx/Ganesha
ratio of medians and the per-run ratios (runs alternate, so run i of one
target pairs with run i of the other)."""
import glob, json, os, statistics, sys

out = sys.argv[1]
for f in sorted(glob.glob(os.path.join(out, '*.json'))):
    d = json.load(open(f))
    rows = {}
    for r in d['runs']:
        if not r.get('ok', True):
            continue
        who = 'nfsx' if ':12060' in r['target'] else 'ganesha'
        k = (tuple(sorted(r['point'].items())), who)
        rows.setdefault(k, []).append(r['ops_per_sec'])
    for p in sorted({k[0] for k in rows}):
        n = rows.get((p, 'nfsx'), []); g = rows.get((p, 'ganesha'), [])
        if not (n and g):
            continue
        per_run = ' '.join(f'{a / b:.2f}' for a, b in zip(n, g))
        print(f"{os.path.basename(f):28} {dict(p)}  nfsx {statistics.median(n):>9.0f}  ganesha {statistics.median(g):>9.0f}"
              f"  ratio {statistics.median(n) / statistics.median(g):.2f}  per run {per_run}")
