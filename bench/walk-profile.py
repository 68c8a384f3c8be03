#!/usr/bin/env python3
"""Run by bench/profile.sh (walk-list, walk-stat): summarises `perf script
-F comm,tid,time,ip,sym` of one `nfsx bench metadata` run: only the samples
of the timed walk (from the first to the last sample whose stack holds
`tree::walk`), split into the client's own work and the rest. Work: a frame of nfsx's client or its protocol code, the
runtime running the connection's task (which receives the reply), or the
benchmark's own code between calls. The rest: the walking thread polling for
its reply (tokio's `park_yield`, the client's `poll_for`) and the runtime's
loop around that polling. The work is broken down by function."""
import collections
import re
import sys

WALK = "tree::walk"
WAIT = ("park_yield", "transport::poll_for")
WORK = ("client::", "client_core::", "proto::", "xdr::", "Context::run_task")
# Frames whose callees are listed, outermost first.
EXPAND = [
    "<impl client::client::Client>::readdir::{{closure}}",
    "client::nfs3::Nfs3::call::{{closure}}",
    "client::transport::Connection::call_as::{{closure}}",
    "client::cache::Caches::put_entries_since",
]


def frames(lines):
    out = []
    for line in lines:
        parts = line.strip().split(None, 1)
        if len(parts) == 2:
            name = re.sub(r"\+0x[0-9a-f]+$", "", parts[1]).split(" (")[0]
            out.append(re.sub(r"::h[0-9a-f]{16}$", "", name))
    return out


def samples(stream):
    head, body = None, []
    for line in stream:
        if not line.strip():
            if head:
                yield head, frames(body)
            head, body = None, []
        elif not line.startswith((" ", "\t")):
            m = re.search(r"(\d+\.\d+):", line)
            head = float(m.group(1)) if m else None
            body = []
        else:
            body.append(line)
    if head:
        yield head, frames(body)


def main():
    all_samples = [(t, f) for t, f in samples(sys.stdin) if t is not None]
    walk = [t for t, f in all_samples if any(WALK in x for x in f)]
    if not walk:
        sys.exit("no sample of the walk")
    lo, hi = min(walk), max(walk)
    window = [f for t, f in all_samples if lo <= t <= hi]
    n = len(window)
    def is_work(f):
        if not any("Runtime::block_on" in x for x in f):
            return True  # the benchmark's own code between calls
        return any(w in x for x in f for w in WORK) and not any(w in x for x in f for w in WAIT)

    working = [f for f in window if is_work(f)]
    waiting = n - len(working)
    print(f"walk: {hi - lo:.2f} s, {n} samples, {len(walk)} of them on the walking thread")
    print(f"waiting for the reply (polling, and the runtime's loop around it): {100 * waiting / n:.1f}%")
    print(f"the client's own work: {100 * len(working) / n:.1f}% ({(hi - lo) * len(working) / n:.2f} s)")
    for root in EXPAND:
        under = collections.Counter()
        total = 0
        for f in working:
            for i, x in enumerate(f):
                if root in x:
                    total += 1
                    under[f[i - 1] if i > 0 else "(itself)"] += 1
                    break
        print(f"\n{100 * total / n:5.1f}% {root}, of which:")
        for name, c in under.most_common(6):
            print(f"  {100 * c / n:5.1f}% {name[:110]}")


if __name__ == "__main__":
    main()
