#!/usr/bin/env bash
# The whole matrix: cthon04 and pjdfstest on a local directory (baseline) and through
# `nfsx mount` on nfsx serve and NFS-Ganesha, over NFSv4.1 and NFSv3. Run as root.
#
#   CTHON=/path/to/cthon04 PJD=/path/to/pjdfstest NFSX=target/release/nfsx scripts/posix/run-all.sh
#
# The suites are public (github.com/phdeniel/cthon04, github.com/pjd/pjdfstest),
# built by hand as docs/POSIX.md says, and never part of this repository.
#
# Knobs (defaults in brackets):
#   CTHON, PJD    built checkouts of the two suites (required)
#   WORK          [/var/tmp/nfsx-posix]  scratch: mount point, exports, server state
#   GANESHA_SH    [../shared/peers/ganesha.sh beside the repository]  starts NFS-Ganesha
#                 (GANESHA_STATE, EXPORT_DIR, NFS_PORT, MNT_PORT), for the ganesha targets
#   NFSX          [target/release/nfsx]  binary for both `serve` and `mount`; copied
#                 to $RESULTS/nfsx-bin first, so a rebuild does not change it mid-run
#   TARGETS       [local nfsx-v41 nfsx-v41-nodeleg nfsx-v3 ganesha-v41 ganesha-v3]
#                 (nfsx-v41-nodeleg: ?delegations=0, as with a server that grants none)
#   SUITES        [cthon pjd]
#   RESULTS       [$WORK/results]  results/<target>/..., then TABLE.md
#   SUITE_TIMEOUT [1500]  seconds per suite run (each cthon program and pjdfstest file
#                 has its own smaller bound too, see run-cthon.sh / run-pjd.sh)
#   NFSX_PORT     [20497] nfsx serve listens on 127.0.0.1:NFSX_PORT (portmap on it too)
#   GANESHA_PORT  [20498] Ganesha NFS port (MOUNT on +1); clients find it via rpcbind on 111
#   MOUNT_OPTS    [--allow-other]  extra `nfsx mount` options (pjdfstest runs as other uids)
#
# Every (target, suite) gets a fresh export directory, a fresh server and a fresh mount.
# A mount that hangs is aborted (/sys/fs/fuse/connections/N/abort), lazily unmounted and
# its process killed; that is noted in results/<target>/notes.txt.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
WORK=${WORK:-/var/tmp/nfsx-posix}
RESULTS=${RESULTS:-$WORK/results}
NFSX_SRC=${NFSX:-$REPO/target/release/nfsx}
: "${CTHON:?CTHON=/path/to/a built cthon04 checkout}" "${PJD:?PJD=/path/to/a built pjdfstest checkout}"
export CTHON PJD
TARGETS=${TARGETS:-local nfsx-v41 nfsx-v41-nodeleg nfsx-v3 ganesha-v41 ganesha-v3}
SUITES=${SUITES:-cthon pjd}
SUITE_TIMEOUT=${SUITE_TIMEOUT:-1500}
NFSX_PORT=${NFSX_PORT:-20497}
GANESHA_PORT=${GANESHA_PORT:-20498}
MOUNT_OPTS=${MOUNT_OPTS:---allow-other}
MNT=$WORK/mnt
LOCAL=$WORK/local
EXPORT=$WORK/export
NFSX_STATE=$WORK/nfsx-state
export GANESHA_STATE=$WORK/ganesha-state EXPORT_DIR=$WORK/ganesha-export \
       NFS_PORT=$GANESHA_PORT MNT_PORT=$((GANESHA_PORT + 1))
GANESHA_SH=${GANESHA_SH:-$REPO/../shared/peers/ganesha.sh}

[[ $(id -u) -eq 0 ]] || { echo "run as root" >&2; exit 2; }
mkdir -p "$RESULTS" "$MNT" "$LOCAL"
NFSX=$RESULTS/nfsx-bin
cp -f "$NFSX_SRC" "$NFSX.tmp" && mv -f "$NFSX.tmp" "$NFSX" || exit 1
echo "nfsx: $NFSX_SRC ($(sha256sum "$NFSX" | cut -c1-16), $(stat -c %y "$NFSX_SRC"))" | tee "$RESULTS/nfsx-bin.txt"

SERVER_PID= MOUNT_PID=
note() { echo "$*" | tee -a "$OUT/notes.txt"; }

port_open() { timeout 1 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null; }

start_nfsx() {
  rm -rf "$EXPORT" "$NFSX_STATE"; mkdir -p "$EXPORT" "$NFSX_STATE"
  port_open "$NFSX_PORT" && { note "port $NFSX_PORT busy"; return 1; }
  "$NFSX" serve "$EXPORT" --listen "127.0.0.1:$NFSX_PORT" --portmap-port 0 \
      --state-dir "$NFSX_STATE" >>"$OUT/server-$1.log" 2>&1 &
  SERVER_PID=$!
  for _ in $(seq 100); do port_open "$NFSX_PORT" && return 0; sleep 0.1; done
  note "nfsx serve did not come up"; return 1
}

stop_nfsx() {
  [[ -n $SERVER_PID ]] || return 0
  kill -TERM "$SERVER_PID" 2>/dev/null
  for _ in $(seq 50); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$SERVER_PID" 2>/dev/null && { note "nfsx serve ignored SIGTERM"; kill -KILL "$SERVER_PID"; }
  wait "$SERVER_PID" 2>/dev/null; SERVER_PID=
}

start_ganesha() {
  rm -rf "$EXPORT_DIR"; mkdir -p "$EXPORT_DIR"
  "$GANESHA_SH" start >>"$OUT/server-$1.log" 2>&1 || { note "ganesha did not start"; return 1; }
}

stop_ganesha() {
  "$GANESHA_SH" stop >>"$OUT/server.log" 2>&1
  [[ -f $GANESHA_STATE/ganesha.log ]] && cp "$GANESHA_STATE/ganesha.log" "$OUT/ganesha-${1:-last}.log"
  sleep 1.5  # its port is busy for ~1 s after SIGTERM
}

mounted() { timeout 5 mountpoint -q "$MNT"; }

do_mount() {  # url suite
  mounted && { note "stale mount on $MNT, unmounting"; force_umount; }
  "$NFSX" mount $MOUNT_OPTS "$1" "$MNT" >>"$OUT/mount-$2.log" 2>&1 &
  MOUNT_PID=$!
  for _ in $(seq 200); do
    mounted && return 0
    kill -0 "$MOUNT_PID" 2>/dev/null || break
    sleep 0.1
  done
  note "nfsx mount $1 did not come up (see mount-$2.log)"; return 1
}

force_umount() {
  local dev
  dev=$(awk -v m="$MNT" '$5 == m {print $3}' /proc/self/mountinfo | tail -1)
  [[ -n $dev && -w /sys/fs/fuse/connections/${dev#*:}/abort ]] && echo 1 >"/sys/fs/fuse/connections/${dev#*:}/abort"
  fusermount3 -uz "$MNT" 2>/dev/null
}

do_umount() {
  [[ -n $MOUNT_PID ]] || return 0
  if ! kill -0 "$MOUNT_PID" 2>/dev/null; then
    wait "$MOUNT_PID"; note "mount process had exited by itself (rc=$?) before unmount"
  elif ! timeout 20 "$NFSX" umount "$MNT" >>"$OUT/mount.log" 2>&1; then
    note "nfsx umount failed or hung; aborting the connection"; force_umount
  fi
  for _ in $(seq 100); do kill -0 "$MOUNT_PID" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$MOUNT_PID" 2>/dev/null; then
    note "mount process still alive 10 s after unmount; killing"; force_umount; kill -KILL "$MOUNT_PID"
  fi
  wait "$MOUNT_PID" 2>/dev/null; MOUNT_PID=
  mounted && force_umount
}

cleanup() { do_umount; stop_nfsx; [[ $TARGETS == *ganesha* ]] && stop_ganesha; }
trap 'cleanup; exit 130' INT TERM

run_suite() {  # suite dir
  local t0 rc
  t0=$(date +%s)
  timeout -k 10 "$SUITE_TIMEOUT" "$HERE/run-$1.sh" "$2" "$OUT" >"$OUT/$1.out" 2>&1
  rc=$?
  [[ $rc -eq 124 || $rc -eq 137 ]] && note "$1: whole suite timed out after ${SUITE_TIMEOUT}s"
  echo "$1 secs=$(( $(date +%s) - t0 )) rc=$rc" >>"$OUT/times.txt"
  tail -1 "$OUT/$1.out"
}

for target in $TARGETS; do
  OUT=$RESULTS/$target
  rm -rf "$OUT"; mkdir -p "$OUT"; : >"$OUT/times.txt"
  case $target in
    local)       kind=local ;;
    nfsx-v41)    kind=nfsx;    url="nfs://127.0.0.1:$NFSX_PORT$EXPORT?version=4.1" ;;
    nfsx-v41-nodeleg) kind=nfsx; url="nfs://127.0.0.1:$NFSX_PORT$EXPORT?version=4.1&delegations=0" ;;
    nfsx-v3)     kind=nfsx;    url="nfs://127.0.0.1:$NFSX_PORT$EXPORT?version=3" ;;
    ganesha-v41) kind=ganesha; url="nfs://127.0.0.1/export?version=4.1" ;;
    ganesha-v3)  kind=ganesha; url="nfs://127.0.0.1/export?version=3" ;;
    *) echo "unknown target $target" >&2; continue ;;
  esac
  case $kind in
    local) echo "directory $LOCAL ($(df -PT "$LOCAL" | awk 'NR==2{print $2}'))" >"$OUT/target.txt" ;;
    nfsx) echo "nfsx mount $MOUNT_OPTS '$url' on nfsx serve $EXPORT (local backend, $(df -PT "$WORK" | awk 'NR==2{print $2}'))" >"$OUT/target.txt" ;;
    ganesha) echo "nfsx mount $MOUNT_OPTS '$url' on NFS-Ganesha $(dpkg-query -W -f '${Version}' nfs-ganesha 2>/dev/null) FSAL_VFS $EXPORT_DIR" >"$OUT/target.txt" ;;
  esac
  for suite in $SUITES; do
    echo "=== $target $suite ($(date +%T))"
    if [[ $kind == local ]]; then
      run_suite "$suite" "$LOCAL"; continue
    fi
    if [[ $kind == nfsx ]]; then start_nfsx "$suite" || continue; else start_ganesha "$suite" || continue; fi
    if do_mount "$url" "$suite"; then
      run_suite "$suite" "$MNT"
      mounted || note "$suite: mount gone after the run"
    fi
    do_umount
    if [[ $kind == nfsx ]]; then
      kill -0 "$SERVER_PID" 2>/dev/null || note "$suite: nfsx serve died during the run"
      stop_nfsx
    else
      stop_ganesha "$suite"
    fi
  done
done
/usr/bin/python3 "$HERE/make-table.py" "$RESULTS"
