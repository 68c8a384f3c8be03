#!/bin/bash
# Two builds of nfsx's client, each against nfsx and NFS-Ganesha 4.3 in the
# same invocation (one server build for all), the clients alternating
# invocation by invocation: list and stat of a FILES-file tree, 1 thread.
#   OLD=/path/to/older/nfsx [NEW=target/release/nfsx] [VERS="3 4.1"] clients.sh OUTDIR [RUNS] [FILES]
# summary.py OUTDIR prints the medians and the per-run ratios.
set -u
OUT=${1:?OUTDIR}; RUNS=${2:-5}; FILES=${3:-50000}
HERE=$(cd "$(dirname "$0")" && pwd); REPO=$(cd "$HERE/../../.." && pwd)
NEW=${NEW:-$REPO/target/release/nfsx}; OLD=${OLD:?OLD=path to the older nfsx}
VERS=${VERS:-3 4.1}
mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
W=/dev/shm/nfsx-walk-memo; rm -rf $W; mkdir -p $W/st $W/ex
printf "$W/ex 127.0.0.1(rw,async,no_root_squash,insecure)\n" > $W/exports
printf 'portmap_port = 0\n' > $W/server.toml
cd "$REPO"
PEER_DIR=/dev/shm/nfsx-ganesha scripts/ganesha.sh start >/dev/null 2>&1
"$NEW" serve --exports $W/exports --listen 127.0.0.1:12080 --state-dir $W/st --config $W/server.toml --log warn & sp=$!
trap 'kill $sp 2>/dev/null; PEER_DIR=/dev/shm/nfsx-ganesha scripts/ganesha.sh stop >/dev/null 2>&1' EXIT
sleep 1
for i in $(seq 1 "$RUNS"); do
  for v in $VERS; do
    for c in old new; do
      [ $c = new ] && BIN=$NEW || BIN=$OLD
      "$BIN" bench metadata --op list,stat --files "$FILES" --runs 1 --quiet \
        --target "nfs://127.0.0.1:12080$W/ex?version=$v" --target "nfs://127.0.0.1/export?version=$v" \
        --json "$OUT/$c-v$v-$i.json" > "$OUT/$c-v$v-$i.txt" 2>&1
    done
  done
done
