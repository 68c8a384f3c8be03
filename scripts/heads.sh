#!/usr/bin/env bash
# N nfsx heads over one Ceph cluster, each in its own network namespace, as
# N machines in front of a shared store would be.
#
#   scripts/heads.sh start [N]     # N heads (default 3); prints HEADS=... and URLs
#   scripts/heads.sh stop
#   scripts/heads.sh status
#   scripts/heads.sh kill I        # kill -9 head I (a head failure)
#   scripts/heads.sh crash I       # kill -9 head I and take its link down (its machine is gone);
#                                  # the next head takes it over by itself
#   scripts/heads.sh restart I     # start head I again (same state directory)
#   scripts/heads.sh takeover I J  # head J takes over head I's address (after `kill I`)
#   scripts/heads.sh move-address I J  # only the address part (head J's takeover_command)
#
# Layout: a bridge nfsx-br in the host namespace holds 10.78.0.254; the
# one-machine cluster of scripts/ceph.sh listens there (CEPH_MON_ADDR), so
# heads reach it through the bridge as they would over a network. Head I
# runs in namespace nfsx-headI at 10.78.0.I, port 2049 (its own portmapper
# on 111), exporting the CephFS directory HEADS_EXPORT; clients run in the
# host namespace and reach every head through the bridge:
#
#   nfsx bench multi-client --clients 4 --target nfs://10.78.0.1,10.78.0.2,10.78.0.3/heads
#
# Needs root (namespaces, bridge) and a release build of nfsx.
#
#   HEADS_DIR     [/tmp/nfsx-heads]  cluster (ceph/), head state and logs
#   HEADS_EXPORT  [/heads]           CephFS directory every head exports (made if missing)
#   HEADS_CONFIG  [unset]            extra settings appended to every head's nfsx.toml
#                                    (after its [ceph] and [cluster] tables)
#   HEADS_CONFIG_I [unset]           extra settings for head I only (after HEADS_CONFIG)
#   HEADS_CEPH_CONFIG [unset]        extra lines of every head's [ceph] table
#                                    (e.g. 'read_delegations = true')
#   HEADS_TAKEOVER_AFTER [5]         seconds of silence after which a head is taken over
#                                    by the next one ([cluster] takeover_after_secs)
#   NFSX          [target/release/nfsx]
set -euo pipefail

cd "$(dirname "$0")/.."
DIR=${HEADS_DIR:-/tmp/nfsx-heads}
EXPORT=${HEADS_EXPORT:-/heads}
NFSX=${NFSX:-$PWD/target/release/nfsx}
TAKEOVER_AFTER=${HEADS_TAKEOVER_AFTER:-5}
NET=10.78.0
BRIDGE=nfsx-br
# The host's own network namespace under a name, so a head's
# takeover_command can reach the bridge from inside its namespace.
HOST_NS=nfsx-host
HOST_IP=$NET.254

say() { echo "heads.sh: $*" >&2; }
die() { say "$*"; exit 1; }
port_open() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }
# A live process, not a zombie: a head killed while its parent was a
# process that reaps no children (a test harness) lingers as one.
alive() {
  local pid
  [[ -f $1 ]] && pid=$(cat "$1") && kill -0 "$pid" 2>/dev/null && [[ $(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) != Z ]]
}
ns() { echo "nfsx-head$1"; }

bridge_up() {
  ip netns list | grep -qw "$HOST_NS" || ip netns attach "$HOST_NS" $$
  ip link show "$BRIDGE" >/dev/null 2>&1 || ip link add "$BRIDGE" type bridge
  ip addr show dev "$BRIDGE" | grep -q "$HOST_IP/" || ip addr add "$HOST_IP/24" dev "$BRIDGE"
  ip link set "$BRIDGE" up
}

# Namespace, veth pair into the bridge, address.
netns_up() {
  local i=$1 n; n=$(ns "$1")
  ip netns list | grep -qw "$n" || ip netns add "$n"
  if ! ip -n "$n" link show eth0 >/dev/null 2>&1; then
    # A namespace deleted just before (stop, then start) can leave its
    # veth's host end behind for a moment.
    ip link del "nh$i" 2>/dev/null || true
    ip link add "nh$i" type veth peer name eth0 netns "$n"
    ip link set "nh$i" master "$BRIDGE" up
    ip -n "$n" addr add "$NET.$i/24" dev eth0
  fi
  ip -n "$n" link set lo up
  ip -n "$n" link set eth0 up
}

# The export directory, made through libcephfs (no CephFS mount needed).
make_export() {
  /usr/bin/python3 - "$1" "$EXPORT" <<'PY'
import ctypes, sys
lib = ctypes.CDLL("libcephfs.so.2"); cm = ctypes.c_void_p()
lib.ceph_create(ctypes.byref(cm), None)
lib.ceph_conf_read_file(cm, sys.argv[1].encode())
if lib.ceph_mount(cm, b"/") != 0:
    sys.exit("cannot mount CephFS")
path = b""
for part in sys.argv[2].encode().strip(b"/").split(b"/"):
    path += b"/" + part
    lib.ceph_mkdir(cm, path, 0o777)
lib.ceph_unmount(cm)
PY
}

start_head() {
  local i=$1 conf=$DIR/ceph/ceph.conf
  alive "$DIR/head$i.pid" && return 0
  mkdir -p "$DIR/head$i/state"
  # One handle-signing key for all heads: a file handle one head gave out
  # is valid on every other, so a client can be moved between heads (a
  # load balancer, an address taken over) without stale handles.
  [[ -f $DIR/handle.key ]] || (umask 077 && head -c 32 /dev/urandom >"$DIR/handle.key")
  install -m 600 "$DIR/handle.key" "$DIR/head$i/state/handle.key"
  {
    printf 'portmap_port = 111\n[ceph]\nconf = "%s"\n' "$conf"
    [[ -n ${HEADS_CEPH_CONFIG:-} ]] && printf '%s\n' "$HEADS_CEPH_CONFIG"
    # NFSv4 client records and the grace period shared in RADOS, so a
    # head that takes over this one's address lets its clients reclaim.
    printf '[cluster]\nnode = "%s"\n' "$i"
    # A head silent this long is taken over by the next one, which then
    # moves its address here (`move-address`, run in the host's network
    # namespace, as a floating-address manager would).
    printf 'takeover_after_secs = %s\nop_timeout_secs = %s\n' "$TAKEOVER_AFTER" "$((TAKEOVER_AFTER < 10 ? TAKEOVER_AFTER : 10))"
    printf "takeover_command = 'HEADS_DIR=%s NFSX=%s ip netns exec %s bash %s move-address \"\$NFSX_DEAD_HEAD\" \"\$NFSX_HEAD\"'\n" \
      "$DIR" "$NFSX" "$HOST_NS" "$PWD/scripts/heads.sh"
    [[ -n ${HEADS_CONFIG:-} ]] && printf '%s\n' "$HEADS_CONFIG"
    local own="HEADS_CONFIG_$i"
    [[ -n ${!own:-} ]] && printf '%s\n' "${!own}"
  } >"$DIR/head$i/nfsx.toml"
  # Clients come from the bridge's network (the host namespace is .254).
  echo "$EXPORT $NET.0/24(rw,sync,no_root_squash,insecure)" >"$DIR/head$i/exports"
  # `ip netns exec` execs nfsx, so $! is the server's own pid.
  # Every address of the namespace, so an address taken over from a dead
  # head (`takeover`) is served too.
  # Metrics at HEAD:9049 (Prometheus), cluster state among them.
  ip netns exec "$(ns "$i")" "$NFSX" serve --backend ceph --listen "0.0.0.0:2049" --metrics "0.0.0.0:9049" \
    --config "$DIR/head$i/nfsx.toml" --state-dir "$DIR/head$i/state" --exports "$DIR/head$i/exports" \
    >>"$DIR/head$i/nfsx.log" 2>&1 &
  echo $! >"$DIR/head$i.pid"
}

wait_head() {
  local i=$1
  for _ in $(seq 300); do
    port_open "$NET.$i" 2049 && return 0
    alive "$DIR/head$i.pid" || break
    sleep 0.1
  done
  tail -20 "$DIR/head$i/nfsx.log" >&2 || true
  die "head $i did not start (log: $DIR/head$i/nfsx.log)"
}

stop_pid() {
  local f=$1 pid
  [[ -f $f ]] || return 0
  pid=$(cat "$f"); rm -f "$f"
  kill -TERM "$pid" 2>/dev/null || return 0
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
}

# Ends the dead head I's Ceph session (found by the client uuid the head
# names itself with) rather than leave its capabilities blocking the files
# it had open until the MDS times it out (session_timeout_secs).
sessions_of() {
  ceph -c "$DIR/ceph/ceph.conf" tell mds.a session ls 2>/dev/null | /usr/bin/python3 -c '
import json, sys
for s in json.load(sys.stdin):
    if f"/head{sys.argv[1]}/state:" in s.get("client_metadata", {}).get("uuid", ""):
        print(s["id"])' "$1"
}

evict_session() {
  local id
  for id in $(sessions_of "$1"); do
    if ceph -c "$DIR/ceph/ceph.conf" tell mds.a client evict "id=$id" >/dev/null 2>&1; then
      date +%s >"$DIR/head$1.evicted"
      say "ended head $1's Ceph session ($id)"
    fi
  done
}

# A head restarted within a second or two of its old session's eviction
# mounts, then goes down with it (the MDS is still blocklisting the evicted
# instance; seen every time here, never after 3 s): give the eviction
# EVICT_SETTLE seconds before starting the head again.
EVICT_SETTLE=5
wait_eviction_settled() {
  local f=$DIR/head$1.evicted at now
  [[ -f $f ]] || return 0
  at=$(cat "$f"); now=$(date +%s)
  ((now - at < EVICT_SETTLE)) && sleep $((EVICT_SETTLE - (now - at)))
  rm -f "$f"
}

# The heads' shared NFSv4 records ([cluster] defaults: pool
# cephfs_metadata, namespace nfsx).
rados_rm() { rados -c "$DIR/ceph/ceph.conf" -p cephfs_metadata -N nfsx rm "$1" 2>/dev/null || true; }

heads_present() { for f in "$DIR"/head*.pid; do [[ -f $f ]] && basename "$f" .pid | sed 's/head//'; done; }

start() {
  local n=${1:-3}
  [[ $n =~ ^[1-9][0-9]?$ && $n -le 99 ]] || die "N must be 1 to 99"
  [[ $(id -u) -eq 0 ]] || die "needs root (network namespaces, a bridge)"
  [[ -x $NFSX ]] || die "no nfsx at $NFSX: cargo build --release -p nfsx"
  mkdir -p "$DIR"
  bridge_up
  CEPH_MON_ADDR=$HOST_IP scripts/ceph.sh start "$DIR/ceph" >/dev/null
  make_export "$DIR/ceph/ceph.conf"
  # A fresh cluster: NFSv4 state of earlier heads (clients that could
  # reclaim, hence a grace period) belongs to a file system that is gone.
  local up=0
  for i in $(heads_present); do alive "$DIR/head$i.pid" && up=1; done
  ((up)) || rados_rm grace
  for i in $(seq "$n"); do
    alive "$DIR/head$i.pid" || { rm -rf "$DIR/head$i"; rados_rm "clients.$i"; }
    netns_up "$i"
    start_head "$i"
  done
  for i in $(seq "$n"); do wait_head "$i"; done
  local hosts
  hosts=$(seq -s, -f "$NET.%g" "$n")
  say "$n head(s) over CephFS $EXPORT, cluster in $DIR/ceph"
  echo "CEPH_CONF=$DIR/ceph/ceph.conf"
  echo "HEADS=nfs://$hosts$EXPORT"
  for i in $(seq "$n"); do echo "HEAD$i=nfs://$NET.$i$EXPORT"; done
}

stop() {
  local i
  for i in $(heads_present); do stop_pid "$DIR/head$i.pid"; done
  for n in $(ip netns list | awk '/^nfsx-head[0-9]+/ {print $1}'); do ip netns del "$n"; done
  [[ -d $DIR/ceph ]] && scripts/ceph.sh stop "$DIR/ceph" >/dev/null || true
  ip link del "$BRIDGE" 2>/dev/null || true
  ip netns del "$HOST_NS" 2>/dev/null || true
  say "stopped"
}

status() {
  local i up=0
  for i in $(heads_present); do
    if alive "$DIR/head$i.pid"; then say "head $i: up at $NET.$i:2049"; up=$((up + 1)); else say "head $i: down"; fi
  done
  ((up > 0))
}

# Head I's address comes up beside head J's, the host's neighbour entry for
# it points at head J at once (what a gratuitous ARP does), and only then
# does head I's interface go down: no moment in which the host sends to an
# interface that is gone, where a client's connect would wait for its
# timeout.
move_address() {
  ip -n "$(ns "$2")" addr add "$NET.$1/24" dev eth0 2>/dev/null || true
  local mac
  mac=$(ip -n "$(ns "$2")" -o link show eth0 | sed -n 's/.*link\/ether \([0-9a-f:]*\).*/\1/p')
  ip neigh replace "$NET.$1" lladdr "$mac" dev "$BRIDGE" nud reachable 2>/dev/null || ip neigh flush dev "$BRIDGE" 2>/dev/null || true
  ip -n "$(ns "$1")" link set eth0 down 2>/dev/null || true
  # A head's takeover_command runs once the dead head's Ceph session is
  # ended: a restart of the dead head waits out the eviction from then.
  [[ -f $DIR/head$1.evicted ]] || date +%s >"$DIR/head$1.evicted"
}

case ${1:-} in
  start) start "${2:-3}" ;;
  stop) stop ;;
  status) status ;;
  kill)
    [[ -n ${2:-} ]] || die "usage: $0 kill I"
    alive "$DIR/head$2.pid" || die "head $2 is not running"
    kill -KILL "$(cat "$DIR/head$2.pid")"
    say "head $2 killed" ;;
  crash)
    [[ -n ${2:-} ]] || die "usage: $0 crash I"
    alive "$DIR/head$2.pid" || die "head $2 is not running"
    # The link first: a machine that is gone says nothing (no FIN or RST
    # for its connections, which killing the process alone would send).
    ip -n "$(ns "$2")" link set eth0 down
    kill -KILL "$(cat "$DIR/head$2.pid")"
    say "head $2 crashed (link down, killed)" ;;
  move-address)
    [[ -n ${2:-} && -n ${3:-} ]] || die "usage: $0 move-address I J"
    move_address "$2" "$3"
    say "head $3 now answers at $NET.$2 too" ;;
  takeover)
    [[ -n ${2:-} && -n ${3:-} ]] || die "usage: $0 takeover I J"
    alive "$DIR/head$3.pid" || die "head $3 is not running"
    # First the NFSv4 side: head J learns it may let head I's clients
    # reclaim, and every live head is in grace (grants nothing new) before
    # head I's locks go with its Ceph session.
    "$NFSX" cluster --config "$DIR/head$3/nfsx.toml" takeover "$2" "$3" >&2 || die "nfsx cluster takeover $2 $3 failed"
    move_address "$2" "$3"
    evict_session "$2"
    say "head $3 now answers at $NET.$2 too" ;;
  restart)
    [[ -n ${2:-} ]] || die "usage: $0 restart I"
    # Take the address back from whichever head took it over.
    for n in $(ip netns list | awk '/^nfsx-head[0-9]+/ {print $1}'); do
      [[ $n == "$(ns "$2")" ]] || ip -n "$n" addr del "$NET.$2/24" dev eth0 2>/dev/null || true
    done
    ip -n "$(ns "$2")" link set eth0 up
    ip neigh flush dev "$BRIDGE" 2>/dev/null || true
    # Head I, starting, has the head that took its NFSv4 clients end their
    # state there (as `nfsx cluster give-back I` would), so they reclaim it
    # from head I.
    alive "$DIR/head$2.pid" || wait_eviction_settled "$2"
    start_head "$2"; wait_head "$2"; say "head $2 up again" ;;
  *) echo "usage: $0 start [N]|stop|status|kill I|crash I|restart I|takeover I J|move-address I J" >&2; exit 2 ;;
esac
