#!/usr/bin/env bash
# Installs the Debian packages nfsx needs to build, when they are missing:
# the MIT Kerberos GSS-API headers and library (libkrb5-dev), which the
# libgssapi binding links against, and libclang (libclang-dev), with which
# its build reads the headers. The Kerberos support (RPCSEC_GSS) is always
# built; a server whose exports name no Kerberos flavor never uses it.
# Needs root to install; prints what is missing otherwise.
set -euo pipefail
need=()
dpkg -s libkrb5-dev >/dev/null 2>&1 || need+=(libkrb5-dev)
dpkg -s libclang-dev >/dev/null 2>&1 || need+=(libclang-dev)
command -v pkg-config >/dev/null 2>&1 || need+=(pkg-config)
((${#need[@]})) || exit 0
if [[ $(id -u) -ne 0 ]]; then
  echo "nfsx needs these Debian packages to build: ${need[*]} (run as root or install them)" >&2
  exit 1
fi
echo "== installing ${need[*]} (to build nfsx)" >&2
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
