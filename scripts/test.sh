#!/usr/bin/env bash
# Runs the whole nfsx test suite: unit tests, whole-request tests, the
# integration tests that drive the server with real NFS clients (Debian
# libnfs-utils), the README's commands as written, a clippy check that the
# client crates index nothing, and a short run of every fuzz target.
#
# Installs what it needs on a Debian machine (as root): the build's own
# packages (scripts/build-deps.sh), MIT Kerberos for a test realm,
# libnfs-utils for the real-client tests, NFS-Ganesha and rpcbind for the interop stage (the nfsx
# client and `nfsx bench` against a server that shares no code with nfsx),
# and cargo-fuzz for the fuzz targets.
#   CEPH=0           skips the CephFS stage (a one-machine Ceph cluster from
#                    Debian's packages, scripts/ceph.sh, installed by it)
#   GANESHA=0        skips the interop stage
#   FUZZ_SECONDS=N   seconds per fuzz target (default 20; 0 skips fuzzing)
#
# Ends with passed, failed and skipped tests per stage, then one line
# `tests: N passed, M failed, K skipped`. Ignored tests count as skipped, and
# so do all the tests of a stage that did not run, with the reason. A stage
# turned off above is skipped on purpose; one that should run but cannot
# start (Ceph or the heads failing to come up) is skipped where the machine
# may not allow it, and fails the run under CI (CI set, as .ci/run does).
set -euo pipefail
cd "$(dirname "$0")/.."

case ${CI:-} in '' | 0 | false) ci=0 ;; *) ci=1 ;; esac

# What the build itself needs (Kerberos headers, libclang).
scripts/build-deps.sh
need_apt=()
command -v nfs-cp >/dev/null 2>&1 || need_apt+=(libnfs-utils)
# The Kerberos tests start a realm (scripts/kdc.sh) and run the server
# under nss_wrapper, so that principals map to users of their own.
command -v krb5kdc >/dev/null 2>&1 || [[ -x /usr/sbin/krb5kdc ]] || need_apt+=(krb5-kdc krb5-admin-server krb5-user)
dpkg -s libnss-wrapper >/dev/null 2>&1 || need_apt+=(libnss-wrapper)
# The real-client tests compile a small libnfs program (tests/support/nfsops.c).
[[ -e /usr/include/nfsc/libnfs.h ]] || need_apt+=(libnfs-dev)
command -v cc >/dev/null 2>&1 || need_apt+=(gcc libc6-dev)
command -v python3 >/dev/null 2>&1 || need_apt+=(python3)
# `nfsx mount` (crates/cli/tests/fuse_mount.rs) mounts through fusermount3.
command -v fusermount3 >/dev/null 2>&1 || need_apt+=(fuse3)
# COPY and CLONE on a file system that shares blocks (crates/vfs/tests/reflink.rs
# makes a loop-mounted XFS image with reflink).
command -v mkfs.xfs >/dev/null 2>&1 || need_apt+=(xfsprogs)
if ((${#need_apt[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    echo "missing Debian packages: ${need_apt[*]} (run as root or install them)" >&2
    exit 1
  fi
  echo "== installing ${need_apt[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

# The client crates index no reply data, nor any slice: an out-of-range
# index would be a panic on what a server sent. Their lib.rs denies
# clippy::indexing_slicing outside tests; this stage holds them to it.
echo "== clippy: no indexing or slicing in the client crates"
if ! cargo clippy --version >/dev/null 2>&1; then
  rustup component add clippy
fi
cargo clippy --release --no-deps -p client -p client-core -p fuse --lib -- -D clippy::indexing_slicing

log=$(mktemp)
trap 'rm -f "$log"' EXIT

# Counts per stage, in the order the stages ran.
stages=()
declare -A title passed failed skipped why
stage() { # ID TITLE
  stages+=("$1")
  title[$1]=$2
  passed[$1]=0 failed[$1]=0 skipped[$1]=0 why[$1]=
}
count() { # ID PASSED FAILED SKIPPED
  passed[$1]=$((passed[$1] + $2)) failed[$1]=$((failed[$1] + $3)) skipped[$1]=$((skipped[$1] + $4))
}

# `cargo test ARGS`, its output also into the log; its `test result:` lines
# count for stage ID (ignored tests as skipped). A failing test does not
# stop the run: every stage runs and the summary is printed, then the run
# fails (`runs_failed` also catches a build that failed before any test).
runs_failed=()
run_tests() { # ID ARGS...
  local id=$1 from
  shift
  from=$(($(wc -l <"$log") + 1))
  cargo test --no-fail-fast "$@" 2>&1 | tee -a "$log" || runs_failed+=("cargo test $*")
  # shellcheck disable=SC2046
  count "$id" $(tail -n "+$from" "$log" | awk '/^test result:/ {p += $4; f += $6; i += $8} END {print p + 0, f + 0, i + 0}')
}

# The tests `cargo test ARGS` would run count as skipped for stage ID.
skip_tests() { # ID ARGS...
  local id=$1 list
  shift
  list=$(cargo test "$@" --list 2>/dev/null) || {
    echo "cannot list the tests of: cargo test $*" >&2
    exit 1
  }
  count "$id" 0 0 "$(grep -c ': test$' <<<"$list" || true)"
}

# A stage that should have run could not start: the run fails under CI.
not_started=()
cannot_start() { # ID REASON
  why[$1]=$2
  echo "== ${title[$1]}: NOT run: $2 (reason above)"
  ((ci == 0)) || not_started+=("${title[$1]}: $2")
}

stage cargo "cargo test"
echo "== cargo test (release: the integration tests move a 1 GiB file)"
run_tests cargo --workspace --release

# The README's commands, as written (scripts/readme-check.py): the serve
# command of the set-up section, every `nfsx serve`/`nfs-*` block on free
# ports, every `nfsx bench` line checked with --dry-run. After the cargo
# tests, which built target/release/nfsx.
stage readme "README commands"
echo "== README commands"
readme_rc=0
from=$(($(wc -l <"$log") + 1))
python3 scripts/readme-check.py 2>&1 | tee -a "$log" || readme_rc=$?
readme=$(tail -n "+$from" "$log" | grep '^readme: ' | tail -1 || true)
readme_passed=$(sed -n 's/^readme: \([0-9]*\) passed.*/\1/p' <<<"$readme")
readme_failed=$(sed -n 's/^readme: [0-9]* passed, \([0-9]*\) failed.*/\1/p' <<<"$readme")
readme_skipped=$(sed -n 's/^readme: .* failed, \([0-9]*\) skipped.*/\1/p' <<<"$readme")
count readme "${readme_passed:-0}" "${readme_failed:-0}" "${readme_skipped:-0}"

# The CephFS backend against a real cluster. Its tests need one, so the
# cargo tests above ignored them; here they run with it. `ceph_tests CMD ID`
# runs CMD (run_tests or skip_tests) for each group of them.
mds_test=failures::acknowledged_creations_survive_head_and_mds_killed_together
ceph_tests() { # CMD ID
  "$1" "$2" --release -p vfs-ceph --test conformance -- --ignored
  "$1" "$2" --release -p nfsx --test ceph -- --ignored --skip heads:: --skip "$mds_test"
  # Kills and restarts the MDS: alone, after every other test of the cluster.
  "$1" "$2" --release -p nfsx --test ceph -- --ignored --test-threads=1 --exact "$mds_test"
}
heads_tests() { # CMD ID
  "$1" "$2" --release -p nfsx --test ceph -- --ignored --test-threads=1 heads::
}
stage ceph "CephFS backend"
stage heads "two heads"
if [[ ${CEPH:-1} == 0 ]]; then
  echo "== CephFS stage skipped (CEPH=0)"
  why[ceph]="CEPH=0" why[heads]="CEPH=0"
  ceph_tests skip_tests ceph
  heads_tests skip_tests heads
else
  echo "== CephFS backend against a one-machine Ceph cluster (scripts/ceph.sh)"
  if conf=$(scripts/ceph.sh start); then
    trap 'scripts/ceph.sh stop >/dev/null 2>&1 || true; rm -f "$log"' EXIT
    export NFSX_CEPH_CONF=${conf#CEPH_CONF=}
    ceph_tests run_tests ceph
    unset NFSX_CEPH_CONF
    scripts/ceph.sh stop
    trap 'rm -f "$log"' EXIT
    echo "== two nfsx heads in network namespaces over one cluster (scripts/heads.sh)"
    if heads=$(scripts/heads.sh start 2); then
      trap 'scripts/heads.sh stop >/dev/null 2>&1 || true; rm -f "$log"' EXIT
      export NFSX_HEADS
      NFSX_HEADS=$(sed -n 's/^HEADS=//p' <<<"$heads")
      heads_tests run_tests heads
      unset NFSX_HEADS
      scripts/heads.sh stop
      trap 'rm -f "$log"' EXIT
    else
      cannot_start heads "the heads could not start"
      heads_tests skip_tests heads
    fi
  else
    cannot_start ceph "Ceph could not start on this machine"
    why[heads]="no Ceph cluster"
    ceph_tests skip_tests ceph
    heads_tests skip_tests heads
  fi
fi

# Ganesha needs rpcbind on port 111, which the cargo tests above use for
# nfsx's own portmapper, so this stage runs after them, never beside them.
ganesha_tests() { # CMD ID
  "$1" "$2" --release -p client --test against_ganesha -- --ignored
  # Blocked NFSv3 locks granted by Ganesha's NLM callback.
  "$1" "$2" --release -p client --test against_ganesha_nlm -- --ignored
  "$1" "$2" --release -p nfsx --test bench_ganesha -- --ignored
  # Restarts Ganesha with Kerberos and puts it back: after the others.
  "$1" "$2" --release -p client --test against_ganesha_krb5 -- --ignored
}
stage ganesha "NFS-Ganesha interop"
if [[ ${GANESHA:-1} != 0 ]]; then
  echo "== interop with NFS-Ganesha: client and bench tests marked ignored above"
  scripts/ganesha.sh start
  trap 'scripts/ganesha.sh stop >/dev/null 2>&1 || true; rm -f "$log"' EXIT
  ganesha_tests run_tests ganesha
  scripts/ganesha.sh stop
else
  why[ganesha]="GANESHA=0"
  ganesha_tests skip_tests ganesha
fi

FUZZ_SECONDS=${FUZZ_SECONDS:-20}
if [[ $FUZZ_SECONDS -gt 0 ]]; then
  echo "== fuzz targets, ${FUZZ_SECONDS}s each"
  scripts/fuzz.sh "$FUZZ_SECONDS"
fi

# The later stages run (or skip) only tests the first one ignored: each is
# counted once, in the later stage, and taken off the first one's skipped.
later=0
for id in ceph heads ganesha; do
  later=$((later + passed[$id] + failed[$id] + skipped[$id]))
done
skipped[cargo]=$((skipped[cargo] - later))
why[cargo]="ignored, and run by no stage below"
echo "== tests by stage"
total_passed=0 total_failed=0 total_skipped=0
for id in "${stages[@]}"; do
  line="${title[$id]}: ${passed[$id]} passed, ${failed[$id]} failed, ${skipped[$id]} skipped"
  ((skipped[$id] == 0)) || [[ -z ${why[$id]} ]] || line+=" (${why[$id]})"
  echo "$line"
  total_passed=$((total_passed + passed[$id]))
  total_failed=$((total_failed + failed[$id]))
  total_skipped=$((total_skipped + skipped[$id]))
done
echo "tests: ${total_passed} passed, ${total_failed} failed, ${total_skipped} skipped"
if ((${#runs_failed[@]})); then
  printf 'failed:\n' >&2
  printf '  %s\n' "${runs_failed[@]}" >&2
  exit 1
fi
if ((readme_rc != 0)); then
  echo "the README's commands do not work as written (see the FAIL lines above)" >&2
  exit 1
fi
if ((${#not_started[@]})); then
  printf 'under CI every stage not turned off must run; these could not start:\n' >&2
  printf '  %s\n' "${not_started[@]}" >&2
  exit 1
fi
