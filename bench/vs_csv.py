#!/usr/bin/env python3
"""bench/vs-ganesha.sh's samples as Markdown (standard library only); run
through bench/summarize.py:

    bench/summarize.py OUTDIR/samples.csv [--metrics OUTDIR/metrics] [--raw] [--exclude-busy]

For every (test, system): n, median, mean and 95% confidence interval of the
mean (Student's t, n-1 degrees of freedom) of the rate column, plus the
nfsx/Ganesha ratio of the medians and the median of the per-run ratios (run i
of nfsx against run i of Ganesha, measured minutes apart).  Failed samples
(ok=0) are listed, not averaged.  With --metrics, the nfsx per-procedure
request counts and mean server-side latencies of each phase are tabulated
from the Prometheus snapshots taken between phases.  --raw appends every
sample; --exclude-busy leaves out samples during which another process's
compiler was running (busy > 0), as a check on the all-samples table.
"""
import csv
import os
import re
import statistics
import sys
from collections import defaultdict

from summarize import ci95


def fmt(x, digits=1):
    return "-" if x is None else f"{x:,.{digits}f}"


ORDER = ["write", "read", "read-devnull", "write-nocommit", "commit", "write-withcommit", "create"]
SYSTEMS = (("nfsx", "nfsx"), ("ganesha", "Ganesha"), ("local", "local file system (dd)"),
           ("wire", "wire limit: 128 B request, 1 MiB reply from memory (`bench/wire.c`)"),
           ("wire-sendfile", "wire limit, reply by sendfile from the file"),
           ("wire-copy", "wire limit from memory, the client copying each reply once more (as nfs-cat)"))
LABEL = {
    "write": "{size} sequential write, `nfs-cp` (incl. COMMIT)",
    "read": "{size} sequential read, `nfs-cp` to /dev/shm (server cache warm)",
    "read-devnull": "{size} sequential read, `nfs-cat` to /dev/null (server cache warm)",
    "write-nocommit": "{size} write, until last WRITE reply (`seqwrite`)",
    "commit": "COMMIT of {size} alone, as MB/s flushed (`seqwrite`)",
    "write-withcommit": "{size} write + COMMIT (`seqwrite`)",
    "create": "{files} file creations (`nfsops createmany`)",
}


def label(test, rows):
    r = next((r for r in rows if r["test"] == test and r["ok"] == "1"), None)
    if r is None:
        return test
    b = int(r["bytes"])
    size = f"{b / 2**30:g} GiB" if b >= 2**30 else f"{b / 2**20:g} MiB"
    return LABEL.get(test, test).format(size=size, files=r["ops"])


def summarize(rows):
    ok = defaultdict(dict)      # (test, system) -> {run: rate}
    busy = defaultdict(int)     # (test, system) -> samples during which a compile ran
    failed = []
    for r in rows:
        if r["ok"] == "1":
            ok[(r["test"], r["system"])][int(r["run"])] = float(r["rate"])
            if int(r.get("busy") or 0) > 0:
                busy[(r["test"], r["system"])] += 1
        else:
            failed.append(r)
    tests = [t for t in ORDER if any(k[0] == t for k in ok)]
    tests += sorted({k[0] for k in ok} - set(tests))
    units = {r["test"]: r["unit"] for r in rows}
    out = []
    out.append("| test | unit | system | n (busy) | median | mean ± 95% CI | min | max | nfsx/Ganesha (medians) | per-run ratios: median [min, max] |")
    out.append("|---|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for t in tests:
        a, b = ok.get((t, "nfsx"), {}), ok.get((t, "ganesha"), {})
        ratio = pair = "-"
        if a and b:
            ratio = f"{statistics.median(a.values()) / statistics.median(b.values()):.2f}"
            pr = [a[i] / b[i] for i in sorted(set(a) & set(b)) if b[i] > 0]
            if pr:
                pair = f"{statistics.median(pr):.2f} [{min(pr):.2f}, {max(pr):.2f}]"
        first_row = True
        for sysname, title in SYSTEMS:
            d = ok.get((t, sysname), {})
            if not d:
                continue
            xs = list(d.values())
            h = ci95(xs)
            mean = statistics.mean(xs)
            digits = 0 if max(xs) >= 100 else 1
            ci = f"{fmt(mean, digits)} ± {fmt(h, digits)}"
            first, first_row = first_row, False
            out.append(f"| {label(t, rows) if first else ''} | {units.get(t, '') if first else ''} | "
                       f"{title} | {len(xs)} ({busy[(t, sysname)]}) | "
                       f"{fmt(statistics.median(xs), digits)} | {ci} | {fmt(min(xs), digits)} | "
                       f"{fmt(max(xs), digits)} | {ratio if first else ''} | {pair if first else ''} |")
    out.append("")
    out.append("Ratios are rates, nfsx divided by Ganesha: above 1 nfsx is faster, below 1 slower. "
               "n (busy): samples, and how many of them saw another process's compiler running.")
    if failed:
        out.append("")
        out.append("Failed samples (not included above):")
        out.append("")
        for r in failed:
            out.append(f"- run {r['run']} {r['system']} {r['test']} after {r['seconds']} s: {r['note']}")
    return "\n".join(out)


def raw_table(rows):
    out = ["| run | system | test | seconds | rate | unit | load1 | busy ticks |", "|---:|---|---|---:|---:|---|---:|---:|"]
    for r in rows:
        out.append(f"| {r['run']} | {r['system']} | {r['test']}{'' if r['ok'] == '1' else ' (FAILED)'} | "
                   f"{float(r['seconds']):.3f} | {r['rate']} | {r['unit']} | {r['load1']} | {r.get('busy', '')} |")
    return "\n".join(out)


METRIC = re.compile(r'^(nfsx_requests_total|nfsx_request_duration_seconds_sum|nfsx_request_errors_total)\{proc="([^"]+)"\} (\S+)$')
PLAIN = re.compile(r'^(nfsx_received_bytes_total|nfsx_sent_bytes_total|nfsx_connections_total) (\S+)$')


def parse_metrics(path):
    m = defaultdict(float)
    with open(path) as f:
        for line in f:
            line = line.strip()
            g = METRIC.match(line)
            if g:
                m[(g.group(1), g.group(2))] = float(g.group(3))
                continue
            g = PLAIN.match(line)
            if g:
                m[(g.group(1), "")] = float(g.group(2))
    return m


# (snapshot taken after the phase, title); phases titled None are not shown
PHASES = [("1-write", "nfs-cp write"), ("2-read", "nfs-cp read"), ("2b-read-devnull", "nfs-cat read"),
          ("2c-verify", None), ("3-split", "seqwrite"), ("4-create", "createmany")]


def metrics_tables(mdir):
    runs = sorted(d for d in os.listdir(mdir) if d.startswith("nfsx-run"))
    # phase -> proc -> list of (count, mean latency) over runs
    per = defaultdict(lambda: defaultdict(list))
    bytes_ = defaultdict(list)
    for d in runs:
        prev = None
        for ph, _ in [("0-start", "")] + PHASES:
            p = os.path.join(mdir, d, ph + ".txt")
            if not os.path.exists(p) or os.path.getsize(p) == 0:
                continue  # phase skipped (or scrape failed): diff against the last snapshot
            cur = parse_metrics(p)
            if prev is not None:
                procs = {k[1] for k in cur if k[0] == "nfsx_requests_total"}
                for proc in procs:
                    n = cur[("nfsx_requests_total", proc)] - prev[("nfsx_requests_total", proc)]
                    if n <= 0:
                        continue
                    s = cur[("nfsx_request_duration_seconds_sum", proc)] - prev[("nfsx_request_duration_seconds_sum", proc)]
                    e = cur[("nfsx_request_errors_total", proc)] - prev[("nfsx_request_errors_total", proc)]
                    per[ph][proc].append((n, s / n, e))
                bytes_[ph].append((cur[("nfsx_received_bytes_total", "")] - prev[("nfsx_received_bytes_total", "")],
                                   cur[("nfsx_sent_bytes_total", "")] - prev[("nfsx_sent_bytes_total", "")]))
            prev = cur
    out = [f"nfsx requests per phase (from `--metrics`; {len(runs)} runs; count = median over runs, "
           "latency = server time from decoded request to encoded reply, median over runs of the per-run mean)", ""]
    out.append("| phase | procedure | requests | errors | mean latency (µs) |")
    out.append("|---|---|---:|---:|---:|")
    for ph, name in PHASES:
        if ph not in per or name is None:
            continue
        first = True
        for proc in sorted(per[ph], key=lambda p: (-statistics.median(x[0] for x in per[ph][p]), p)):
            xs = per[ph][proc]
            cnt = statistics.median(x[0] for x in xs)
            counts = sorted({int(x[0]) for x in xs})
            cnt_s = f"{cnt:,.0f}" if len(counts) == 1 else f"{cnt:,.0f} ({counts[0]}–{counts[-1]})"
            err = statistics.median(x[2] for x in xs)
            lat = statistics.median(x[1] for x in xs) * 1e6
            out.append(f"| {name if first else ''} | {proc} | {cnt_s} | {err:,.0f} | {lat:,.1f} |")
            first = False
        if bytes_[ph]:
            rx = statistics.median(b[0] for b in bytes_[ph])
            tx = statistics.median(b[1] for b in bytes_[ph])
            out.append(f"| | *bytes received / sent* | {rx / 2**20:,.1f} MiB / {tx / 2**20:,.1f} MiB | | |")
    return "\n".join(out)


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[1], newline="") as f:
        rows = list(csv.DictReader(f))
    if "--exclude-busy" in argv:
        rows = [r for r in rows if int(r.get("busy") or 0) == 0]
    print(summarize(rows))
    if "--metrics" in argv:
        mdir = argv[argv.index("--metrics") + 1]
        if os.path.isdir(mdir):
            print()
            print(metrics_tables(mdir))
    if "--raw" in argv:
        print()
        print(raw_table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
