#!/usr/bin/env python3
"""The summary of run-all.sh's OUTDIR: every row, nfsx against Ganesha,
medians and the ratio of medians with the per-run ratios (runs paired in
the order they alternated).
    summary.py OUTDIR"""
import glob, json, os, re, statistics as st, sys

out = sys.argv[1]


def ratio_line(name, unit, a, b, higher_is_better=True):
    if not a or not b:
        return
    ma, mb = st.median(a), st.median(b)
    r = ma / mb if higher_is_better else mb / ma
    per = [x / y if higher_is_better else y / x for x, y in zip(a, b)]
    print(f"| {name} | {ma:,.1f} | {mb:,.1f} | {unit} | **{r:.2f}** ({min(per):.2f}-{max(per):.2f}) |")


print("| row | nfsx (median) | Ganesha (median) | unit | nfsx / Ganesha (per run) |")
print("|---|---:|---:|---|---:|")

csv = os.path.join(out, "libnfs", "samples.csv")
if os.path.exists(csv):
    import csv as c
    rows = list(c.DictReader(open(csv)))
    for test, unit in (("write", "MB/s"), ("read-devnull", "MB/s"), ("create", "creates/s")):
        v = {s: [float(r["rate"]) for r in rows if r["test"] == test and r["system"] == s and r["ok"] == "1"]
             for s in ("nfsx", "ganesha")}
        ratio_line(f"libnfs {test}", unit, v["nfsx"], v["ganesha"])
    for s in ("wire", "wire-sendfile", "wire-copy"):
        v = [float(r["rate"]) for r in rows if r["system"] == s and r["ok"] == "1"]
        if v:
            print(f"| {s} (ceiling) | {st.median(v):,.1f} | | MB/s | |")

for v in ("3", "4"):
    f = os.path.join(out, f"smallops-v{v}", "smallops.txt")
    if not os.path.exists(f):
        continue
    d, b = {}, None
    for line in open(f):
        m = re.match(r"(\w+) run \d+", line)
        if m:
            b = m.group(1)
            continue
        p = line.split()
        if p and p[0] in ("create", "stat", "unlink"):
            d.setdefault((p[0], b), []).append(float(p[-2]))
    for ph in ("create", "stat", "unlink"):
        ratio_line(f"smallops NFSv{v}.0 {ph}" if v == "4" else f"smallops NFSv3 {ph}", "µs each",
                   d.get((ph, "new"), []), d.get((ph, "ganesha"), []), higher_is_better=False)


def runs_of(path, mbps):
    d = json.load(open(path))
    by = {}
    for r in d["runs"]:
        if not r.get("ok"):
            continue
        key = (json.dumps(r["point"], sort_keys=True), "ganesha" if ":" not in r["target"].split("/")[2] else "nfsx")
        metric = r["mbps"] if mbps else r["ops_per_sec"]
        by.setdefault(key, []).append(metric)
    return by


for f in sorted(glob.glob(os.path.join(out, "data-*.json")) + glob.glob(os.path.join(out, "liststat-*.json"))):
    name = os.path.basename(f)[:-5]
    mbps = "-1m-" in name
    by = runs_of(f, mbps)
    for point in sorted({k[0] for k in by}):
        p = json.loads(point)
        label = name + ("" if "op" not in p else f" {p['op']}")
        unit = "MB/s" if mbps else "ops/s"
        ratio_line(label, unit, by.get((point, "nfsx"), []), by.get((point, "ganesha"), []))

f = os.path.join(out, "nfs41.create_rate.json")
if os.path.exists(f):
    rows = json.load(open(f))
    by = {(r["target"], r["threads"]): r["creates_per_s"] for r in rows}
    for t in sorted({k[1] for k in by}):
        ratio_line(f"NFSv4.1 OPEN-create + CLOSE, {t} threads", "creates/s", by[("nfsx", t)], by[("peer", t)])
