#!/usr/bin/env python3
"""How soon a blocked POSIX lock is granted after the unlock, on a directory.

    bench/lock-wake.py DIR [ROUNDS] [HOLD_MS]

Each round: this process takes a write lock on DIR/lock-wake (fcntl, the
whole file), a child asks for the same lock with F_SETLKW and blocks, the
parent holds on for HOLD_MS (default 300), unlocks, and the child notes
when its lock came. Prints the median, minimum and maximum of the delays
in milliseconds. Through an nfsx mount over NFSv3 the delay is that of
the server's NLM_GRANTED call (or of the client asking again, when it
cannot take calls); on a local directory it is the kernel's wake-up.
"""
import fcntl
import os
import statistics
import sys
import time


def round_once(path: str, hold: float) -> float:
    r, w = os.pipe()
    fa = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    fcntl.lockf(fa, fcntl.LOCK_EX)
    pid = os.fork()
    if pid == 0:
        fb = os.open(path, os.O_RDWR)
        os.write(w, b"x")
        fcntl.lockf(fb, fcntl.LOCK_EX)
        os.write(w, repr(time.time()).encode())
        os._exit(0)
    os.read(r, 1)
    time.sleep(hold)
    unlocked = time.time()
    fcntl.lockf(fa, fcntl.LOCK_UN)
    granted = float(os.read(r, 100))
    os.waitpid(pid, 0)
    os.close(fa)
    os.close(r)
    os.close(w)
    return (granted - unlocked) * 1000


def main() -> None:
    directory = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    hold = (float(sys.argv[3]) if len(sys.argv) > 3 else 300) / 1000
    path = os.path.join(directory, "lock-wake")
    delays = sorted(round_once(path, hold) for _ in range(rounds))
    print(f"{directory}: granted after the unlock, ms: median {statistics.median(delays):.2f} "
          f"min {delays[0]:.2f} max {delays[-1]:.2f} (rounds {rounds}, held {hold * 1000:.0f} ms)")


if __name__ == "__main__":
    main()
