#!/bin/sh
# RPC-with-TLS against clear text, same server, same client, alternating:
# 1 MiB sequential reads and writes through nfsx's client over NFSv4.2.
# Usage: bench/results/20261125-tls/run.sh [RUNS] [OUT]   (from the repository root,
# after `cargo build --release -p nfsx`; needs openssl for the test certificates)
set -eu
runs=${1:-5}
out=${2:-out/tls}
nfsx=${NFSX:-target/release/nfsx}
# tmpfs by default: the comparison is of the transport, not the disk
# (EXPORT=DIR to use another directory).
export_dir=${EXPORT:-/dev/shm/nfsx-tls-export}
mkdir -p "$out" "$export_dir"
pki=$out/pki
mkdir -p "$pki"
if [ ! -f "$pki/server.pem" ]; then
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 30 \
    -subj "/CN=nfsx bench CA" -keyout "$pki/ca.key" -out "$pki/ca.pem" 2>/dev/null
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=localhost" \
    -keyout "$pki/server.key" -out "$pki/server.csr" 2>/dev/null
  printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' > "$pki/ext.cnf"
  openssl x509 -req -in "$pki/server.csr" -CA "$pki/ca.pem" -CAkey "$pki/ca.key" -CAcreateserial \
    -days 30 -extfile "$pki/ext.cnf" -out "$pki/server.pem" 2>/dev/null
fi
printf 'portmap_port = 0\n[tls]\ncert_file = "%s"\nkey_file = "%s"\n' "$PWD/$pki/server.pem" "$PWD/$pki/server.key" > "$out/server.toml"
# No data cache and no delegations: every read and write crosses the wire.
printf '[read_cache]\nmax_bytes = 0\n[tls]\nca_file = "%s"\n' "$PWD/$pki/ca.pem" > "$out/client.toml"
"$nfsx" serve "$export_dir" --listen 127.0.0.1:2051 --state-dir "$out/state" \
  --config "$out/server.toml" --metrics 127.0.0.1:9101 > "$out/server.log" 2>&1 &
srv=$!
trap 'kill $srv' EXIT
sleep 1
S="nfs://127.0.0.1:2051$export_dir"
# Targets alternate within each run; reads dominate with --duration.
"$nfsx" bench data --mode seq-read,seq-write --io-size 1MiB --threads 1,4 --size 256MiB \
  --duration 5s --runs "$runs" --client-config "$out/client.toml" \
  --target "$S?version=4.2&delegations=0" --target "$S?version=4.2&delegations=0&tls=1" \
  --json "$out/data.json" --report "$out/report" | tee "$out/summary.txt"
curl -s http://127.0.0.1:9101/metrics | grep -E '^nfsx_tls_' > "$out/tls-metrics.txt" || true
