#!/bin/bash
# The server's own time per READDIRPLUS (NFSv3) and per COMPOUND (NFSv4.1, all of a run's),
# from its latency histogram, two builds alternately, one list+stat run of 20,000 files each.
#   OLD=/path/to/older/nfsx server-time.sh
HERE=$(cd "$(dirname "$0")" && pwd); REPO=$(cd "$HERE/../../.." && pwd)
CLIENT=${NFSX:-$REPO/target/release/nfsx}; OLD=${OLD:?OLD=path to the older nfsx}
W=/dev/shm/nfsx-srvtime
for i in 1 2 3; do
 for b in new old; do
  [ $b = new ] && BIN=$CLIENT || BIN=$OLD
  for v in 3 4.1; do
   rm -rf $W; mkdir -p $W/st $W/ex; printf "$W/ex 127.0.0.1(rw,async,no_root_squash,insecure)\n" > $W/exports; printf 'portmap_port = 0\n' > $W/s.toml
   $BIN serve --exports $W/exports --listen 127.0.0.1:12090 --state-dir $W/st --config $W/s.toml --log warn --metrics 127.0.0.1:19101 & p=$!
   sleep 1
   $CLIENT bench metadata --op list,stat --files 20000 --runs 1 --quiet --target "nfs://127.0.0.1:12090$W/ex?version=$v" > /dev/null 2>&1
   m=$(curl -s 127.0.0.1:19101/metrics)
   if [ $v = 3 ]; then proc=nfs3.READDIRPLUS; else proc=nfs4.COMPOUND; fi
   s=$(echo "$m" | grep "request_duration_seconds_sum{proc=\"$proc\"}" | awk '{print $2}'); c=$(echo "$m" | grep "request_duration_seconds_count{proc=\"$proc\"}" | awk '{print $2}')
   echo "$i $b v$v $proc $(python3 -c "print(round(1e6*$s/$c,2))") us over $c"
   kill $p; wait $p 2>/dev/null
  done
 done
done
