#!/usr/bin/env python3
"""Medians, per-run ratios and client CPU per RPC of every JSON in a folder
made by ab.sh (targets: this build, the build before, Ganesha)."""
import json, statistics, sys, glob, os
for f in sorted(glob.glob(os.path.join(sys.argv[1], '*.json'))):
    j = json.load(open(f))
    t = j['targets']
    runs = {x: [r for r in j['runs'] if r['target'] == x and r.get('ok')] for x in t}
    key = 'mbps' if 'seq' in os.path.basename(f) else 'ops_per_sec'
    vals = {x: [r[key] for r in runs[x]] for x in t}
    med = {x: statistics.median(v) for x, v in vals.items()}
    per_run = [round(a / b, 2) for a, b in zip(vals[t[0]], vals[t[-1]])]
    cpu = {x: statistics.median(r['client_cpu_us_per_rpc'] for r in runs[x]) for x in t}
    print(f"{os.path.basename(f)[:-5]:22} {key:11} " + " / ".join(f"{med[x]:,.0f}" for x in t)
          + f"  new/peer {med[t[0]] / med[t[-1]]:.2f} (per run {min(per_run)}-{max(per_run)})"
          + f"  new/old {med[t[0]] / med[t[1]]:.2f}  client us/RPC " + " / ".join(f"{cpu[x]:.1f}" for x in t))
