#!/usr/bin/env bash
# Connectathon (cthon04) on an already-mounted directory, one test program at a time,
# so one failure does not stop the rest (cthon04's own runtests stops at the first).
#
#   run-cthon.sh DIR [OUTDIR]
#
# Runs in DIR/cthon.test (NFSTESTDIR): basic (test1..test9 with -t, as runtests -b -t),
# general (the six timed steps of general/runtests.wrk, in a copy of general/ in DIR),
# special (every program of special/runtests.wrk with the same arguments, in a copy of
# special/ in DIR), lock (tlocklfs, tlock64 with -r, as lock/runtests -t).
# Each program's output goes to OUTDIR/cthon/<group>-<name>.log; one line per program
# "<group> <name> PASS|FAIL|TIMEOUT rc=N secs=S" to stdout and OUTDIR/cthon.summary.
# Every program is bounded by $CTHON_STEP_TIMEOUT seconds (default 600).
set -u
DIR=$(realpath "${1:?usage: run-cthon.sh DIR [OUTDIR]}")
OUT=$(realpath -m "${2:-./posix-results}")
CTHON=${CTHON:?CTHON=/path/to/a built cthon04 checkout}
STEP_TIMEOUT=${CTHON_STEP_TIMEOUT:-600}
GROUPS_TO_RUN=${CTHON_GROUPS:-basic general special lock}
mkdir -p "$OUT/cthon"
SUMMARY=$OUT/cthon.summary
: >"$SUMMARY"
export NFSTESTDIR=$DIR/cthon.test

# tests.init gives CC, CFLAGS, LIBS, PATH (with "."), LOCKTESTS.
# shellcheck disable=SC1091
. "$CTHON/tests.init"
export PATH CC CFLAGS LIBS

record() {  # group name rc secs
  local verdict=PASS
  [[ $3 -ne 0 ]] && verdict=FAIL
  [[ $3 -eq 124 || $3 -eq 137 ]] && verdict=TIMEOUT
  printf '%-8s %-10s %-7s rc=%s secs=%s\n' "$1" "$2" "$verdict" "$3" "$4" | tee -a "$SUMMARY"
}

# run GROUP NAME CMD...: CMD runs in the current directory, bounded, logged.
run() {
  local group=$1 name=$2; shift 2
  local log=$OUT/cthon/$group-$name.log t0 rc
  t0=$(date +%s)
  echo "+ (cd $PWD; $*)" >"$log"
  timeout -k 10 "$STEP_TIMEOUT" "$@" >>"$log" 2>&1 </dev/null
  rc=$?
  record "$group" "$name" "$rc" "$(( $(date +%s) - t0 ))"
}

# Like run, but for the shell snippets of general/runtests.wrk (5 timed repetitions,
# fail if any repetition fails, then ./stat over the collected times).
run_sh() { run "$1" "$2" bash -c "set -e; $3"; }

# A hung mount must not hang the run.
clean() { timeout -k 5 120 rm -rf "$NFSTESTDIR"; }

basic() {
  clean; mkdir -p "$NFSTESTDIR"
  cd "$CTHON/basic" || return
  local t
  for t in test1 test2 test3 test4 test5 test6 test7 test8 test9; do
    run basic "$t" "./$t" -t
  done
  clean
}

general() {
  clean; mkdir -p "$NFSTESTDIR"
  (cd "$CTHON/general" && make -s copy DESTDIR="$NFSTESTDIR") >"$OUT/cthon/general-copy.log" 2>&1 \
    || { record general copy 1 0; return; }
  cd "$NFSTESTDIR" || return
  chmod 777 large4.sh mkdummy rmdummy
  umask 0
  export CFLAGS="$CFLAGS -w"
  local T=/usr/bin/time r5='for i in 1 2 3 4 5; do'
  run_sh general smcomp   "rm -f smcomp.time; $r5 $T \$CC \$CFLAGS -o stat stat.c -lm 2>>smcomp.time; done; ./stat smcomp.time"
  run_sh general tbl      "rm -f tbl.time; $r5 $T tbl nroff.in >nroff.tbl 2>>tbl.time; done; grep -Ev '^tbl:.*\$' <tbl.time >tbl.new; mv -f tbl.new tbl.time; ./stat tbl.time"
  run_sh general nroff    "rm -f nroff.time; $r5 $T nroff <nroff.tbl >nroff.out 2>>nroff.time; done; rm nroff.out nroff.tbl; ./stat nroff.time"
  run_sh general lrgcomp  "rm -f lrgcomp.time; $r5 $T \$CC \$CFLAGS -o large large.c 2>>lrgcomp.time; done; rm large; ./stat lrgcomp.time"
  run_sh general 4lrgcomp "rm -f 4lrg.time; $r5 $T ./large4.sh 2>>4lrg.time; done; ./stat 4lrg.time"
  run_sh general makefile "./mkdummy; rm -f makefile.time; $r5 $T make -e -f makefile.tst >/dev/null 2>>makefile.time; done; ./rmdummy; grep -iv warning: makefile.time | grep -v 'make: ' >makefile.time2; mv makefile.time2 makefile.time; ./stat makefile.time"
  umask 022
  cd / && clean
}

special() {
  clean; mkdir -p "$NFSTESTDIR"
  (cd "$CTHON/special" && make -s copy DESTDIR="$NFSTESTDIR") >"$OUT/cthon/special-copy.log" 2>&1 \
    || { record special copy 1 0; return; }
  cd "$NFSTESTDIR" || return
  umask 0
  TMPDIR= run special op_unlk ./op_unlk
  TMPDIR= run special op_ren ./op_ren
  TMPDIR= run special op_chmod ./op_chmod
  run special dupreq ./dupreq 100 testfile
  run special excltest ./excltest
  run special negseek ./negseek testfile
  run special rename ./rename 100
  run special truncate ./truncate
  run special holey ./holey
  run special nfsidem ./nfsidem 50 testdir
  run special rewind ./rewind
  run special telldir ./telldir
  run special freesp ./freesp
  run special bigfile ./bigfile -s 30 bigfile$$
  run special bigfile2 ./bigfile2 bigfile$$
  umask 022
  cd / && clean
}

lock() {
  clean; mkdir -p "$NFSTESTDIR"
  cd "$CTHON/lock" || return
  umask 0
  local t
  for t in $LOCKTESTS; do
    run lock "$t" "./$t" -r "$NFSTESTDIR"
  done
  umask 022
  clean
}

echo "cthon04 in $NFSTESTDIR ($(df -PT "$DIR" | awk 'NR==2{print $2}')), logs in $OUT/cthon"
T0=$(date +%s)
for g in $GROUPS_TO_RUN; do "$g"; done
echo "cthon04 total secs=$(( $(date +%s) - T0 ))" | tee -a "$SUMMARY"
