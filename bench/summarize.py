#!/usr/bin/env python3
"""Medians, ratios and their spread from what the scripts in bench/ write
(standard library only).

    bench/summarize.py OUT
    bench/summarize.py OUT/samples.csv [--metrics OUT/metrics] [--raw] [--exclude-busy]

The first form reads a folder of standing-table.sh, ab.sh, smallops.sh,
study.sh, ceph.sh or multi-head.sh and prints every row it finds as
Markdown:

- `nfsx bench` JSON files: per row (file and point) each target's median,
  the ratio of the first target's median to each other's with the range of
  the per-run ratios, and the client's CPU per RPC. ab.sh's client variants
  (OUT/clients.txt) get a second table: each variant against the first.
- libnfs/samples.csv of vs-ganesha.sh: writes, reads, durable creations
  and the wire probes.
- smallops.txt (smallops.sh, here or one folder down): µs per creation,
  stat and removal, and nfsx's server CPU per RPC.
- nfs41*.create_rate.json: the NFSv4.1 driver's creations per second.
- the flush counters around a stable-write row: flushes per stable write.
- cpu.tsv and percall.tsv: medians of each side's CPU per call.
- tree-cpu.csv (tree-cpu.sh): per phase of the fuse-nfs tree workload, each
  server's wall time, server CPU seconds and the client's, and nfsx's
  server CPU per RPC.

Ratios are nfsx over NFS-Ganesha (for times per operation, Ganesha's time
over nfsx's), so above 1 nfsx is ahead. A per-run ratio compares run i of
one server with run i of the other, taken minutes apart: on a machine whose
speed drifts it is the figure to trust, and its range is shown. tree-cpu.csv
holds seconds spent on a fixed piece of work, so there the ratio is nfsx's
seconds over Ganesha's: below 1 nfsx spends less.

The second form summarises vs-ganesha.sh's samples alone, with the mean and
95% confidence interval (Student's t) of every cell (bench/vs_csv.py).
"""
import csv
import glob
import json
import math
import os
import re
import statistics as st
import sys
from collections import defaultdict

T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
        9: 2.262, 10: 2.228, 11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131,
        16: 2.120, 17: 2.110, 18: 2.101, 19: 2.093, 20: 2.086, 25: 2.060, 30: 2.042,
        40: 2.021, 60: 2.000, 120: 1.980}


def t975(dof):
    """Two-sided 95% quantile of Student's t with `dof` degrees of freedom."""
    if dof in T975:
        return T975[dof]
    above = sorted(k for k in T975 if k >= dof)
    return T975[above[0]] if above else 1.960


def ci95(xs):
    """Half-width of the 95% confidence interval of the mean, None below 2 samples."""
    if len(xs) < 2:
        return None
    return t975(len(xs) - 1) * st.stdev(xs) / math.sqrt(len(xs))


def num(x):
    if x is None:
        return "-"
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:,.1f}" if abs(x) >= 10 else f"{x:,.2f}"


def with_ci(xs):
    h = ci95(xs)
    return f"{num(st.median(xs))} ({num(st.mean(xs))} ± {num(h)})" if h is not None else num(st.median(xs))


def ratio(a, b, higher_is_better=True):
    """'r (min-max)': ratio of the medians and the range of the per-run ratios."""
    if not a or not b:
        return "-"
    if higher_is_better:
        r, per = st.median(a) / st.median(b), [x / y for x, y in zip(a, b) if y]
    else:
        r, per = st.median(b) / st.median(a), [y / x for x, y in zip(a, b) if x]
    return f"**{r:.2f}** ({min(per):.2f}-{max(per):.2f})" if per else f"**{r:.2f}**"


def table(header, rows):
    if not rows:
        return
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" if i == 0 else "---:" for i in range(len(header))) + "|")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    print()


# ---------------------------------------------------------------- nfsx bench JSON

def target_label(url, nfsx_ports):
    m = re.match(r"nfs://[^/:]+(?::(\d+))?(/[^?]*)", url)
    if not m:
        return os.path.basename(url.rstrip("/")) or url
    port = m.group(1)
    sec = re.search(r"[?&]sec=([a-z0-9]+)", url)
    suffix = f" {sec.group(1)}" if sec else ""
    if port is None:
        return "Ganesha" + suffix
    return ("nfsx" if len(nfsx_ports) == 1 else f"nfsx:{port}") + suffix


def metric_of(d, point):
    if d.get("workload") == "data":
        return "mbps" if point.get("io_size", 0) >= 1 << 20 else "ops_per_sec"
    if d.get("workload") == "metadata":
        return "ops_per_sec"
    return (d.get("metrics") or ["ops_per_sec"])[0]


def load_series(out):
    """series -> list of (file index, parsed JSON); `NAME-<n>.json` files are runs of NAME."""
    series = defaultdict(list)
    for f in sorted(glob.glob(os.path.join(out, "*.json"))):
        try:
            d = json.load(open(f))
        except (OSError, ValueError):
            continue
        if not isinstance(d, dict) or "runs" not in d:
            continue
        stem = os.path.basename(f)[:-5]
        m = re.match(r"(.*)-(\d+)$", stem)
        name, idx = (m.group(1), int(m.group(2))) if m else (stem, 0)
        series[name].append((idx, d))
    return {k: [d for _, d in sorted(v, key=lambda x: x[0])] for k, v in series.items()}


def collect(docs):
    """(point, metric) -> target url -> [values in run order], and client CPU per RPC."""
    vals, cpu, order = defaultdict(lambda: defaultdict(list)), defaultdict(lambda: defaultdict(list)), []
    for d in docs:
        for t in d.get("targets", []):
            if t not in order:
                order.append(t)
        for r in d["runs"]:
            if not r.get("ok"):
                continue
            point = r.get("point") or {}
            metric = metric_of(d, point)
            if not isinstance(r.get(metric), (int, float)):
                continue
            key = (json.dumps(point, sort_keys=True), metric)
            vals[key][r["target"]].append(r[metric])
            if isinstance(r.get("client_cpu_us_per_rpc"), (int, float)):
                cpu[key][r["target"]].append(r["client_cpu_us_per_rpc"])
    return vals, cpu, order


def point_label(points, point):
    varying = [k for k in sorted(point) if len({json.dumps(p.get(k)) for p in points}) > 1]
    return " ".join(f"{k}={point[k]}" for k in varying)


def json_rows(out):
    series = load_series(out)
    variants = [v for v in read_lines(os.path.join(out, "clients.txt")) if v]
    groups = defaultdict(list)  # target labels -> rows
    by_variant = defaultdict(dict)  # (row name, point label, target) -> variant -> values
    for name, docs in sorted(series.items()):
        vals, cpu, order = collect(docs)
        if not vals:
            continue
        ports = {re.match(r"nfs://[^/:]+:(\d+)", t).group(1) for t in order if re.match(r"nfs://[^/:]+:\d+", t)}
        labels = tuple(target_label(t, ports) for t in order)
        points = [json.loads(k[0]) for k in vals]
        for (pj, metric), per in sorted(vals.items()):
            label = f"{name} {point_label(points, json.loads(pj))}".strip()
            cols = [with_ci(per[t]) if per.get(t) else "-" for t in order]
            ratios = [ratio(per.get(order[0]), per.get(t)) for t in order[1:]]
            cpus = " / ".join(num(st.median(cpu[(pj, metric)][t])) if cpu[(pj, metric)].get(t) else "-" for t in order)
            unit = "MB/s" if metric == "mbps" else "per s" if metric == "ops_per_sec" else metric
            groups[labels].append([label, unit] + cols + ratios + [cpus])
            v = next((v for v in variants if name.startswith(v + "-")), None)
            if v is not None:
                for t, lab in zip(order, labels):
                    by_variant[(name[len(v) + 1:], point_label(points, json.loads(pj)), lab)][v] = per.get(t, [])
    for labels, rows in groups.items():
        header = ["row", "unit"] + [f"{l} median (mean ± 95% CI)" for l in labels] + \
            [f"{labels[0]} / {l} (per run)" for l in labels[1:]] + ["client µs per RPC"]
        table(header, rows)
    if len(variants) > 1:
        rows = []
        for (row, pl, lab), per in sorted(by_variant.items()):
            first = per.get(variants[0], [])
            rows.append([f"{row} {pl}".strip(), lab] + [num(st.median(per[v])) if per.get(v) else "-" for v in variants]
                        + [ratio(first, per.get(v)) for v in variants[1:]])
        table(["row", "server"] + variants + [f"{variants[0]} / {v} (per run)" for v in variants[1:]], rows)


# ---------------------------------------------------------------- the other files

def read_lines(path):
    try:
        return [l.strip() for l in open(path)]
    except OSError:
        return []


def libnfs_rows(out):
    path = os.path.join(out, "libnfs", "samples.csv")
    if not os.path.exists(path):
        return
    rows = list(csv.DictReader(open(path)))
    lines = []
    for test, unit in (("write", "MB/s"), ("read", "MB/s"), ("read-devnull", "MB/s"), ("create", "creates/s")):
        v = {s: [float(r["rate"]) for r in rows if r["test"] == test and r["system"] == s and r["ok"] == "1"]
             for s in ("nfsx", "ganesha")}
        if v["nfsx"] and v["ganesha"]:
            lines.append([f"libnfs {test}", unit, with_ci(v["nfsx"]), with_ci(v["ganesha"]), ratio(v["nfsx"], v["ganesha"])])
    for probe in ("wire", "wire-sendfile", "wire-copy"):
        v = [float(r["rate"]) for r in rows if r["system"] == probe and r["ok"] == "1"]
        if v:
            lines.append([f"{probe} (the loopback's limit)", "MB/s", with_ci(v), "", ""])
    table(["row", "unit", "nfsx median (mean ± 95% CI)", "Ganesha", "nfsx / Ganesha (per run)"], lines)


def smallops_rows(out):
    lines = []
    for path in sorted(glob.glob(os.path.join(out, "smallops.txt")) + glob.glob(os.path.join(out, "*", "smallops.txt"))):
        d, label = defaultdict(list), None
        for line in open(path):
            m = re.match(r"(\S+) run \d+", line)
            if m:
                label = m.group(1)
                continue
            p = line.split()
            if p and p[0] in ("create", "stat", "unlink") and len(p) > 2:
                d[(p[0], label)].append(float(p[-2]))
            elif p and p[0] == "server_cpu_us_per_rpc":
                d[("server CPU µs per RPC", label)].append(float(p[1]))
        name = os.path.basename(os.path.dirname(path)) if os.path.dirname(path) != out.rstrip("/") else "smallops"
        labels = sorted({k[1] for k in d})
        for phase in ("create", "stat", "unlink", "server CPU µs per RPC"):
            for lab in labels:
                if lab.startswith("ganesha") or not d.get((phase, lab)):
                    continue
                peer = "ganesha" + lab[len(lab.split("-")[0]):]
                a, b = d[(phase, lab)], d.get((phase, peer), [])
                unit = "µs" if phase.startswith("server") else "µs each"
                lines.append([f"{name} {phase}", lab, with_ci(a), with_ci(b) if b else "-",
                              ratio(a, b, higher_is_better=False) if b and not phase.startswith("server") else "-"])
    table(["row", "nfsx", "nfsx median (mean ± 95% CI)", "Ganesha", "Ganesha's time / nfsx's (per run)"], lines)


def create41_rows(out):
    by = defaultdict(list)
    for path in sorted(glob.glob(os.path.join(out, "*create_rate.json"))):
        for r in json.load(open(path)):
            by[(r["target"], r["threads"])] = r["creates_per_s"]
    lines = []
    for t in sorted({k[1] for k in by}):
        a, b = by.get(("nfsx", t), []), by.get(("peer", t), [])
        lines.append([f"NFSv4.1 OPEN-create + CLOSE, {t} thread{'' if t == 1 else 's'}", with_ci(a) if a else "-", with_ci(b) if b else "-", ratio(a, b)])
    table(["row", "nfsx creates/s median (mean ± 95% CI)", "Ganesha", "nfsx / Ganesha (per run)"], lines)


def flush_rows(out):
    lines = []
    for before in sorted(glob.glob(os.path.join(out, "*.metrics-before.txt"))):
        after = before.replace("-before.txt", "-after.txt")
        if not os.path.exists(after):
            continue

        def total(path, name):
            return sum(float(l.split()[-1]) for l in open(path) if l.startswith(name + "{") or l.startswith(name + " "))

        flushes = total(after, "nfsx_backend_flushes_total") - total(before, "nfsx_backend_flushes_total")
        callers = total(after, "nfsx_backend_flush_callers_total") - total(before, "nfsx_backend_flush_callers_total")
        if callers > 0:
            lines.append([os.path.basename(before).split(".metrics")[0], f"{flushes / callers:.3f}", f"{callers:,.0f}"])
    table(["row", "nfsx flushes per stable write", "stable writes"], lines)


def tsv_rows(out):
    for name in ("cpu.tsv", "percall.tsv"):
        path = os.path.join(out, name)
        if not os.path.exists(path):
            continue
        rows = list(csv.reader(open(path), delimiter="\t"))
        if len(rows) < 2:
            continue
        head = rows[0]
        first_num = head.index("mbps")
        keys = [i for i in range(first_num) if head[i] != "run"]
        groups = defaultdict(list)
        for r in rows[1:]:
            if len(r) == len(head):
                groups[tuple(r[i] for i in keys)].append([float(x) for x in r[first_num:]])
        lines = [list(k) + [num(st.median(col)) for col in zip(*v)] for k, v in sorted(groups.items())]
        print(f"{name}: medians")
        print()
        table([head[i] for i in keys] + head[first_num:], lines)


def tree_cpu_rows(out):
    path = os.path.join(out, "tree-cpu.csv")
    if not os.path.exists(path):
        return
    rows = list(csv.DictReader(open(path)))
    good = [r for r in rows if r["ok"] == "1"]
    failed = sorted({(int(r["run"]), r["target"]) for r in rows if r["ok"] != "1"})
    lines = []
    for phase in ("extract", "copy", "diff", "stat", "remove", "total"):
        mine = [r for r in good if r["phase"] == phase]
        if not mine:
            continue
        for col, what in (("wall_s", "wall s"), ("server_cpu_s", "server CPU s"), ("client_cpu_s", "fuse-nfs CPU s")):
            by = {t: {int(r["run"]): float(r[col]) for r in mine if r["target"] == t} for t in ("nfsx", "ganesha")}
            a = [v for _, v in sorted(by["nfsx"].items())]
            b = [v for _, v in sorted(by["ganesha"].items())]
            # Per-run ratios pair the runs both servers completed.
            both = sorted(set(by["nfsx"]) & set(by["ganesha"]))
            pa, pb = [by["nfsx"][k] for k in both], [by["ganesha"][k] for k in both]
            r = ratio(pa, pb) if pb and st.median(pb) > 0 else "-"
            per_rpc = "-"
            if col == "server_cpu_s":
                calls = [(float(x["server_cpu_s"]), float(x["server_rpcs"])) for x in mine
                         if x["target"] == "nfsx" and x["server_rpcs"] not in ("", "0")]
                if calls:
                    per_rpc = f"{num(st.median(n for _, n in calls))} ({num(st.median(c * 1e6 / n for c, n in calls))})"
            lines.append([phase, what, with_ci(a) if a else "-", with_ci(b) if b else "-", r, per_rpc])
    print("tree-cpu.csv: fuse-nfs, NFSv3; seconds for the same work, so below 1 nfsx spends less")
    print()
    table(["phase", "measure", "nfsx median (mean ± 95% CI)", "Ganesha median (mean ± 95% CI)",
           "nfsx / Ganesha (per run)", "nfsx RPCs (server µs each)"], lines)
    if failed:
        print("failed (left out): " + ", ".join(f"run {n} {t}" for n, t in failed))
        print()


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    if argv[1].endswith(".csv"):
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import vs_csv
        return vs_csv.main(argv)
    out = argv[1]
    libnfs_rows(out)
    smallops_rows(out)
    json_rows(out)
    flush_rows(out)
    create41_rows(out)
    tsv_rows(out)
    tree_cpu_rows(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
