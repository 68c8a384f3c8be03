#!/usr/bin/env python3
"""Medians and per-run ratios of a clients.sh folder: each client build's
MB/s against nfsx and Ganesha, and its CPU per RPC."""
import json, statistics, sys, glob, os, collections
d = sys.argv[1]
rows = collections.defaultdict(lambda: collections.defaultdict(list))
for f in sorted(glob.glob(os.path.join(d, '*.json'))):
    client, row, _ = os.path.basename(f)[:-5].split('-')
    j = json.load(open(f))
    for r in j['runs']:
        if r.get('ok'):
            who = 'nfsx' if r['target'] == j['targets'][0] else 'ganesha'
            rows[(row, client)][who].append((r['mbps'], r['client_cpu_us_per_rpc']))
for (row, client), v in sorted(rows.items()):
    n = [x[0] for x in v['nfsx']]; g = [x[0] for x in v['ganesha']]
    per = [round(a / b, 2) for a, b in zip(n, g)]
    cpu = statistics.median(x[1] for x in v['nfsx'] + v['ganesha'])
    print(f"{row:6} {client:4} nfsx {statistics.median(n):7,.0f}  Ganesha {statistics.median(g):7,.0f} MB/s"
          f"  nfsx/Ganesha {statistics.median(n) / statistics.median(g):.2f} (per run {min(per)}-{max(per)})"
          f"  client us/RPC {cpu:.1f}")
