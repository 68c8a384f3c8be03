#!/usr/bin/env bash
# Starts or stops a one-machine Ceph cluster (Debian's Ceph 16 packages) that
# serves one CephFS file system, for the tests and benchmarks of the CephFS
# backend.
#
#   scripts/ceph.sh start [DIR]    prints CEPH_CONF=DIR/ceph.conf on stdout when CephFS can serve
#   scripts/ceph.sh stop [DIR]     kills the daemons and removes DIR
#   scripts/ceph.sh status [DIR]   `ceph -s`; exit 1 when the cluster is not running
#   scripts/ceph.sh mds-restart [DIR]
#                                  kills the MDS with SIGKILL if it runs (a crash: what it
#                                  has not journaled is lost), starts it again and waits
#                                  until CephFS serves; exit 1 if it does not
#
# DIR (default /tmp/nfsx-ceph) holds everything: ceph.conf, the daemons' data
# (data/), logs (log/), pid files and admin sockets (run/). Every start makes a
# fresh cluster: one monitor, one manager, CEPH_OSDS OSDs, one MDS, the pools
# cephfs_metadata and cephfs_data (one replica) and the file system "cephfs".
# Authentication is off, so a client needs only the ceph.conf, e.g.
# ceph_conf_read_file() on it with libcephfs, or `ceph -c DIR/ceph.conf -s`.
# Progress and errors go to stderr; stdout carries only the CEPH_CONF= line,
# so `eval "$(scripts/ceph.sh start)"` works.
#
#   CEPH_OSDS           [1]          number of OSDs
#   CEPH_OSD_SIZE       [4G]         size of each OSD's BlueStore block file (sparse)
#   CEPH_MON_ADDR       [127.0.0.1]  address of the monitor (ports 3300 msgr2, 6789 msgr1)
#                                    and of the other daemons
#   CEPH_START_TIMEOUT  [180]        seconds `start` waits for the cluster before giving up
set -Eeuo pipefail

DIR=$(realpath -m -- "${2:-/tmp/nfsx-ceph}")
OSDS=${CEPH_OSDS:-1}
OSD_SIZE=${CEPH_OSD_SIZE:-4G}
ADDR=${CEPH_MON_ADDR:-127.0.0.1}
TIMEOUT=${CEPH_START_TIMEOUT:-180}
CONF=$DIR/ceph.conf
RUN=$DIR/run
LOG=$DIR/log
# `stop` deletes DIR only when its ceph.conf carries this line, so that a
# mistyped DIR never loses anything.
MARKER='# made by nfsx scripts/ceph.sh; "scripts/ceph.sh stop" removes this directory'
PACKAGES=(ceph-mon ceph-osd ceph-mds ceph-mgr ceph-common libcephfs-dev librados-dev)

say() { echo "ceph.sh: $*" >&2; }

# Every CLI call is bounded: with no monitor to talk to, `ceph` waits forever.
cli() { timeout 30 ceph -c "$CONF" --connect-timeout 15 "$@"; }

alive() { [[ -f $1 ]] && kill -0 "$(cat "$1" 2>/dev/null)" 2>/dev/null; }
port_open() { (exec 3<>"/dev/tcp/$ADDR/$1") 2>/dev/null; }

# Daemons of this DIR: their pid files, plus any ceph-mon/mgr/osd/mds whose
# command line names this DIR's ceph.conf (one that died before writing its pid
# file, or whose pid file went away with a half-removed DIR).
daemon_pids() {
  local f pid exe
  for f in "$RUN"/*.pid; do
    [[ -f $f ]] && pid=$(cat "$f" 2>/dev/null) && [[ $pid =~ ^[0-9]+$ ]] && echo "$pid"
  done
  for f in /proc/[0-9]*/cmdline; do
    pid=${f#/proc/}; pid=${pid%/cmdline}
    exe=$(tr '\0' '\n' <"$f" 2>/dev/null | head -1) || continue
    [[ ${exe##*/} =~ ^ceph-(mon|mgr|osd|mds)$ ]] || continue
    tr '\0' '\n' <"$f" 2>/dev/null | grep -qxF -- "$CONF" && echo "$pid"
  done
  return 0
}

install() {
  local p missing=()
  for p in ceph-mon ceph-osd ceph-mds ceph-mgr ceph; do
    command -v "$p" >/dev/null || missing=("${PACKAGES[@]}")
  done
  [[ -f /usr/include/cephfs/libcephfs.h ]] || missing=("${PACKAGES[@]}")
  ((${#missing[@]})) || return 0
  [[ $(id -u) -eq 0 ]] || { say "Ceph is not installed and installing ${missing[*]} needs root"; exit 1; }
  say "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  if ! { apt-get update -q && apt-get install -y -q "${missing[@]}"; } >"${TMPDIR:-/tmp}/nfsx-ceph-apt.log" 2>&1; then
    say "apt-get install ${missing[*]} failed; last lines of ${TMPDIR:-/tmp}/nfsx-ceph-apt.log:"
    tail -20 "${TMPDIR:-/tmp}/nfsx-ceph-apt.log" >&2
    exit 1
  fi
}

write_conf() {
  local fsid; fsid=$(cat /proc/sys/kernel/random/uuid)
  cat >"$CONF" <<CONF
$MARKER
[global]
fsid = $fsid
mon_initial_members = a
mon_host = [v2:$ADDR:3300,v1:$ADDR:6789]
public_addr = $ADDR
cluster_addr = $ADDR
# Clients (the NFS server, the tests) connect with nothing but this file.
auth_cluster_required = none
auth_service_required = none
auth_client_required = none

# Nothing under /var/lib/ceph, /var/log/ceph or /var/run/ceph: several
# clusters (or a packaged one) may live on the machine, and stop removes DIR.
run_dir = $RUN
crash_dir = $DIR/crash
mon_data = $DIR/data/\$name
mgr_data = $DIR/data/\$name
osd_data = $DIR/data/\$name
mds_data = $DIR/data/\$name
mon_cluster_log_file = default=$LOG/\$cluster.\$channel.log cluster=$LOG/cluster.log

# One host, one copy of everything: without these the PGs never become clean
# (CRUSH looks for replicas on other hosts) and health stays WARN.
osd_crush_chooseleaf_type = 0
osd_pool_default_size = 1
osd_pool_default_min_size = 1
mon_allow_pool_size_one = true
mon_warn_on_pool_no_redundancy = false
osd_pool_default_pg_num = 8
osd_pool_default_pgp_num = 8
# The autoscaler would split or merge PGs in the middle of a benchmark.
osd_pool_default_pg_autoscale_mode = off
mon_allow_pool_delete = true
mon_warn_on_insecure_global_id_reclaim = false
mon_warn_on_insecure_global_id_reclaim_allowed = false
# The machine's disk may be fuller than a production mon likes (30 % free).
mon_data_avail_warn = 5
mon_data_avail_crit = 1

# No scrubbing while the tests run (a cluster lives minutes, not weeks), and
# no warnings about the scrubs that did not happen.
osd_scrub_min_interval = 31536000
osd_scrub_max_interval = 31536000
osd_deep_scrub_interval = 31536000
osd_scrub_load_threshold = 0
mon_warn_pg_not_scrubbed_ratio = 0
mon_warn_pg_not_deep_scrubbed_ratio = 0

[mon]
log_file = $LOG/\$name.log
pid_file = $RUN/\$name.pid
mon_memory_target = 256M
# Modules switched on in a new cluster; the default (restful iostat nfs) brings
# restful, which wants Python packages and certificates nobody here needs.
mgr_initial_modules = iostat

[mgr]
log_file = $LOG/\$name.log
pid_file = $RUN/\$name.pid
# The manager imports every module it finds, enabled or not; not loading the
# ones nothing here uses saves memory and start time. The always-on modules
# (balancer crash devicehealth orchestrator pg_autoscaler progress rbd_support
# status telemetry volumes) stay: 16.2 reports one left out as HEALTH_ERR
# (MGR_MODULE_ERROR "Not found or unloadable").
mgr_disabled_modules = alerts,cephadm,dashboard,diskprediction_local,influx,insights,k8sevents,localpool,mirroring,nfs,osd_perf_query,osd_support,prometheus,restful,rook,selftest,snap_schedule,stats,telegraf,test_orchestrator,zabbix

[osd]
log_file = $LOG/\$name.log
pid_file = $RUN/\$name.pid
# The block device is a plain file under DIR, created (sparse, by ftruncate)
# by mkfs: no loop device, no disk, nothing to clean up outside DIR.
osd_objectstore = bluestore
bluestore_block_create = true
bluestore_block_size = $OSD_SIZE
bluestore_fsck_on_mkfs = false
bluestore_fsck_on_mount = false
bdev_enable_discard = false
# Memory: 896M is the smallest osd_memory_target Ceph 16 accepts; with cache
# autotuning off the BlueStore cache is the fixed, smaller bluestore_cache_size
# instead of whatever the target leaves room for.
osd_memory_target = 896M
bluestore_cache_autotune = false
bluestore_cache_size = 128M

[mds]
log_file = $LOG/\$name.log
pid_file = $RUN/\$name.pid
mds_cache_memory_limit = 256M
# A restarted MDS waits this long for the clients it knew to reconnect (and
# replay what it had not journaled) before it serves: 45 s by default, which
# a killed client (a head killed with it) would always cost.
mds_reconnect_timeout = 10
CONF
}

# Start one daemon. Without -f a Ceph daemon forks, and the parent returns only
# once the child has initialised (non-zero if it failed), and the child writes
# its own pid file.
start_daemon() { # type id
  local out=$LOG/$1.$2.out
  "ceph-$1" -c "$CONF" -i "$2" --setuser root --setgroup root >>"$out" 2>&1 ||
    fail "ceph-$1 -i $2 failed to start" "$1.$2"
}

# Give up: one-line reason, the end of the daemon's log, kill what was started.
# DIR stays, for its logs; the next start or stop removes it.
fail() { # reason [daemon-name]
  trap - ERR INT TERM
  say "$1"
  local f
  if [[ -n ${2:-} ]]; then
    for f in "$LOG/$2.log" "$LOG/$2.out"; do
      [[ -s $f ]] && { say "last lines of $f:"; tail -25 "$f" >&2; }
    done
  fi
  # The monitor's view names what the logs may not (a failed mgr module, a
  # full disk, inactive PGs).
  if running && [[ $1 != *monitor* ]]; then
    say "ceph health detail:"
    timeout 10 ceph -c "$CONF" --connect-timeout 5 health detail 2>&1 | head -15 >&2 || true
  fi
  kill_daemons
  exit 1
}

# The first daemon whose pid file no longer names a live process.
dead_daemon() {
  local f
  for f in "$RUN"/*.pid; do
    [[ -f $f ]] || continue
    alive "$f" || { f=${f##*/}; echo "${f%.pid}"; return 0; }
  done
  return 1
}

# Poll CMD until it succeeds, within what is left of the start timeout, and
# notice a daemon dying on the way.
wait_until() { # description daemon-for-logs cmd...
  local what=$1 who=$2 last=$SECONDS dead
  shift 2
  until "$@" >/dev/null 2>&1; do
    [[ -f $CONF ]] || fail "$DIR went away (a stop while starting?)"
    if dead=$(dead_daemon); then fail "$dead died while waiting for $what" "$dead"; fi
    ((SECONDS < DEADLINE)) || fail "timed out after ${TIMEOUT}s waiting for $what" "$who"
    if ((SECONDS - last >= 10)); then say "waiting for $what (${SECONDS}s)"; last=$SECONDS; fi
    sleep 1
  done
}

json() { # python expression on the JSON in `d`, from `ceph ... -f json`
  /usr/bin/python3 -c "import json,sys; d=json.load(sys.stdin); sys.exit(0 if ($1) else 1)"
}
mon_up() { cli mon stat; }
mgr_up() { cli mgr stat -f json | json 'd["available"]'; }
osds_up() { cli osd stat -f json | json "d['num_up_osds'] >= $OSDS and d['num_in_osds'] >= $OSDS"; }
mds_active() { cli mds stat | grep -q 'up:active' && cli fs status cephfs | grep -q active; }
mds_self_active() {
  timeout 10 ceph --admin-daemon "$RUN/ceph-mds.a.asok" status | grep -q '"state": "up:active"'
}
# 16.2 nests the counts in pg_summary.
pgs_active() {
  cli pg stat -f json |
    json '(lambda p: p["num_pgs"] > 0 and all("active" in s["name"] for s in p["num_pg_by_state"]))(d.get("pg_summary", d))'
}
serving() {
  local fs health
  fs=$(cli fs ls) && [[ $fs == *"name: cephfs,"* ]] &&
    health=$(cli health) && [[ $health != *HEALTH_ERR* ]]
}

running() { alive "$RUN/mon.a.pid"; }

start() {
  [[ $OSDS =~ ^[1-9][0-9]*$ ]] || { say "CEPH_OSDS must be a positive number, not '$OSDS'"; exit 1; }
  # Ceph ignores a ceph.conf value it cannot parse and would quietly make the
  # default 100 GiB block file instead.
  [[ $OSD_SIZE =~ ^[1-9][0-9]*[KMGT]?$ ]] || { say "CEPH_OSD_SIZE must be like 4G or 512M, not '$OSD_SIZE'"; exit 1; }
  install
  if running; then
    say "ceph already running from $DIR"
    echo "CEPH_CONF=$CONF"
    return 0
  fi
  local p
  for p in 3300 6789; do
    if port_open "$p"; then say "$ADDR:$p is already in use (another Ceph monitor?)"; exit 1; fi
  done
  # Leftovers of an earlier cluster in DIR whose monitor is gone.
  kill_daemons
  remove_dir || exit 1
  mkdir -p "$DIR/data" "$LOG" "$RUN" "$DIR/crash"
  write_conf
  trap 'fail "start failed at line $LINENO"' ERR
  trap 'fail "start interrupted"' INT TERM
  DEADLINE=$((SECONDS + TIMEOUT))
  local t0=$SECONDS

  say "starting a Ceph cluster in $DIR (1 mon, 1 mgr, $OSDS OSD(s) of $OSD_SIZE, 1 MDS)"
  monmaptool --create --fsid "$(sed -n 's/^fsid = //p' "$CONF")" --enable-all-features \
    --set-min-mon-release pacific --addv a "[v2:$ADDR:3300,v1:$ADDR:6789]" \
    "$DIR/monmap" >"$LOG/monmaptool.out" 2>&1 || fail "monmaptool failed" monmaptool
  mkdir -p "$DIR/data/mon.a"
  ceph-mon -c "$CONF" -i a --mkfs --monmap "$DIR/monmap" >"$LOG/mon.a.out" 2>&1 ||
    fail "ceph-mon --mkfs failed" mon.a
  start_daemon mon a
  wait_until "the monitor" mon.a mon_up

  mkdir -p "$DIR/data/mgr.x"
  start_daemon mgr x

  local i uuid id
  for ((i = 0; i < OSDS; i++)); do
    uuid=$(cat /proc/sys/kernel/random/uuid)
    id=$(cli osd new "$uuid") || fail "ceph osd new failed" mon.a
    mkdir -p "$DIR/data/osd.$id"
    ceph-osd -c "$CONF" -i "$id" --mkfs --osd-uuid "$uuid" --setuser root --setgroup root \
      >"$LOG/osd.$id.out" 2>&1 || fail "ceph-osd --mkfs failed for osd.$id" "osd.$id"
    start_daemon osd "$id"
  done
  wait_until "$OSDS OSD(s) up" osd.0 osds_up

  for p in cephfs_metadata cephfs_data; do
    cli osd pool create "$p" 8 8 >/dev/null 2>&1 || fail "creating pool $p failed" mon.a
    cli osd pool set "$p" size 1 --yes-i-really-mean-it >/dev/null 2>&1 || fail "pool $p: size 1 refused" mon.a
  done
  cli fs new cephfs cephfs_metadata cephfs_data >/dev/null 2>&1 || fail "ceph fs new failed" mon.a
  # One MDS and no standby is the plan, not something to warn about.
  cli fs set cephfs standby_count_wanted 0 >/dev/null 2>&1 || true
  mkdir -p "$DIR/data/mds.a"
  start_daemon mds a

  wait_until "the manager" mgr.x mgr_up
  wait_until "the MDS to be active" mds.a mds_active
  wait_until "all PGs active" osd.0 pgs_active
  wait_until "CephFS to serve" mds.a serving
  trap - ERR INT TERM
  say "ready in $((SECONDS - t0))s: $(cli health 2>&1 | head -1)"
  echo "CEPH_CONF=$CONF"
}

kill_daemons() {
  local pids pid
  mapfile -t pids < <(daemon_pids | sort -un)
  ((${#pids[@]})) || return 0
  # TERM first so the logs end cleanly, but not for long: the MDS takes ~7 s
  # to exit on TERM, and the data is thrown away anyway.
  kill -TERM "${pids[@]}" 2>/dev/null || true
  for _ in $(seq 15); do
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && break; pid=; done
    [[ -z ${pid:-} ]] && return 0
    sleep 0.2
  done
  kill -KILL "${pids[@]}" 2>/dev/null || true
  for _ in $(seq 100); do
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && break; pid=; done
    [[ -z ${pid:-} ]] && return 0
    sleep 0.1
  done
  say "could not kill ${pids[*]}"
}

remove_dir() {
  [[ -e $DIR ]] || return 0
  if [[ -f $CONF ]] && grep -qxF -- "$MARKER" "$CONF"; then
    rm -rf -- "$DIR"
  elif [[ -d $DIR && -z $(ls -A -- "$DIR") ]]; then
    rmdir -- "$DIR"
  else
    say "$DIR was not made by scripts/ceph.sh (no marked ceph.conf); not removing it"
    return 1
  fi
}

stop() {
  kill_daemons
  remove_dir || true
}

mds_restart() {
  running || { say "no Ceph cluster running from $DIR"; return 1; }
  local pid
  if alive "$RUN/mds.a.pid"; then
    pid=$(cat "$RUN/mds.a.pid")
    kill -KILL "$pid" 2>/dev/null || true
    while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
  fi
  DEADLINE=$((SECONDS + TIMEOUT))
  start_daemon mds a
  # The monitor may still show the killed MDS as active: ask the new one
  # itself, which gets there through replay, reconnect and client replay.
  wait_until "the MDS to be active again" mds.a mds_self_active
  wait_until "CephFS to serve" mds.a serving
}

status() {
  if ! running; then say "no Ceph cluster running from $DIR"; return 1; fi
  cli -s
}

case ${1:-} in
  start) start ;;
  stop) stop ;;
  status) status ;;
  mds-restart) mds_restart ;;
  *) echo "usage: $0 start|stop|status|mds-restart [DIR]" >&2; exit 2 ;;
esac
