#!/usr/bin/env bash
# What a change is worth, beside NFS-Ganesha: two nfsx servers (one build
# under two settings, or two builds) and NFS-Ganesha 4.3 side by side, the
# same client for all three, runs alternating between them; or the servers
# once and two or more clients (settings or builds) alternating invocation
# by invocation. Then `bench/summarize.py OUT` prints medians and ratios.
#
#   bench/ab.sh OUT [RUNS]                       RUNS 5
#
# Servers, the targets of every invocation in this order:
#   a        $NFSX under SERVER_A
#   b        only if OLD or SERVER_B is set: $OLD (another nfsx binary;
#            $NFSX if unset) under SERVER_B
#   ganesha  NFS-Ganesha, unless GANESHA=0
# SERVER_A and SERVER_B are TOML lines (`\n` escapes allowed) added to
# `portmap_port = 0`, e.g. SERVER_B='[core]\nread_sendfile_alone_only = false'.
#
# Clients: CLIENTS="NAME[@BINARY][:KEY=VALUE[,KEY=VALUE...]] ..." runs every
# row once per variant in each run, the variants alternating, each with
# those client settings (docs/CONFIGURATION.md; `\n` escapes allowed for a
# [section]) and that binary's `nfsx bench` ($NFSX if none), e.g.
#   CLIENTS="mark:reply_lowat_max=1048576 none:reply_lowat_max=0"
#   CLIENTS="old@/path/to/older/nfsx new"
# Unset, each row is one invocation of RUNS runs, the client at its defaults.
#
# Environment (defaults in brackets; see also bench/lib.sh):
#   ROWS ["rand-read-4k-16t rand-write-4k-16t seq-read-1m-4t seq-write-1m-4t"]
#         rows of bench/lib.sh: rand-read-4k-16t rand-read-4k-1t
#         rand-read-64k-16t rand-write-4k-16t seq-read-1m-1t seq-read-1m-4t
#         seq-write-1m-4t sync-8k-16t liststat list stat create
#   VERS ["3"]        protocols; every row runs over each (e.g. "3 4.1")
#   BASE [/var/tmp]   where the exports live (/dev/shm: tmpfs)
#   ASYNC [0]  DURATION [5s]  FILES [50000]
#   PERF [0]   1: every run is one invocation per target, with `perf stat`
#              on that server and on the client: CPU and context switches
#              per call of each side in OUT/percall.tsv
set -uo pipefail
OUT=${1:?usage: ab.sh OUT [RUNS]}
RUNS=${2:-5}
. "$(dirname "$0")/lib.sh"
ROWS=${ROWS:-rand-read-4k-16t rand-write-4k-16t seq-read-1m-4t seq-write-1m-4t}
VERS=${VERS:-3}
BASE=${BASE:-/var/tmp}
W=$BASE/nfsx-ab
OUT=$(out_dir "$OUT")
trap 'stop_all; rm -rf "$W"' EXIT
rm -rf "$W"
mkdir -p "$W"

servers=(a)
if [[ ${GANESHA:-1} != 0 ]]; then ganesha_start "$W/ganesha" || exit 1; fi
nfsx_start a "$W/a" 12070 "${SERVER_A:-}" || exit 1
if [[ -n ${OLD:-}${SERVER_B:-} ]]; then
  nfsx_start b "$W/b" 12072 "${SERVER_B:-}" "${OLD:-$NFSX}" || exit 1
  servers+=(b)
fi
[[ ${GANESHA:-1} == 0 ]] || servers+=(ganesha)
printf '%s\n' "${servers[@]}" >"$OUT/servers.txt"

# Client variants: name -> binary, and its settings file.
declare -A CBIN=()
variants=()
read -ra client_specs <<<"${CLIENTS:-}"
for v in "${client_specs[@]}"; do
  parse_variant "$v"
  printf '%s\n' "$V_CONF" >"$W/client-$V_NAME.toml"
  CBIN[$V_NAME]=$V_BIN
  variants+=("$V_NAME")
done
printf '%s\n' "${variants[@]}" >"$OUT/clients.txt"
[[ ${#variants[@]} -gt 0 ]] || { variants=(default); CBIN[default]=$NFSX; : >"$W/client-default.toml"; }

if [[ ${PERF:-0} == 1 ]]; then
  printf 'row\tversion\tclient\tserver\trun\tmbps\tcalls\tcalls_per_s\tserver_us_per_call\tclient_us_per_call\tserver_cs_per_call\tclient_cs_per_call\n' \
    >"$OUT/percall.tsv"
fi
for v in $VERS; do
  for row in $ROWS; do
    read -ra args <<<"$(row_args "$row")" || exit 1
    log "$row NFSv$v"
    if [[ ${PERF:-0} == 1 ]]; then
      for r in $(seq "$RUNS"); do
        for c in "${variants[@]}"; do
          for s in "${servers[@]}"; do
            line=$(perf_call "$OUT/$c-$row-v$v-$s-$r" "$s" "${CBIN[$c]}" "${args[@]}" \
              --client-config "$W/client-$c.toml" $(targets "$v" "$s"))
            printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$row" "$v" "$c" "$s" "$r" "$line" >>"$OUT/percall.tsv"
          done
        done
      done
    elif [[ -n ${CLIENTS:-} ]]; then
      for r in $(seq "$RUNS"); do
        for c in "${variants[@]}"; do
          "${CBIN[$c]}" bench "${args[@]}" --client-config "$W/client-$c.toml" --runs 1 --quiet \
            $(targets "$v" "${servers[@]}") --json "$OUT/$c-$row-v$v-$r.json" >"$OUT/$c-$row-v$v-$r.txt" 2>&1
        done
      done
    else
      "$NFSX" bench "${args[@]}" --runs "$RUNS" --quiet $(targets "$v" "${servers[@]}") \
        --json "$OUT/$row-v$v.json" >"$OUT/$row-v$v.txt" 2>&1
    fi
  done
done
for s in a b; do
  [[ -n ${PID[$s]:-} ]] || continue
  port=12071
  [[ $s == b ]] && port=12073
  curl -s "127.0.0.1:$port/metrics" >"$OUT/metrics-$s.txt" || true
done
python3 "$BENCH/summarize.py" "$OUT" | tee "$OUT/summary.txt"
