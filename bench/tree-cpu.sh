#!/usr/bin/env bash
# Server CPU for the same work through a real third-party client: fuse-nfs
# (libnfs, NFSv3) mounts nfsx and NFS-Ganesha in turn, and a source tree is
# extracted, copied, compared, stat'ed and removed through the mount. What
# the servers spend on it (utime + stime of the whole process, all threads,
# from /proc/PID/stat) is the figure; wall time says whether the same work
# took as long.
#
#   bench/tree-cpu.sh OUT [RUNS]          RUNS 5
#
# Each run, for nfsx and for Ganesha (nfsx first in odd runs, Ganesha first
# in even ones):
#   1. a fresh server on an empty export: nfsx at its defaults but
#      `portmap_port = 0` (plus NFSX_TOML), reached on its own port
#      (`?nfsport=P&mountport=P`, no portmapper); Ganesha through lib.sh on
#      2049/20048, found through its rpcbind;
#   2. fuse-nfs mounts it (`nfs://127.0.0.1/EXPORT?version=3...`);
#   3. the phases, each timed, with both processes' CPU read before and
#      after it: extract (tar -x of the tree into a/), copy (cp -a a b),
#      diff (diff -r a b), stat (find a b -exec stat {} +), remove
#      (rm -rf a b);
#   4. unmount, fuse-nfs exits, the server stops.
# Mounting and unmounting are outside the measured span. rpcbind's CPU is
# not counted (it serves only the mount's look-up), nor the kernel's FUSE
# work done in the context of tar, cp and the others.
#
# The tree: `git archive` of TREE_PATHS of this repository at TREE_COMMIT,
# unpacked TREE_COPIES times side by side (1/, 2/, ...) and packed as one
# tar file, OUT/tree.tar; the defaults (crates/ at a3db758, 5 copies) are
# 2,210 files in 355 directories, 21 MB: files of 167 B to 400 KiB, 5 KiB
# the median, as a project checkout is. Any clone of the repository holds
# that commit, so the tree is the same everywhere and needs no network.
#
# Environment (defaults in brackets; see also bench/lib.sh):
#   FUSE_NFS [/work/tools/fuse-nfs/fuse/fuse-nfs]  the client, built from
#            github.com/sahlberg/fuse-nfs against Debian's libnfs-dev
#            (4.0) and libfuse-dev (FUSE 2: install libfuse-dev only, not
#            the `fuse` package, which removes fuse3):
#              ./setup.sh && ./configure && make
#   FUSE_NFS_ARGS [""]  extra fuse-nfs options, e.g. "-t 0" (one thread)
#   TREE_COMMIT [a3db758]  TREE_PATHS [crates]  TREE_COPIES [5]  the tree
#   BASE [/var/tmp]  where the exports and the mount points live (ext4
#            here, as the standing table's; /dev/shm: tmpfs)
#   NFSX_PORT [12090]  nfsx's port (metrics on the next one)
#   NFSX_TOML [""]  extra TOML lines for nfsx (`\n` escapes allowed)
#
# Needs root (Ganesha, rpcbind, mounting through /dev/fuse) and an idle
# machine. Writes OUT/tree-cpu.csv: target, run, phase (or total),
# wall_s, server_cpu_s, client_cpu_s (the fuse-nfs process), server_rpcs
# (nfsx's request count from its metrics; empty for Ganesha), ok (0 when a
# step failed or diff found a difference); OUT/tree.txt (the tree's size),
# OUT/TARGET.client.log (fuse-nfs's output) and OUT/summary.txt
# (bench/summarize.py OUT).
set -uo pipefail
export LC_ALL=C  # EPOCHREALTIME's decimal point
OUT=${1:?usage: tree-cpu.sh OUT [RUNS]}
RUNS=${2:-5}
. "$(dirname "$0")/lib.sh"
FUSE_NFS=${FUSE_NFS:-/work/tools/fuse-nfs/fuse/fuse-nfs}
read -ra FUSE_NFS_ARGS <<<"${FUSE_NFS_ARGS:-}"
TREE_COMMIT=${TREE_COMMIT:-a3db7583d8c77468ff2b112f635f66d841b4aadd}
read -ra TREE_PATHS <<<"${TREE_PATHS:-crates}"
TREE_COPIES=${TREE_COPIES:-5}
BASE=${BASE:-/var/tmp}
NFSX_PORT=${NFSX_PORT:-12090}
NFSX_TOML=${NFSX_TOML:-}
W=$BASE/nfsx-tree-cpu
MNT=$W/mnt
TCK=$(getconf CLK_TCK)
[[ -x $FUSE_NFS ]] || { log "no fuse-nfs at $FUSE_NFS (set FUSE_NFS)"; exit 1; }
[[ -x $NFSX ]] || { log "no nfsx at $NFSX (cargo build --release -p nfsx)"; exit 1; }
mountpoint -q "$MNT" && { log "$MNT is still mounted (umount -l it)"; exit 1; }
OUT=$(out_dir "$OUT")

CLIENT=
unmount() {
  mountpoint -q "$MNT" || return 0
  umount "$MNT" 2>/dev/null || umount -l "$MNT"
}
# fuse-nfs daemonizes once mounted; after the unmount it notices and exits.
client_stop() {
  unmount
  [[ -n $CLIENT ]] || return 0
  for _ in $(seq 50); do kill -0 "$CLIENT" 2>/dev/null || break; sleep 0.1; done
  kill -TERM "$CLIENT" 2>/dev/null
  CLIENT=
}
trap 'client_stop; stop_all; rm -rf "$W"' EXIT

# The tree, built once per invocation so every run extracts the same bytes:
# the copies unpacked side by side and packed again as one archive.
TAR=$OUT/tree.tar
rm -rf "$OUT/tree"
for i in $(seq "$TREE_COPIES"); do
  mkdir -p "$OUT/tree/$i"
  git -C "$REPO" archive --format=tar "$TREE_COMMIT" "${TREE_PATHS[@]}" | tar -xf - -C "$OUT/tree/$i" || exit 1
done
tar --sort=name --owner=0 --group=0 --numeric-owner -cf "$TAR" -C "$OUT/tree" . || exit 1
rm -rf "$OUT/tree"
entries=$(tar -tf "$TAR" | wc -l) || exit 1
printf 'commit %s paths %s copies %s: %s entries, %s bytes\n' "$(git -C "$REPO" rev-parse "$TREE_COMMIT")" \
  "${TREE_PATHS[*]}" "$TREE_COPIES" "$entries" "$(stat -c %s "$TAR")" | tee "$OUT/tree.txt" >&2

CSV=$OUT/tree-cpu.csv
[[ -s $CSV ]] || echo "target,run,phase,wall_s,server_cpu_s,client_cpu_s,server_rpcs,ok" >"$CSV"

ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
rpcs() { curl -s "http://127.0.0.1:$((NFSX_PORT + 1))/metrics" | awk '/^nfsx_requests_total/ {s += $2} END {print s + 0}'; }
client_pid() {  # the fuse-nfs process serving MNT
  local p
  for p in $(pgrep -x fuse-nfs); do
    tr '\0' '\n' <"/proc/$p/cmdline" 2>/dev/null | grep -qxF -- "$MNT" && { echo "$p"; return 0; }
  done
  return 1
}

phase() {  # TARGET RUN NAME COMMAND...: one timed step, a CSV line
  local target=$1 run=$2 name=$3 t0 t1 s0 s1 c0 c1 r0= r1= ok=1
  shift 3
  # The metrics are read outside the span, so that serving them is not counted.
  [[ $target == nfsx ]] && r0=$(rpcs)
  s0=$(ticks "${PID[$target]}") c0=$(ticks "$CLIENT")
  t0=$EPOCHREALTIME
  "$@" >/dev/null || ok=0
  t1=$EPOCHREALTIME
  s1=$(ticks "${PID[$target]}") c1=$(ticks "$CLIENT")
  [[ $target == nfsx ]] && r1=$(rpcs)
  awk -v t="$target" -v r="$run" -v n="$name" -v t0="$t0" -v t1="$t1" -v s="$((s1 - s0))" \
    -v c="$((c1 - c0))" -v q0="$r0" -v q1="$r1" -v ok="$ok" -v hz="$TCK" \
    'BEGIN {printf "%s,%s,%s,%.3f,%.2f,%.2f,%s,%s\n", t, r, n, t1 - t0, s / hz, c / hz, (q0 == "" ? "" : q1 - q0), ok}' >>"$CSV"
  return $((1 - ok))
}

one() {  # TARGET RUN
  local target=$1 run=$2 url lines
  if [[ $target == nfsx ]]; then
    nfsx_start nfsx "$W/nfsx" "$NFSX_PORT" "$NFSX_TOML" || return 1
    # libnfs 4.0 takes no port in the URL's host part, only these arguments.
    url="nfs://127.0.0.1$W/nfsx/ex?version=3&nfsport=$NFSX_PORT&mountport=$NFSX_PORT"
  else
    rm -rf "$W/ganesha"
    ganesha_start "$W/ganesha" || return 1
    url="${URL[ganesha]}?version=3"
  fi
  mkdir -p "$MNT"
  if ! "$FUSE_NFS" "${FUSE_NFS_ARGS[@]}" -n "$url" -m "$MNT" >"$OUT/$target.client.log" 2>&1 || ! CLIENT=$(client_pid); then
    log "fuse-nfs did not mount $url:"
    tail -5 "$OUT/$target.client.log" >&2
    client_stop
    stop_all
    return 1
  fi
  lines=$(wc -l <"$CSV")
  # Each step runs only if the ones before it worked; the total is the span
  # of the steps and the sum of their CPU.
  phase "$target" "$run" extract bash -c 'mkdir "$1/a" && tar -xf "$2" -C "$1/a"' _ "$MNT" "$TAR" &&
    phase "$target" "$run" copy cp -a "$MNT/a" "$MNT/b" &&
    phase "$target" "$run" diff diff -r "$MNT/a" "$MNT/b" &&
    phase "$target" "$run" stat find "$MNT/a" "$MNT/b" -exec stat {} + &&
    phase "$target" "$run" remove rm -rf "$MNT/a" "$MNT/b"
  tail -n +"$((lines + 1))" "$CSV" | awk -F, -v t="$target" -v r="$run" '
    {w += $4; s += $5; c += $6; q += $7; ok = ok && $8; n++; if ($7 == "") noq = 1}
    BEGIN {ok = 1}
    END {printf "%s,%s,total,%.3f,%.2f,%.2f,%s,%d\n", t, r, w, s, c, (noq ? "" : q), (ok && n == 5)}' >>"$CSV"
  tail -n 1 "$CSV" >&2
  client_stop
  if [[ $target == nfsx ]]; then nfsx_stop nfsx; else ganesha_stop; fi
}

for r in $(seq "$RUNS"); do
  order=(nfsx ganesha)
  ((r % 2)) || order=(ganesha nfsx)
  for t in "${order[@]}"; do
    log "run $r: $t"
    one "$t" "$r" || log "run $r: $t failed"
  done
done
python3 "$BENCH/summarize.py" "$OUT" | tee "$OUT/summary.txt"
