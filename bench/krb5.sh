#!/usr/bin/env bash
# nfsx and NFS-Ganesha 4.3 side by side under AUTH_SYS, krb5i and krb5p
# (RPCSEC_GSS with Kerberos V5): 1 MiB sequential reads and writes at 1 and
# 4 threads, through nfsx's client, both servers alternating within each
# row, then a profile of nfsx's server under krb5p writes.
#
#   bench/krb5.sh OUT [RUNS]        (root: a realm, NFS-Ganesha, perf)
#
# A realm from scripts/kdc.sh (OUT/realm); both servers take the service
# key from its keytab and run under nss_wrapper with its passwd and group
# files, so that the client's principal, alice, is uid 20001 on both. The
# sys runs act as root. Each export admits sys, krb5, krb5i and krb5p.
#
#   ROWS      [seq-read-1m-1t seq-read-1m-4t seq-write-1m-1t seq-write-1m-4t]
#   SECS      [sys krb5i krb5p]
#   VERS      [4.1]            NFS version of the client
#   DATA_BASE [/var/tmp]       where both exports live (the same disk)
#
# Writes OUT/ROW-SEC.json (`nfsx bench`, nfsx first), OUT/profile-krb5p.txt
# (perf report of nfsx's server) and prints bench/summarize.py's table.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
OUT=$(out_dir "${1:?usage: krb5.sh OUT [RUNS]}")
RUNS=${2:-3}
ROWS=${ROWS:-seq-read-1m-1t seq-read-1m-4t seq-write-1m-1t seq-write-1m-4t}
SECS=${SECS:-sys krb5i krb5p}
VERS=${VERS:-4.1}
DATA_BASE=${DATA_BASE:-/var/tmp}
PORT=2060

REALM=$OUT/realm
"$REPO/scripts/kdc.sh" stop "$REALM" >/dev/null 2>&1 || true
env_lines=$("$REPO/scripts/kdc.sh" start "$REALM") || { log "no realm"; exit 1; }
while IFS='=' read -r k v; do export "$k=$v"; done <<<"$env_lines"
NSS="LD_PRELOAD=libnss_wrapper.so NSS_WRAPPER_PASSWD=$REALM/passwd NSS_WRAPPER_GROUP=$REALM/group"
trap 'stop_all; "$REPO/scripts/kdc.sh" stop "$REALM" >/dev/null 2>&1' EXIT

# nfsx: a directory on DATA_BASE exported with every flavor.
dir=$DATA_BASE/nfsx-krb5
rm -rf "$dir" && mkdir -p "$dir/ex" "$dir/st" && chmod 1777 "$dir/ex"
printf '%s 127.0.0.1(rw,insecure,no_root_squash,sec=sys:krb5:krb5i:krb5p)\n' "$dir/ex" >"$dir/exports"
printf 'portmap_port = 0\n[gss]\nkeytab = "%s"\n' "$KRB5_KTNAME" >"$dir/server.toml"
# shellcheck disable=SC2086 # NSS holds several VAR=VALUE words
env $NSS "$NFSX" serve --exports "$dir/exports" --listen "127.0.0.1:$PORT" --state-dir "$dir/st" \
  --config "$dir/server.toml" --log warn >"$dir/server.log" 2>&1 &
PID[nfsx]=$!
URL[nfsx]="nfs://127.0.0.1:$PORT$dir/ex"
for _ in $(seq 100); do port_open "$PORT" && break; sleep 0.1; done

# NFS-Ganesha with the same keytab and users.
export GANESHA_KRB5_KEYTAB=$KRB5_KTNAME GANESHA_ENV=$NSS
ganesha_start "$DATA_BASE/ganesha-krb5" || exit 1

printf '[gss]\nkeytab = "%s"\nprincipal = "alice"\n' "$KRB5_CLIENT_KTNAME" >"$OUT/client.toml"
for row in $ROWS; do
  for sec in $SECS; do
    log "$row $sec"
    # shellcheck disable=SC2046
    "$NFSX" bench $(row_args "$row") --runs "$RUNS" --quiet --client-config "$OUT/client.toml" \
      --target "${URL[nfsx]}?version=$VERS&sec=$sec" --target "${URL[ganesha]}?version=$VERS&sec=$sec" \
      --json "$OUT/$row-$sec.json" >"$OUT/$row-$sec.txt" 2>&1 || log "$row $sec failed: $(tail -3 "$OUT/$row-$sec.txt")"
  done
done

# Where nfsx's server spends a krb5p write.
if command -v perf >/dev/null 2>&1; then
  log "profile: seq-write-1m-4t krb5p"
  perf record -F 499 -g -o "$OUT/perf-krb5p.data" -p "${PID[nfsx]}" -- sleep 8 >/dev/null 2>&1 &
  prof=$!
  # shellcheck disable=SC2046
  "$NFSX" bench $(row_args seq-write-1m-4t) --runs 1 --quiet --client-config "$OUT/client.toml" \
    --target "${URL[nfsx]}?version=$VERS&sec=krb5p" >/dev/null 2>&1
  wait "$prof"
  perf report -i "$OUT/perf-krb5p.data" --no-children --sort dso,symbol --stdio 2>/dev/null |
    grep -v '^#' | grep '%' | head -40 >"$OUT/profile-krb5p.txt"
fi
python3 "$BENCH/summarize.py" "$OUT"
