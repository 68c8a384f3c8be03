#!/usr/bin/env bash
# Runs the whole nfsx test suite: unit tests, whole-request tests, the
# integration tests that drive the server with real NFS clients (Debian
# libnfs-utils), the README's commands as written, a clippy check that the
# client crates index nothing, and a short run of every fuzz target.
#
# Installs what it needs on a Debian machine (as root): libnfs-utils for the
# real-client tests, NFS-Ganesha and rpcbind for the interop stage (the nfsx
# client and `nfsx bench` against a server that shares no code with nfsx),
# and cargo-fuzz for the fuzz targets.
#   CEPH=0           skips the CephFS stage (a one-machine Ceph cluster from
#                    Debian's packages, scripts/ceph.sh, installed by it)
#   GANESHA=0        skips the interop stage
#   FUZZ_SECONDS=N   seconds per fuzz target (default 20; 0 skips fuzzing)
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v nfs-cp >/dev/null 2>&1 || need_apt+=(libnfs-utils)
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

echo "== cargo test (release: the integration tests move a 1 GiB file)"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
cargo test --workspace --release 2>&1 | tee "$log"

# The README's commands, as written (scripts/readme-check.py): the serve
# command of the set-up section, every `nfsx serve`/`nfs-*` block on free
# ports, every `nfsx bench` line checked with --dry-run. After the cargo
# tests, which built target/release/nfsx.
echo "== README commands"
readme_rc=0
python3 scripts/readme-check.py 2>&1 | tee -a "$log" || readme_rc=$?

# The CephFS backend against a real cluster. The cargo tests above ran its
# tests without one (each says "skipped"); here they run with it.
if [[ ${CEPH:-1} != 0 ]]; then
  echo "== CephFS backend against a one-machine Ceph cluster (scripts/ceph.sh)"
  if conf=$(scripts/ceph.sh start); then
    trap 'scripts/ceph.sh stop >/dev/null 2>&1 || true; rm -f "$log"' EXIT
    export NFSX_CEPH_CONF=${conf#CEPH_CONF=}
    cargo test --release -p vfs-ceph --test conformance 2>&1 | tee -a "$log"
    cargo test --release -p nfsx --test ceph 2>&1 | tee -a "$log"
    # Kills and restarts the MDS: alone, after every other test of the cluster.
    cargo test --release -p nfsx --test ceph -- --ignored --test-threads=1 2>&1 | tee -a "$log"
    unset NFSX_CEPH_CONF
    scripts/ceph.sh stop
    trap 'rm -f "$log"' EXIT
    echo "== two nfsx heads in network namespaces over one cluster (scripts/heads.sh)"
    if heads=$(scripts/heads.sh start 2); then
      trap 'scripts/heads.sh stop >/dev/null 2>&1 || true; rm -f "$log"' EXIT
      NFSX_HEADS=$(sed -n 's/^HEADS=//p' <<<"$heads") \
        cargo test --release -p nfsx --test ceph -- --test-threads=1 heads_serve address_takeover nfs4_clients_reclaim a_crashed_head 2>&1 | tee -a "$log"
      scripts/heads.sh stop
      trap 'rm -f "$log"' EXIT
    else
      echo "== the heads could not start (reason above): the multi-head test was NOT run"
    fi
  else
    echo "== Ceph could not start on this machine (reason above): the CephFS tests were NOT run against a cluster"
  fi
fi

# Ganesha needs rpcbind on port 111, which the cargo tests above use for
# nfsx's own portmapper, so this stage runs after them, never beside them.
if [[ ${GANESHA:-1} != 0 ]]; then
  echo "== interop with NFS-Ganesha: client and bench tests marked ignored above"
  scripts/ganesha.sh start
  trap 'scripts/ganesha.sh stop >/dev/null 2>&1 || true; rm -f "$log"' EXIT
  cargo test --release -p client --test against_ganesha -- --ignored 2>&1 | tee -a "$log"
  cargo test --release -p nfsx --test bench_ganesha -- --ignored 2>&1 | tee -a "$log"
  scripts/ganesha.sh stop
fi
passed=$(grep -E '^test result:' "$log" | awk '{s+=$4} END {print s+0}')
failed=$(grep -E '^test result:' "$log" | awk '{s+=$6} END {print s+0}')
readme_passed=$(sed -n 's/^readme: \([0-9]*\) passed.*/\1/p' "$log" | tail -1)
readme_failed=$(sed -n 's/^readme: [0-9]* passed, \([0-9]*\) failed.*/\1/p' "$log" | tail -1)
passed=$((passed + ${readme_passed:-0}))
failed=$((failed + ${readme_failed:-0}))

FUZZ_SECONDS=${FUZZ_SECONDS:-20}
if [[ $FUZZ_SECONDS -gt 0 ]]; then
  echo "== fuzz targets, ${FUZZ_SECONDS}s each"
  scripts/fuzz.sh "$FUZZ_SECONDS"
fi

echo "tests: ${passed} passed, ${failed} failed"
if ((readme_rc != 0)); then
  echo "the README's commands do not work as written (see the FAIL lines above)" >&2
  exit 1
fi
