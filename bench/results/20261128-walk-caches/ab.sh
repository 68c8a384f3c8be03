#!/bin/bash
# nfsx's client under several client settings, each against nfsx and
# NFS-Ganesha 4.3 in the same invocation; settings alternate invocation by
# invocation, one run of each target per invocation.
#   [VARIANTS="copy0:copy_replies_below=0 copy16k:copy_replies_below=16384"]
#   [VERS=3] [ROWS="liststat rand-read seq-read"] [NFSX=...] ab.sh OUTDIR [RUNS] [FILES]
# A variant is NAME:KEY=VALUE[,KEY=VALUE...] (client settings, see
# docs/CONFIGURATION.md). Rows: list and stat of a FILES-file tree
# (1 thread), 4 KiB random reads and 1 MiB sequential reads with 1 thread
# and the data cache off. summary.py OUTDIR prints the medians.
set -u
OUT=${1:?OUTDIR}; RUNS=${2:-3}; FILES=${3:-20000}
VARIANTS=${VARIANTS:-copy0:copy_replies_below=0 copy16k:copy_replies_below=16384}
VERS=${VERS:-3}; ROWS=${ROWS:-liststat rand-read seq-read}
HERE=$(cd "$(dirname "$0")" && pwd); REPO=$(cd "$HERE/../../.." && pwd)
NFSX=${NFSX:-$REPO/target/release/nfsx}
mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
W=/dev/shm/nfsx-walk-caches; rm -rf $W; mkdir -p $W/st $W/ex
printf "$W/ex 127.0.0.1(rw,async,no_root_squash,insecure)\n" > $W/exports
printf 'portmap_port = 0\n' > $W/server.toml
for v in $VARIANTS; do
  name=${v%%:*}; printf '%s\n' ${v#*:} | tr ',' '\n' | sed 's/=/ = /' > $W/$name.toml
done
cd "$REPO"
PEER_DIR=/dev/shm/nfsx-ganesha scripts/ganesha.sh start >/dev/null 2>&1
"$NFSX" serve --exports $W/exports --listen 127.0.0.1:12080 --state-dir $W/st --config $W/server.toml --log warn & sp=$!
trap 'kill $sp 2>/dev/null; PEER_DIR=/dev/shm/nfsx-ganesha scripts/ganesha.sh stop >/dev/null 2>&1' EXIT
sleep 1
T=(--target "nfs://127.0.0.1:12080$W/ex?version=$VERS" --target "nfs://127.0.0.1/export?version=$VERS")
for i in $(seq 1 "$RUNS"); do
  for v in $VARIANTS; do
    name=${v%%:*}
    C=(--client-config $W/$name.toml --runs 1 --quiet "${T[@]}")
    for row in $ROWS; do
      case $row in
        liststat) args=(metadata --op list,stat --files "$FILES") ;;
        rand-read) args=(data --mode rand-read --io-size 4KiB --threads 1 --size 16MiB --duration 5s --no-data-cache) ;;
        seq-read) args=(data --mode seq-read --io-size 1MiB --threads 1 --size 256MiB --duration 5s --no-data-cache) ;;
      esac
      "$NFSX" bench "${args[@]}" "${C[@]}" --json "$OUT/$name-$row-$i.json" > "$OUT/$name-$row-$i.txt" 2>&1
    done
  done
done
