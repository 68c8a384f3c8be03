#!/bin/bash
B=${NFSX:-target/release/nfsx}
N='nfs://127.0.0.1:2050/work/bench-out/nx?version=3'
G='nfs://127.0.0.1/export?version=3'
# run from the repository root after: cargo build --release; nfsx serve DIR --listen 127.0.0.1:2050 (DIR=/work/bench-out/nx here); scripts/ganesha.sh start
$B bench seqwrite --target $N --target $G --size 5MiB,32MiB,128MiB,512MiB --runs 3 --quiet --json seqwrite-sweep.json --report seqwrite-sweep > seqwrite-sweep.txt 2>&1
$B bench seqwrite --target $N --target $G --size 128MiB --runs 3 --quiet --json trace.json --report trace > trace.txt 2>&1
$B bench metadata --op read-small,create,list --files 2000 --threads 1,16 --target $N --target $G --runs 3 --quiet --json metadata.json --report metadata > metadata.txt 2>&1

