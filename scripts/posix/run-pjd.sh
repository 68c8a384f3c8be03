#!/usr/bin/env bash
# pjdfstest on a directory, as root, from inside DIR/pjd.test.
#
#   run-pjd.sh DIR [OUTDIR]
#
# Equivalent to `cd DIR && prove -r $PJD/tests`, but one .t file at a
# time (`prove -v FILE`), each bounded by $PJD_FILE_TIMEOUT seconds (default 180), so a
# hung call costs one file, not the run. Raw TAP goes to OUTDIR/pjd.raw; OUTDIR/pjd.summary
# has one line per .t file that did not pass ("FAIL dir/NN.t failed=1,2,3 (of N)" or
# TIMEOUT/ERROR) and the totals.
set -u
DIR=$(realpath "${1:?usage: run-pjd.sh DIR [OUTDIR]}")
OUT=$(realpath -m "${2:-./posix-results}")
PJD=${PJD:?PJD=/path/to/a built pjdfstest checkout}
FILE_TIMEOUT=${PJD_FILE_TIMEOUT:-180}
[[ $(id -u) -eq 0 ]] || { echo "pjdfstest needs root" >&2; exit 2; }
mkdir -p "$OUT"
RAW=$OUT/pjd.raw
SUMMARY=$OUT/pjd.summary
: >"$RAW"; : >"$SUMMARY"
WORK=$DIR/pjd.test
timeout -k 5 120 rm -rf "$WORK"
mkdir -p "$WORK" && cd "$WORK" || exit 1
echo "pjdfstest in $WORK ($(df -PT . | awk 'NR==2{print $2}')), raw TAP in $RAW"

T0=$(date +%s)
files=0 files_bad=0 sub_ok=0 sub_bad=0
while read -r t; do
  rel=${t#"$PJD"/tests/}
  files=$((files + 1))
  tap=$(timeout -k 5 "$FILE_TIMEOUT" prove -v "$t" 2>&1)
  rc=$?
  { echo "=== $rel rc=$rc"; echo "$tap"; } >>"$RAW"
  ok=$(grep -Ec '^ok [0-9]+' <<<"$tap")
  bad=$(grep -E '^not ok [0-9]+' <<<"$tap" | grep -vc '# TODO')
  plan=$(grep -Eo '^1\.\.[0-9]+' <<<"$tap" | head -1)
  sub_ok=$((sub_ok + ok)); sub_bad=$((sub_bad + bad))
  if [[ $rc -eq 124 || $rc -eq 137 ]]; then
    echo "TIMEOUT $rel (after ${FILE_TIMEOUT}s; ok=$ok not_ok=$bad so far, plan ${plan#1..})" >>"$SUMMARY"
    files_bad=$((files_bad + 1))
  elif [[ $bad -gt 0 ]]; then
    nums=$(grep -E '^not ok [0-9]+' <<<"$tap" | grep -v '# TODO' | awk '{print $3}' | paste -sd, -)
    echo "FAIL $rel failed=$nums (of ${plan#1..})" >>"$SUMMARY"
    files_bad=$((files_bad + 1))
  elif [[ $rc -ne 0 ]]; then
    # e.g. a plan/ran count mismatch after a crash of the script.
    echo "ERROR $rel rc=$rc ok=$ok plan=${plan#1..}: $(grep -E 'Parse errors|Bad plan|Dubious' <<<"$tap" | head -2 | tr '\n' ' ')" >>"$SUMMARY"
    files_bad=$((files_bad + 1))
  fi
  # A failed file may leave its n0.. entries behind; the next file wants an empty dir.
  cd / && timeout -k 5 60 rm -rf "$WORK"; mkdir -p "$WORK" && cd "$WORK" || break
done < <(find "$PJD/tests" -name '*.t' | sort)
cd / && timeout -k 5 120 rm -rf "$WORK"
secs=$(( $(date +%s) - T0 ))
echo "TOTAL files=$files files_failed=$files_bad subtests_ok=$sub_ok subtests_failed=$sub_bad secs=$secs" >>"$SUMMARY"
cat "$SUMMARY"
