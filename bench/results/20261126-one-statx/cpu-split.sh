#!/bin/bash
# Server (user, system) and client CPU over whole smallops runs (NFSv3, tmpfs async
# exports, one request in flight), nfsx and Ganesha alternating, 3 rounds:
#   (from the repository root) N=4000 SMALLOPS=/path/to/smallops bench/results/20261126-one-statx/cpu-split.sh
# needs /tmp/smallops (cc -O2 -o /tmp/smallops ../shared/peers/smallops.c -lnfs), GNU time.
set -u
W=/dev/shm/nfsx-prof3; rm -rf $W; mkdir -p $W/ex $W/st
printf "$W/ex 127.0.0.1(rw,async,no_root_squash,insecure)\n" > $W/exports
printf 'portmap_port = 0\n' > $W/c.toml
N=${N:-4000}
TCK=$(getconf CLK_TCK)
one() { # name url serverpid
  read u0 s0 < <(awk '{print $14, $15}' /proc/$3/stat)
  /usr/bin/time -f "client_user_s %U client_sys_s %S wall_s %e" "${SMALLOPS:-/tmp/smallops}" "$2" $N > $W/out.$1 2> $W/time.$1
  read u1 s1 < <(awk '{print $14, $15}' /proc/$3/stat)
  echo "$1 server_user_s $(echo "scale=3; ($u1-$u0)/$TCK" | bc) server_sys_s $(echo "scale=3; ($s1-$s0)/$TCK" | bc) $(tail -1 $W/time.$1) $(grep -E '^create' $W/out.$1 | awk '{print "create_us", $(NF-1)}')"
}
${NFSX:-target/release/nfsx} serve --exports $W/exports --listen 127.0.0.1:12080 --state-dir $W/st --config $W/c.toml --log warn & sp=$!
sleep 0.7
PEER_DIR=$W/g scripts/ganesha.sh start >/dev/null 2>&1
gp=$(cat $W/g/ganesha.pid 2>/dev/null || pgrep ganesha.nfsd)
for r in 1 2 3; do
  one nfsx "nfs://127.0.0.1$W/ex?version=3&nfsport=12080&mountport=12080" $sp
  one ganesha "nfs://127.0.0.1/export?version=3" $gp
done
kill $sp; PEER_DIR=$W/g scripts/ganesha.sh stop >/dev/null 2>&1
