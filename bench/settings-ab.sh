# One nfsx build served twice, under two settings files, beside NFS-Ganesha
# 4.3, with the same client and alternating runs: what a setting is worth
# and where both stand against the peer. Sourced by the scripts under
# bench/results/ that measure a setting:
#
#   . bench/settings-ab.sh
#   settings_ab_start OUTDIR RUNS "$ON_TOML" "$OFF_TOML"   # servers up; killed on exit
#   settings_ab_run NAME ARGS...     # nfsx bench data ARGS over the three; OUTDIR/NAME.{json,txt}
#   settings_ab_run_nfsx NAME ARGS...  # the same over the two nfsx servers only
#   settings_ab_summary              # medians, per-run ratios, client CPU per RPC
#
# The first target (port 12070) runs under ON_TOML, the second (12072) under
# OFF_TOML, the third is Ganesha; AB_ON_PID and AB_OFF_PID are the servers.
# VERS (default 3) picks the protocol, NFSX the binary; the scripts time
# each run for AB_DURATION (default 5s).

settings_ab_start() {
  AB_OUT=${1:?OUTDIR}; AB_RUNS=${2:?RUNS}
  AB_REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  AB_NFSX=${NFSX:-$AB_REPO/target/release/nfsx}
  mkdir -p "$AB_OUT"; AB_OUT=$(cd "$AB_OUT" && pwd)
  local w=/var/tmp/nfsx-settings-ab
  rm -rf $w; mkdir -p $w/on $w/off $w/st-on $w/st-off
  printf '%s\n' "$3" > $w/on.toml
  printf '%s\n' "$4" > $w/off.toml
  PEER_DIR=/tmp/nfsx-ganesha "$AB_REPO/scripts/ganesha.sh" start >/dev/null 2>&1
  "$AB_NFSX" serve $w/on --listen 127.0.0.1:12070 --state-dir $w/st-on --config $w/on.toml --log warn & AB_ON_PID=$!
  "$AB_NFSX" serve $w/off --listen 127.0.0.1:12072 --state-dir $w/st-off --config $w/off.toml --log warn & AB_OFF_PID=$!
  trap 'kill $AB_ON_PID $AB_OFF_PID 2>/dev/null; PEER_DIR=/tmp/nfsx-ganesha "$AB_REPO/scripts/ganesha.sh" stop >/dev/null 2>&1' EXIT
  sleep 1
  local v=${VERS:-3}
  AB_TARGETS=(--target "nfs://127.0.0.1:12070$w/on?version=$v" --target "nfs://127.0.0.1:12072$w/off?version=$v"
    --target "nfs://127.0.0.1/export?version=$v")
}

settings_ab_run() {
  local name=$1; shift
  (cd "$AB_REPO" && "$AB_NFSX" bench data "$@" --runs "$AB_RUNS" --quiet "${AB_TARGETS[@]}" \
    --json "$AB_OUT/$name.json" > "$AB_OUT/$name.txt" 2>&1)
}

# The same over the two nfsx targets only (rows the peer cannot run).
settings_ab_run_nfsx() {
  local name=$1; shift
  (cd "$AB_REPO" && "$AB_NFSX" bench data "$@" --runs "$AB_RUNS" --quiet "${AB_TARGETS[@]:0:4}" \
    --json "$AB_OUT/$name.json" > "$AB_OUT/$name.txt" 2>&1)
}

settings_ab_summary() {
  python3 "$AB_REPO/bench/results/20261127-direct-writes/summary.py" "$AB_OUT"
}
