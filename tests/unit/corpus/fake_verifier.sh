#!/bin/sh
# A stand-in for `kcv verify --kernelbench P S --json J ...` in corpus tests. What it does comes from
# the solution's first line, "# fake: MODE [SECONDS]" (no such line: pass):
#   pass | fail  write a kcv.report/1 with verdict PASS / FAIL, exit 0 / 1 (fail: numerics fails in
#                the problem's own calling convention)
#   libfail      a FAIL report whose layout alone fails, only as a library op ("convention": "library")
#   crashall     a FAIL report whose every gate CRASHed
#   setup        say "kcv: <reason>" on stderr, exit 2
#   segv         kill itself with SIGSEGV
#   term         kill itself with SIGTERM (not a stop of the run: a crash)
#   exit3        exit 3
#   nojson       exit 0 without writing the report
#   badjson      write a report that is not JSON, exit 1
#   hang         start a `sleep 1000` in a session of its own (pid in S.pid), then sleep 1000
#   slowonce     the first time (leaves S.slow) sleep 1000, past any pair timeout; pass after
#   spin         a child process of its own keeps a core busy for 1-2 s (waited for); pass
#   oom          a FAIL report whose numerics CRASHed out of GPU memory (out_of_memory: true), exit 1
#   calltimeout  a FAIL report whose numerics stopped at the per-call timeout (TIMEOUT), exit 1; each run
#                appends a line to S.runs
#   passwhen F N pass once the file F (relative to S's directory) has N lines (at most 30 s): a pair that
#                runs until another pair has run N times (mode, F and N are the line's three words)
#   calltimeoutonce  calltimeout the first time (leaves S.slow), pass after
#   maxtime      a FAIL report whose numerics was stopped by the overall limit (TIMEOUT flagged stopped_at_max_time), exit 1
#   oomonce      oom the first time (leaves S.oom), pass after
#   killonce     the first time (leaves S.oom) kill itself with SIGKILL, as the kernel's OOM killer would; pass after
#   oomsetup     the first time (leaves S.oom) say "kcv: ... CUDA out of memory ..." and exit 2; pass after
#   oombeside N  after SECONDS, oom if more than N other verifiers are running (FAKE_EVENT_LOG's
#                starts less its ends; then 0.3 s more before it exits), else pass: a pair that fits
#                beside N others (mode and N are the line's first two words, SECONDS its third)
# SECONDS: sleep that long first. FAKE_ARGS_LOG: append the arguments to that file. FAKE_ENV_LOG:
# append "KCV_THREADS=<its value>" to that file. FAKE_SETTINGS_LOG: append "KCV_MAX_ELEMENTS=<value>
# KCV_POOL=<value, or unset>" to that file. FAKE_PCH_LOG: append "<solution> <KCV_TORCH_PCH>"
# to that file. FAKE_TMP_LOG: append "<solution> <TMPDIR>" to that file and leave a file in TMPDIR.
# FAKE_EVENT_LOG: append "start S" first and
# "end S" at exit (killonce writes it just before its SIGKILL; segv and hang write none).
json=""; sol=""; prob=""
[ -n "$FAKE_ARGS_LOG" ] && echo "$*" >> "$FAKE_ARGS_LOG"
[ -n "$FAKE_ENV_LOG" ] && echo "KCV_THREADS=$KCV_THREADS" >> "$FAKE_ENV_LOG"
[ -n "$FAKE_SETTINGS_LOG" ] && echo "KCV_MAX_ELEMENTS=$KCV_MAX_ELEMENTS KCV_POOL=${KCV_POOL-unset}" >> "$FAKE_SETTINGS_LOG"
while [ $# -gt 0 ]; do
  case "$1" in
    --kernelbench) prob="$2"; sol="$3"; shift 3 ;;
    --json) json="$2"; shift 2 ;;
    *) shift ;;
  esac
done
[ -n "$FAKE_PCH_LOG" ] && echo "$sol $KCV_TORCH_PCH" >> "$FAKE_PCH_LOG"
if [ -n "$FAKE_TMP_LOG" ]; then echo "$sol $TMPDIR" >> "$FAKE_TMP_LOG"; echo left > "$TMPDIR/left-behind"; fi
if [ -n "$FAKE_EVENT_LOG" ]; then
  echo "start $sol" >> "$FAKE_EVENT_LOG"
  trap 'echo "end $sol" >> "$FAKE_EVENT_LOG"' EXIT
fi
set -- $(sed -n '1s/^# fake: //p' "$sol")
mode="${1:-pass}"; secs="${2:-0}"
if [ "$mode" = oombeside ]; then fits="$2"; secs="${3:-0}"; fi
if [ "$mode" = passwhen ]; then wait_file="$(dirname "$sol")/$2"; wait_n="$3"; secs=0; fi
[ "$secs" != 0 ] && sleep "$secs"
report() {  # $1 verdict, $2 numerics verdict, $3 numerics' out_of_memory (default false), $4 layout verdict,
            # $5 numerics' evidence
  nconv=""; lconv=""
  [ "$2" != PASS ] && nconv=',"convention":"own"'
  [ "${4:-PASS}" != PASS ] && lconv=',"convention":"library"'
  cat > "$json" <<JSON
{"schema":"kcv.report/1","op":"kernelbench","candidate":"$sol","backend":"cpu","seed":"7","verdict":"$1",
 "gates":[{"id":"numerics","verdict":"$2","tolerance_independent":false,"cases":3,"seconds":0.1,"evidence":"${5:-}","seed":"1","failing_case":-1,"out_of_memory":${3:-false}$nconv},
          {"id":"layout","verdict":"${4:-PASS}","tolerance_independent":true,"cases":2,"seconds":0.1,"evidence":"","seed":"2","failing_case":-1$lconv}],
 "kernelbench":{"compile_seconds":0.5,"baseline":{"verdict":"pass","trials":5,"atol":0.01,"rtol":0.01,"max_abs_diff":0.0,"detail":""}}}
JSON
}
# calltimeout's evidence; the log it quotes names --max-time, as a candidate's output can: the report's
# stopped_at_max_time flag, not the text, says whether the run's own limit stopped it
slow_call="case 0 (scaled 1e4): worker no progress for 10 s in call 0 [log: usage: --max-time]"
case "$mode" in
  pass) report PASS PASS; exit 0 ;;
  fail) report FAIL FAIL; exit 1 ;;
  libfail) report FAIL PASS false FAIL; exit 1 ;;
  crashall) report FAIL CRASH false CRASH; exit 1 ;;
  setup) echo "compiling..." >&2; echo "kcv: solution does not build: error: expected ';'" >&2; echo >&2; exit 2 ;;
  segv) ulimit -c 0; kill -SEGV $$ ;;
  term) trap - TERM; kill -TERM $$ ;;
  exit3) echo "something odd" >&2; exit 3 ;;
  nojson) exit 0 ;;
  badjson) echo "{not json" > "$json"; exit 1 ;;
  oom) report FAIL CRASH true; exit 1 ;;
  calltimeout) echo run >> "$sol.runs"; report FAIL TIMEOUT false PASS "$slow_call"; exit 1 ;;
  passwhen) i=0; while [ "$(cat "$wait_file" 2>/dev/null | wc -l)" -lt "$wait_n" ] && [ $i -lt 600 ]; do
      sleep 0.05; i=$((i + 1)); done; report PASS PASS; exit 0 ;;
  calltimeoutonce) [ -e "$sol.slow" ] && { report PASS PASS; exit 0; }; : > "$sol.slow"
    report FAIL TIMEOUT false PASS "$slow_call"; exit 1 ;;
  maxtime) report FAIL TIMEOUT false PASS "case 0: was stopped: the overall limit (--max-time 5 s) ran out"
    sed -i 's/"out_of_memory":false/"out_of_memory":false,"stopped_at_max_time":true/' "$json"; exit 1 ;;
  oombeside) others=$(( $(grep -c '^start ' "$FAKE_EVENT_LOG") - $(grep -c '^end ' "$FAKE_EVENT_LOG") - 1 ))
    # out of memory: still there 0.3 s later, so the others that started with it count it too
    [ "$others" -gt "$fits" ] && { sleep 0.3; report FAIL CRASH true; exit 1; }; report PASS PASS; exit 0 ;;
  oomonce) [ -e "$sol.oom" ] && { report PASS PASS; exit 0; }; : > "$sol.oom"; report FAIL CRASH true; exit 1 ;;
  oomsetup) [ -e "$sol.oom" ] && { report PASS PASS; exit 0; }; : > "$sol.oom"
    echo "kcv: the reference failed at n=4: OutOfMemoryError: CUDA out of memory. Tried to allocate 1 GiB." >&2; exit 2 ;;
  killonce) [ -e "$sol.oom" ] && { report PASS PASS; exit 0; }; : > "$sol.oom"
    [ -n "$FAKE_EVENT_LOG" ] && echo "end $sol" >> "$FAKE_EVENT_LOG"; kill -KILL $$ ;;
  hang) setsid sleep 1000 & echo $! > "$sol.pid"; sleep 1000 ;;
  slowonce) [ -e "$sol.slow" ] && { report PASS PASS; exit 0; }; : > "$sol.slow"; sleep 1000 ;;
  spin) sh -c 'n=0; end=$(($(date +%s) + 2)); while [ "$(date +%s)" -lt "$end" ] || [ $n -lt 1 ]; do
          i=0; while [ $i -lt 20000 ]; do i=$((i + 1)); done; n=$((n + 1)); done'; report PASS PASS; exit 0 ;;
esac
exit 0
