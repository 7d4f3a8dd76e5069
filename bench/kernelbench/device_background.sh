#!/usr/bin/env bash
# A device job longer than one device command (10 minutes): start it in a session of its own,
# which the device keeps running between commands while the machine stays held (root; see the
# device README), and wait for it in the next command.
# Usage (repo root, GPU machine):
#   bench/kernelbench/device_background.sh start NAME WAIT_S CMD [ARGS...]
#   bench/kernelbench/device_background.sh wait NAME WAIT_S
# start runs CMD under setsid with its output in /tmp/NAME.log, then waits as `wait` does. wait
# returns when the job has ended (printing its exit status) or after WAIT_S seconds (printing
# "still running"); either way it prints the log's last lines. The next command must come
# within the device's idle release (30 s), or the machine, and the job, go back; and it must not
# carry a path the job writes under (a carried path replaces the device's copy: session 11 lost a
# corpus run's directory under bench/kernelbench/data that way).
set -uo pipefail
what="${1:?start|wait}"; name="${2:?NAME}"; wait_s="${3:?WAIT_S}"; shift 3
log="/tmp/$name.log"; pidf="/tmp/$name.pid"; rcf="/tmp/$name.rc"
if [ "$what" = start ]; then
  [ $# -gt 0 ] || { echo "device_background: start needs a command" >&2; exit 2; }
  rm -f "$rcf"
  setsid bash -c '"$@" > "'"$log"'" 2>&1; echo $? > "'"$rcf"'"' job "$@" < /dev/null &
  echo $! > "$pidf"
  echo "started $name (pid $(cat "$pidf")), log $log"
elif [ "$what" != wait ]; then
  echo "device_background: start or wait, not '$what'" >&2; exit 2
fi
t0=$SECONDS
while [ ! -e "$rcf" ] && [ $((SECONDS - t0)) -lt "$wait_s" ]; do sleep 2; done
if [ -e "$rcf" ]; then echo "$name ended: rc=$(cat "$rcf")"; else echo "$name still running after ${wait_s}s"; fi
tail -25 "$log" 2>/dev/null
