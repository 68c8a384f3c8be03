#!/usr/bin/env bash
# Starts or stops a throwaway Kerberos realm (Debian's MIT krb5-kdc) on
# loopback, for the RPCSEC_GSS tests.
#
#   scripts/kdc.sh start DIR   creates the realm in DIR, starts its KDC and
#                              prints, one per line and nothing else:
#                                KRB5_CONFIG=DIR/krb5.conf
#                                KRB5_KTNAME=DIR/nfs.keytab          (nfs/localhost, nfs/127.0.0.1)
#                                KRB5_CLIENT_KTNAME=DIR/client.keytab (alice and bob)
#   scripts/kdc.sh stop DIR    stops that KDC and removes DIR
#
# The realm is NFSX.TEST (env NFSX_KDC_REALM overrides it), also the
# default_realm of DIR/krb5.conf. Its principals, all with random keys, are
# the service nfs/localhost (clients name it nfs@localhost, a GSS host-based
# service; also as nfs/127.0.0.1, for clients given the address rather than
# the name) and the users alice and bob. The KDC listens on 127.0.0.1 only, on
# a free port the script picks, so several realms can run at once in
# different DIRs; it reads its own DIR/kdc.conf (KRB5_KDC_PROFILE) and keeps
# its database, stash, log and pid file in DIR, never in /etc/krb5kdc.
# DIR/krb5.conf also names DIR's keytabs and a ccache in DIR as the defaults,
# so a program given only KRB5_CONFIG stays inside the realm too.
#
# Besides what it prints, `start` writes two files in /etc/passwd and
# /etc/group syntax, for running a server under nss_wrapper
# (LD_PRELOAD=libnss_wrapper.so NSS_WRAPPER_PASSWD=DIR/passwd
# NSS_WRAPPER_GROUP=DIR/group) so that principals map to local users without
# touching the machine's accounts:
#   DIR/passwd   alice uid 20001 gid 20001, bob uid 20002 gid 20002
#   DIR/group    alice 20001, bob 20002, and nfsxtest 20100 with both as members
#
# Missing packages (krb5-kdc, krb5-admin-server, krb5-user, libnss-wrapper)
# are installed with apt-get. Diagnostics go to stderr. Exit status: 0 done,
# 1 the realm did not come up, 2 usage, 3 the packages are missing and cannot
# be installed (a caller may treat that as "no KDC here").
set -Eeuo pipefail

MARKER='# made by nfsx scripts/kdc.sh; "scripts/kdc.sh stop" removes this directory'
REALM=${NFSX_KDC_REALM:-NFSX.TEST}
START_TIMEOUT=10
# krb5kdc, kdb5_util and kadmin.local live in sbin.
PATH=$PATH:/usr/sbin:/sbin

say() { echo "kdc.sh: $*" >&2; }
usage() {
  say "usage: $0 start|stop DIR"
  exit 2
}

(($# == 2)) || usage
[[ -n $2 ]] || usage
DIR=$(realpath -m -- "$2")
[[ $DIR != / ]] || usage

CONF=$DIR/krb5.conf
KDC_CONF=$DIR/kdc.conf
KEYTAB=$DIR/nfs.keytab
CLIENT_KEYTAB=$DIR/client.keytab
PIDFILE=$DIR/kdc.pid

have_nss_wrapper() {
  local d
  for d in /usr/lib/*-linux-gnu /usr/lib64 /usr/lib; do
    [[ -e $d/libnss_wrapper.so ]] && return 0
  done
  return 1
}

install() {
  local missing=()
  command -v krb5kdc >/dev/null && command -v kdb5_util >/dev/null || missing+=(krb5-kdc)
  command -v kadmin.local >/dev/null || missing+=(krb5-admin-server)
  command -v kinit >/dev/null && command -v klist >/dev/null || missing+=(krb5-user)
  have_nss_wrapper || missing+=(libnss-wrapper)
  ((${#missing[@]})) || return 0
  [[ $(id -u) -eq 0 ]] || { say "missing ${missing[*]}, and installing them needs root"; exit 3; }
  command -v apt-get >/dev/null || { say "missing ${missing[*]}, and there is no apt-get"; exit 3; }
  say "installing ${missing[*]}"
  local log=${TMPDIR:-/tmp}/nfsx-kdc-apt.log
  export DEBIAN_FRONTEND=noninteractive
  local get=(apt-get -y -q -o DPkg::Lock::Timeout=120)
  local ok=0
  { "${get[@]}" install "${missing[@]}" || { "${get[@]}" update && "${get[@]}" install "${missing[@]}"; }; } >"$log" 2>&1 || ok=$?
  if ((ok != 0)); then
    say "apt-get install ${missing[*]} failed; last lines of $log:"
    tail -20 "$log" >&2
    exit 3
  fi
}

# The KDC of DIR, if one runs: the pid in its pid file, when that process is
# a krb5kdc started with this DIR's pid file.
kdc_pid() {
  local pid
  [[ -f $PIDFILE ]] || return 1
  pid=$(cat "$PIDFILE" 2>/dev/null) && [[ $pid =~ ^[0-9]+$ ]] || return 1
  tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null | grep -qxF -- "$PIDFILE" || return 1
  echo "$pid"
}

stop_kdc() {
  local pid i
  pid=$(kdc_pid) || return 0
  kill -TERM "$pid" 2>/dev/null || return 0
  for ((i = 0; i < 50; i++)); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  say "krb5kdc $pid ignored SIGTERM; killing it"
  kill -KILL "$pid" 2>/dev/null || true
}

# Ports bound on this machine (TCP or UDP, any address), from /proc.
used_ports() {
  local f _ addr _rest
  for f in /proc/net/tcp /proc/net/tcp6 /proc/net/udp /proc/net/udp6; do
    [[ -r $f ]] || continue
    while read -r _ addr _rest; do
      [[ $addr =~ :([0-9A-Fa-f]+)$ ]] && echo $((16#${BASH_REMATCH[1]}))
    done < <(tail -n +2 "$f")
  done
  return 0
}

pick_port() {
  local used port i
  used=$(used_ports | sort -u)
  for ((i = 0; i < 100; i++)); do
    port=$((20000 + RANDOM % 40000))
    grep -qxF "$port" <<<"$used" || { echo "$port"; return 0; }
  done
  say "found no free port"
  exit 1
}

write_confs() { # PORT
  cat >"$CONF" <<EOF
$MARKER
[libdefaults]
	default_realm = $REALM
	dns_lookup_kdc = false
	dns_lookup_realm = false
	rdns = false
	dns_canonicalize_hostname = false
	qualify_shortname = ""
	ignore_acceptor_hostname = false
	default_keytab_name = FILE:$KEYTAB
	default_client_keytab_name = FILE:$CLIENT_KEYTAB
	default_ccache_name = FILE:$DIR/ccache

[realms]
	$REALM = {
		kdc = 127.0.0.1:$1
	}

[domain_realm]
	localhost = $REALM
EOF
  cat >"$KDC_CONF" <<EOF
$MARKER
[kdcdefaults]
	kdc_listen = 127.0.0.1:$1
	kdc_tcp_listen = 127.0.0.1:$1

[realms]
	$REALM = {
		kdc_listen = 127.0.0.1:$1
		kdc_tcp_listen = 127.0.0.1:$1
		database_name = $DIR/principal
		key_stash_file = $DIR/stash
		acl_file = $DIR/kadm5.acl
		max_life = 10h
		max_renewable_life = 1d
		supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal
	}

[logging]
	kdc = FILE:$DIR/kdc.log
	admin_server = FILE:$DIR/kadmin.log
	default = FILE:$DIR/krb5.log
EOF
}

# The /etc/passwd and /etc/group of the test users, for nss_wrapper.
write_accounts() {
  cat >"$DIR/passwd" <<EOF
alice:x:20001:20001:nfsx test user alice:$DIR:/bin/false
bob:x:20002:20002:nfsx test user bob:$DIR:/bin/false
EOF
  cat >"$DIR/group" <<EOF
alice:x:20001:
bob:x:20002:
nfsxtest:x:20100:alice,bob
EOF
}

make_realm() {
  local pw
  pw=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
  : >"$DIR/kadm5.acl"
  kdb5_util -r "$REALM" create -s -P "$pw" >>"$DIR/setup.log" 2>&1 || {
    say "kdb5_util create failed:"
    tail -5 "$DIR/setup.log" >&2
    exit 1
  }
  local q
  for q in "addprinc -randkey nfs/localhost" "addprinc -randkey nfs/127.0.0.1" "addprinc -randkey alice" \
    "addprinc -randkey bob" "ktadd -k $KEYTAB nfs/localhost nfs/127.0.0.1" "ktadd -k $CLIENT_KEYTAB alice bob"; do
    kadmin.local -r "$REALM" -q "$q" >>"$DIR/setup.log" 2>&1 || {
      say "kadmin.local '$q' failed:"
      tail -5 "$DIR/setup.log" >&2
      exit 1
    }
  done
}

# Listening TCP sockets on 127.0.0.1:PORT.
listeners() { # PORT
  local hex
  hex=$(printf '0100007F:%04X' "$1")
  awk -v a="$hex" '$2 == a && $4 == "0A"' /proc/net/tcp 2>/dev/null | wc -l
}

# Starts krb5kdc on a fresh port and waits until it hands alice a ticket.
# krb5kdc binds with SO_REUSEPORT, so a port another KDC took since it was
# picked does not fail the bind: the kernel would share the clients out
# between both. Such a clash is looked for once the KDC answers, and the KDC
# moves to another port.
start_kdc() {
  local attempt port i up probe=$DIR/probe.ccache
  for ((attempt = 0; attempt < 5; attempt++)); do
    port=$(pick_port)
    write_confs "$port"
    rm -f "$PIDFILE"
    : >"$DIR/kdc.log"
    krb5kdc -r "$REALM" -P "$PIDFILE" </dev/null >>"$DIR/kdc.out" 2>&1 || {
      if grep -q "Address already in use" "$DIR/kdc.log"; then
        say "127.0.0.1:$port was taken meanwhile; trying another port"
        continue
      fi
      say "krb5kdc did not start; last lines of its logs:"
      tail -5 "$DIR/kdc.out" "$DIR/kdc.log" >&2 2>/dev/null || true
      exit 1
    }
    up=0
    for ((i = 0; i < START_TIMEOUT * 10; i++)); do
      if KRB5CCNAME=FILE:$probe kinit -k -t "$CLIENT_KEYTAB" alice </dev/null >/dev/null 2>>"$DIR/probe.log"; then
        up=1
        break
      fi
      if ((i >= 5)) && ! kdc_pid >/dev/null; then
        break
      fi
      sleep 0.1
    done
    rm -f "$probe"
    if ((up)) && (($(listeners "$port") > 1)); then
      say "another process listens on 127.0.0.1:$port too; trying another port"
      stop_kdc
      continue
    fi
    if ((up)); then
      say "realm $REALM up on 127.0.0.1:$port (krb5kdc pid $(kdc_pid || echo '?'))"
      return 0
    fi
    say "the KDC on 127.0.0.1:$port did not answer within ${START_TIMEOUT}s; last lines of its logs:"
    tail -5 "$DIR/probe.log" "$DIR/kdc.log" >&2 2>/dev/null || true
    stop_kdc
    exit 1
  done
  say "found no port to myself for the KDC"
  exit 1
}

start() {
  install
  if [[ -e $DIR ]]; then
    [[ -d $DIR ]] || { say "$DIR exists and is not a directory"; exit 1; }
    if [[ -n $(ls -A "$DIR") ]]; then
      head -1 "$CONF" 2>/dev/null | grep -qxF -- "$MARKER" || {
        say "$DIR is not empty and was not made by this script; not touching it"
        exit 1
      }
      say "$DIR already holds a realm; stopping it first"
      stop_kdc
      find "$DIR" -mindepth 1 -delete
    fi
  fi
  mkdir -p "$DIR"
  export KRB5_CONFIG=$CONF KRB5_KDC_PROFILE=$KDC_CONF
  # Written first so that a failed start can still be stopped and removed.
  write_confs 0
  write_accounts
  make_realm
  start_kdc
  echo "KRB5_CONFIG=$CONF"
  echo "KRB5_KTNAME=$KEYTAB"
  echo "KRB5_CLIENT_KTNAME=$CLIENT_KEYTAB"
}

stop() {
  [[ -e $DIR ]] || return 0
  # A start that died before writing anything.
  if [[ -d $DIR && -z $(ls -A "$DIR") ]]; then
    rmdir -- "$DIR"
    return 0
  fi
  head -1 "$CONF" 2>/dev/null | grep -qxF -- "$MARKER" || {
    say "$DIR was not made by this script; not removing it"
    exit 1
  }
  stop_kdc
  rm -rf -- "$DIR"
}

case $1 in
  start) start ;;
  stop) stop ;;
  *) usage ;;
esac
