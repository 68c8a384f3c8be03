#!/bin/bash
# Locked reads (Chen 2015 Table 1) over NFSv3 (NLM), NFSv4.1 with and
# without delegations, and a local directory, alternating.
# usage: run.sh OUTPREFIX [RUNS]
set -u
OUT=$1; RUNS=${2:-5}
REPO=$(cd "$(dirname "$0")/../../.." && pwd)
NFSX=${NFSX:-$REPO/target/release/nfsx}
W=/var/tmp/lr; rm -rf $W; mkdir -p $W/ex $W/st $W/local
printf 'portmap_port = 0\n' > $W/c.toml
$NFSX serve $W/ex --listen 127.0.0.1:12111 --state-dir $W/st --config $W/c.toml --log warn & p=$!
sleep 1
S=nfs://127.0.0.1:12111$W/ex
$NFSX bench locked-read --files 100 --runs $RUNS --quiet \
  --target "$S?version=3" --target "$S?version=4.1" --target "$S?version=4.1&delegations=0" --target $W/local \
  --json $OUT.json > $OUT.txt 2>&1
kill $p; wait $p 2>/dev/null
