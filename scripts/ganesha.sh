#!/usr/bin/env bash
# Starts or stops NFS-Ganesha (Debian package) on loopback as the peer the
# client and the benchmarks are compared against, with its own rpcbind.
#
#   scripts/ganesha.sh start|stop
#
# Ganesha serves NFSv3 (MOUNT on 20048) and NFSv4 on 2049 from one FSAL_VFS
# export, reachable as nfs://127.0.0.1/export (portmap discovery on 111).
# Ganesha 4.3 refuses to start NFSv3 without a portmapper to register with,
# so rpcbind is started too, on 127.0.0.1 and ::1 alone (port 111 there:
# nothing else may hold it, which is why the test suite runs this after the
# cargo tests).
#
# NLM, NFSv3's lock manager, is on (GANESHA_NLM). Ganesha's needs rpc.statd
# (it monitors each lock client with SM_MON), started here with its own
# state directory. Ganesha grants a blocked lock by calling the client's
# lock manager back, which it looks up by the client's NLM caller name at
# port 111 of that host. Lock clients on this machine can be no host of
# their own on 127.0.0.1, whose portmapper holds Ganesha's NLM already, so
# a second loopback address stands for their host: 127.0.0.2
# (GANESHA_NLM_CLIENT), with a portmapper of its own there, a second
# rpcbind. A client calls itself by that address (nfsx: machine_name
# "127.0.0.2") and registers its lock service with that portmapper (nfsx:
# [nlm] portmap = "127.0.0.2:111").
#
#   PEER_DIR  [/tmp/nfsx-ganesha]  config, logs, pid files; the export is PEER_DIR/export
#   GANESHA_NLM  [1]                serve NLM (and start rpc.statd); 0 leaves it off
#   GANESHA_NLM_CLIENT  [127.0.0.2] the loopback address whose port 111 gets the lock
#                                   clients' portmapper (empty: none)
#   GANESHA_LOG_COMPONENTS  [unset] log levels by component for PEER_DIR/ganesha.log,
#                                   e.g. "NLM = FULL_DEBUG;" to see NLM's callbacks
#   GANESHA_DELEGATIONS  [none]     NFSv4 delegations Ganesha grants: none, r or rw
#                                   (off by default in Ganesha; rw for the recall benchmark)
#   GANESHA_CEPH_CONF  [unset]      serve a Ceph file system through FSAL_CEPH (Debian
#                                   nfs-ganesha-ceph) instead of PEER_DIR/export: the
#                                   cluster's ceph.conf, e.g. /tmp/nfsx-ceph/ceph.conf
#   GANESHA_CEPH_PATH  [/]          the CephFS directory exported then (it must exist)
#
# Kerberos (RPCSEC_GSS, for the client's krb5/krb5i/krb5p against a server
# that shares no code with nfsx), off unless a keytab is given:
#   GANESHA_KRB5_KEYTAB  [unset]    the keytab of Ganesha's service principals (e.g. the
#                                   KRB5_KTNAME of scripts/kdc.sh); turns NFS_KRB5 on
#   GANESHA_KRB5_PRINCIPAL  [nfs]   Ganesha's acceptor name, a GSS host-based service name
#                                   (service[@host]); the bare "nfs" names no host, so MIT
#                                   krb5 accepts a ticket for any nfs/HOST in the keytab
#                                   (nfs/localhost and nfs/127.0.0.1 alike); "nfs@HOST"
#                                   accepts nfs/HOST only
#   GANESHA_SECTYPE  [sys, krb5, krb5i, krb5p with a keytab, else sys]  the export's
#                                   SecType, e.g. "krb5p" to refuse every other flavor
#   GANESHA_ENV  [unset]            VAR=VALUE words set for ganesha.nfsd alone (not for
#                                   rpcbind), e.g. nss_wrapper's LD_PRELOAD, NSS_WRAPPER_PASSWD
#                                   and NSS_WRAPPER_GROUP, so that principals map to the users
#                                   of scripts/kdc.sh's DIR/passwd; no spaces inside a word
# Ganesha finds the realm through KRB5_CONFIG, which it inherits from this
# script's environment like any variable. Principals map to users through
# libnfsidmap (nsswitch method, PEER_DIR/idmapd.conf): user@REALM is the
# local user "user" when REALM is the default realm of KRB5_CONFIG. With
# Kerberos on, the export directory is world-writable (sticky, 1777), as
# principals write there as their own users.
set -euo pipefail

PEER_DIR=${PEER_DIR:-/tmp/nfsx-ganesha}
NLM=${GANESHA_NLM:-1}
NLM_CLIENT=${GANESHA_NLM_CLIENT-127.0.0.2}
LOG_COMPONENTS=${GANESHA_LOG_COMPONENTS:-}
DELEGATIONS=${GANESHA_DELEGATIONS:-none}
CEPH_CONF=${GANESHA_CEPH_CONF:-}
CEPH_PATH=${GANESHA_CEPH_PATH:-/}
KRB5_KEYTAB=${GANESHA_KRB5_KEYTAB:-}
KRB5_PRINCIPAL=${GANESHA_KRB5_PRINCIPAL:-nfs}
SECTYPE=${GANESHA_SECTYPE:-$([[ -n $KRB5_KEYTAB ]] && echo "sys, krb5, krb5i, krb5p" || echo sys)}
read -r -a EXTRA_ENV <<<"${GANESHA_ENV:-}"
EXPORT=$PEER_DIR/export
CONF=$PEER_DIR/ganesha.conf

running() { [[ -f $1 ]] && kill -0 "$(cat "$1")" 2>/dev/null; }
port_open() { (exec 3<>"/dev/tcp/${2:-127.0.0.1}/$1") 2>/dev/null; }
HERE=$(cd "$(dirname "$0")" && pwd)

install() {
  local missing=()
  command -v ganesha.nfsd >/dev/null || missing+=(nfs-ganesha nfs-ganesha-vfs)
  [[ -z $CEPH_CONF || -e /usr/lib/x86_64-linux-gnu/ganesha/libfsalceph.so ]] || missing+=(nfs-ganesha-ceph)
  command -v rpcbind >/dev/null || missing+=(rpcbind)
  command -v pgrep >/dev/null || missing+=(procps)
  command -v python3 >/dev/null || missing+=(python3)
  [[ $NLM == 0 ]] || command -v rpc.statd >/dev/null || missing+=(nfs-common)
  ((${#missing[@]})) || return 0
  [[ $(id -u) -eq 0 ]] || { echo "needs root to install ${missing[*]}" >&2; exit 1; }
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}

# The machine's /etc/idmapd.conf is not ours to rely on: a Domain there
# would not change which principals map (the realm decides that), but a
# Method or Local-Realms would.
write_idmap_conf() {
  cat >"$PEER_DIR/idmapd.conf" <<IDMAP
[General]
Verbosity = 0
Domain = nfsx.test

[Mapping]
Nobody-User = nobody
Nobody-Group = nogroup

[Translation]
Method = nsswitch
IDMAP
}

write_conf() {
  local path=$EXPORT fsal="Name = VFS;" ceph=
  if [[ -n $CEPH_CONF ]]; then
    path=$CEPH_PATH
    fsal='Name = CEPH; User_Id = "admin";'
    ceph="CEPH { Ceph_Conf = $CEPH_CONF; }"
  fi
  # Without a keytab NFS_KRB5 keeps Ganesha's defaults, as it always has.
  local krb5= idmap=
  if [[ -n $KRB5_KEYTAB ]]; then
    # CCacheDir holds the credential Ganesha gets for callbacks; its
    # default is under /var/run.
    krb5="NFS_KRB5 {
    Active_krb5 = true;
    KeytabPath = \"$KRB5_KEYTAB\";
    PrincipalName = \"$KRB5_PRINCIPAL\";
    CCacheDir = \"$PEER_DIR/krb5cc\";
}"
    idmap="IdmapConf = \"$PEER_DIR/idmapd.conf\";"
    write_idmap_conf
  fi
  cat >"$CONF" <<CONF
NFS_CORE_PARAM {
    NFS_Port = 2049;
    MNT_Port = 20048;
    Bind_Addr = 127.0.0.1;
    Protocols = 3, 4;
    Enable_NLM = $([[ $NLM == 0 ]] && echo false || echo true);
    # A lock client is the host its caller name says, not the address it
    # calls from (all of them 127.0.0.1 here): GRANTED goes to that name.
    NSM_Use_Caller_Name = true;
    Enable_RQUOTA = false;
    Enable_UDP = false;
    Mount_Path_Pseudo = true;
}
NFSV4 {
    Graceless = true;
    Delegations = $([[ $DELEGATIONS == none ]] && echo false || echo true);
    RecoveryBackend = fs;
    RecoveryRoot = $PEER_DIR/recovery;
    $idmap
}
$krb5
EXPORT {
    Export_Id = 1;
    Path = $path;
    Pseudo = /export;
    Protocols = 3, 4;
    Transports = TCP;
    Access_Type = RW;
    Squash = No_Root_Squash;
    SecType = $SECTYPE;
    Delegations = $DELEGATIONS;
    FSAL { $fsal }
}
$ceph
LOG {
    Default_Log_Level = EVENT;
    ${LOG_COMPONENTS:+COMPONENTS { $LOG_COMPONENTS \}}
}
CONF
}

start() {
  install
  mkdir -p "$EXPORT" "$PEER_DIR/recovery" /run/rpcbind
  if running "$PEER_DIR/ganesha.pid"; then echo "ganesha already running"; return 0; fi
  if port_open 111 && ! pgrep -x rpcbind >/dev/null; then
    echo "port 111 is held by something other than rpcbind (an nfsx serve?); Ganesha must register with rpcbind there" >&2
    exit 1
  fi
  if ! port_open 111; then
    python3 "$HERE/rpcbind-at.py" 127.0.0.1 111 -- "$(command -v rpcbind)" -f -w >"$PEER_DIR/rpcbind.log" 2>&1 &
    echo $! >"$PEER_DIR/rpcbind.pid"
    for _ in $(seq 50); do rpcinfo -p 127.0.0.1 >/dev/null 2>&1 && break; sleep 0.1; done
  fi
  [[ $NLM == 0 ]] || start_statd
  [[ $NLM == 0 || -z $NLM_CLIENT ]] || start_client_portmap
  if [[ -n $KRB5_KEYTAB ]]; then
    [[ -r $KRB5_KEYTAB ]] || { echo "GANESHA_KRB5_KEYTAB=$KRB5_KEYTAB cannot be read" >&2; exit 1; }
    mkdir -p "$PEER_DIR/krb5cc"
    chmod 1777 "$EXPORT"
  fi
  write_conf
  env ${EXTRA_ENV[@]+"${EXTRA_ENV[@]}"} ganesha.nfsd -f "$CONF" -L "$PEER_DIR/ganesha.log" -p "$PEER_DIR/ganesha.pid" -N NIV_EVENT
  for _ in $(seq 100); do port_open 2049 && break; sleep 0.1; done
  if ! running "$PEER_DIR/ganesha.pid" || ! port_open 2049; then
    echo "ganesha did not start; last log lines:" >&2
    tail -20 "$PEER_DIR/ganesha.log" >&2 || true
    exit 1
  fi
  echo "ganesha serving nfs://127.0.0.1/export${KRB5_KEYTAB:+ (SecType $SECTYPE)} (files in ${CEPH_CONF:+CephFS }$([[ -n $CEPH_CONF ]] && echo "$CEPH_PATH" || echo "$EXPORT"))"
}

# rpc.statd, which Ganesha's NLM asks to monitor lock clients, registered
# with rpcbind before Ganesha starts (Ganesha finds it there at its first
# lock). Its state stays under PEER_DIR; it notifies nobody at start, as
# no client of an earlier run holds locks here.
start_statd() {
  running "$PEER_DIR/statd.pid" && return 0
  mkdir -p "$PEER_DIR/statd/sm" "$PEER_DIR/statd/sm.bak"
  rpc.statd -F -d -L -P "$PEER_DIR/statd" >"$PEER_DIR/statd.log" 2>&1 &
  echo $! >"$PEER_DIR/statd.pid"
  for _ in $(seq 50); do rpcinfo -p 127.0.0.1 2>/dev/null | grep -qw 100024 && return 0; sleep 0.1; done
  echo "rpc.statd did not register with rpcbind; its log:" >&2
  tail -20 "$PEER_DIR/statd.log" >&2 || true
  exit 1
}

# The lock clients' host's portmapper: a second rpcbind on NLM_CLIENT:111,
# with a /run of its own (rpcbind's socket and lock file are there), so
# that it is a second rpcbind and not the first one refusing to start.
start_client_portmap() {
  running "$PEER_DIR/client-rpcbind.pid" && return 0
  if port_open 111 "$NLM_CLIENT"; then
    echo "port 111 of $NLM_CLIENT is taken (an rpcbind on every address?): lock clients here get no callbacks" >&2
    return 0
  fi
  unshare -m sh -c 'mount -t tmpfs nfsx-client-run /run && mkdir /run/rpcbind &&
    exec python3 "$1" "$2" 0 -- "$3" -f' sh "$HERE/rpcbind-at.py" "$NLM_CLIENT" "$(command -v rpcbind)" \
    >"$PEER_DIR/client-rpcbind.log" 2>&1 &
  echo $! >"$PEER_DIR/client-rpcbind.pid"
  for _ in $(seq 50); do port_open 111 "$NLM_CLIENT" && return 0; sleep 0.1; done
  echo "no portmapper on $NLM_CLIENT:111; its log:" >&2
  tail -20 "$PEER_DIR/client-rpcbind.log" >&2 || true
  exit 1
}

stop_pid() {
  running "$1" || { rm -f "$1"; return 0; }
  local pid; pid=$(cat "$1")
  kill -TERM "$pid"
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$1"
}

stop() {
  stop_pid "$PEER_DIR/ganesha.pid"
  stop_pid "$PEER_DIR/statd.pid"
  stop_pid "$PEER_DIR/client-rpcbind.pid"
  stop_pid "$PEER_DIR/rpcbind.pid"
}

case ${1:-} in
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
