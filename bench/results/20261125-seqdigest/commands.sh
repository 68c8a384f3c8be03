#!/usr/bin/env bash
# OLD=/path/to/nfsx-before NEW=/path/to/nfsx-after: Ganesha (scripts/ganesha.sh start),
# the two nfsx builds side by side, 1 MiB sequential writes and reads from 4 threads of
# nfsx's client over NFSv4.1, 5 s each, 5 alternating runs; then server CPU per WRITE.
set -euo pipefail
cd "$(dirname "$0")/../../.."
D=${D:-/tmp/dg}
mkdir -p "$D/new" "$D/old" && printf 'portmap_port = 0\n' >"$D/n.toml"
"$NEW" serve --listen 127.0.0.1:20811 --config "$D/n.toml" --state-dir "$D/sn" "$D/new" >"$D/new.log" 2>&1 &
"$OLD" serve --listen 127.0.0.1:20812 --config "$D/n.toml" --state-dir "$D/so" "$D/old" >"$D/old.log" 2>&1 &
trap 'kill $(jobs -p)' EXIT
sleep 2
target/release/nfsx bench data --quiet --runs 5 --target 'nfs://127.0.0.1/export?version=4.1' \
  --target "nfs://127.0.0.1:20812$D/old?version=4.1" --target "nfs://127.0.0.1:20811$D/new?version=4.1" \
  --mode seq-write,seq-read --size 256MiB --io-size 1MiB --threads 4 --duration 5s
for t in old:20812 new:20811 old:20812 new:20811; do
  n=${t%:*} port=${t#*:}
  perf stat -e task-clock -p "$(pgrep -f "listen 127.0.0.1:$port")" -- target/release/nfsx bench data --quiet \
    --runs 1 --target "nfs://127.0.0.1:$port$D/$n?version=4.1" --mode seq-write --size 256MiB --io-size 1MiB \
    --threads 4 --duration 5s 2>&1 | grep -E 'mbps|task-clock|WRITE ' | sed "s/^/$n: /"
done
