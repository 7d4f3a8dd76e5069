#!/usr/bin/env bash
# A one-node Slurm cluster on this machine, from Debian's packages (slurmctld, slurmd, munge), to
# try the corpus array of docs/corpus-cluster.md and to test it (tests/slurm/check_slurm_corpus.sh).
#
# Usage: scripts/slurm_local.sh up|down|status
#   up      install the packages if missing (root: apt-get; otherwise they must be there), write a
#           slurm.conf and a munge key under the scratch dir, start munged, slurmctld, slurmd
#           directly (no systemd), wait until the node is idle
#   down    stop the three daemons (by their pid files) and remove the scratch dir
#   status  say whether it is up, and how to point sbatch/squeue at it
# Env: KCV_SLURM_DIR   scratch dir (default /tmp/kcv-slurm); everything lives there
#      KCV_SLURM_PORT  slurmctld's port (default 6817; slurmd takes the next one)
#      KCV_SLURM_NO_INSTALL=1  never apt-get: fail if the packages are missing (the test sets it)
# Then: export SLURM_CONF=$KCV_SLURM_DIR/slurm.conf   (printed by `up` and `status`)
#
# NOTES: the node is "localhost" with CPUs from nproc and a little memory; SelectType is
# cons_tres by core, ProctrackType linuxproc and TaskPlugin none, so no cgroups are needed; no
# accounting database (sacct is not available; squeue/scontrol are). The daemons run as the
# invoking user: as root, jobs run as whoever submits them; as another user, only that user's jobs.
set -euo pipefail
scratch="${KCV_SLURM_DIR:-/tmp/kcv-slurm}"
port="${KCV_SLURM_PORT:-6817}"
conf="$scratch/slurm.conf"

die() { echo "slurm_local: $*" >&2; exit 1; }

install_packages() {
  local packages=(slurmctld slurmd slurm-client munge) missing=() p
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  [ -z "${KCV_SLURM_NO_INSTALL:-}" ] || die "missing Debian packages ${missing[*]} (./scripts/setup.sh --slurm installs them)"
  [ "$(id -u)" -eq 0 ] || die "missing Debian packages ${missing[*]} (run as root, or: sudo apt-get install ${missing[*]})"
  command -v apt-get >/dev/null || die "missing ${missing[*]} and no apt-get"
  echo "slurm_local: installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

pidfile_alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

is_up() {
  pidfile_alive "$scratch/run/munged.pid" && pidfile_alive "$scratch/run/slurmctld.pid" &&
    pidfile_alive "$scratch/run/slurmd.pid"
}

write_conf() {
  local user cpus
  user="$(id -un)"
  cpus="$(nproc)"
  cat > "$conf" <<EOF
# Written by scripts/slurm_local.sh: a one-node cluster for trying and testing kcv's corpus array.
ClusterName=kcvlocal
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=$user
SlurmdUser=$user
AuthType=auth/munge
AuthInfo=socket=$scratch/run/munge.socket,cred_expire=10
CredType=cred/munge
StateSaveLocation=$scratch/state
SlurmdSpoolDir=$scratch/spool/%n
SlurmctldPidFile=$scratch/run/slurmctld.pid
SlurmdPidFile=$scratch/run/slurmd.pid
SlurmctldLogFile=$scratch/log/slurmctld.log
SlurmdLogFile=$scratch/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
SchedulerParameters=bf_interval=1
MpiDefault=none
ReturnToService=2
JobRequeue=1
MinJobAge=600
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
Waittime=0
NodeName=localhost NodeHostname=localhost NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=local Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF
}

up() {
  if is_up; then echo "slurm_local: already up ($conf)"; echo "export SLURM_CONF=$conf"; return 0; fi
  install_packages
  for b in munged slurmctld slurmd sbatch; do
    command -v "$b" >/dev/null || [ -x "/usr/sbin/$b" ] || die "no $b after installing the packages"
  done
  rm -rf "$scratch"
  mkdir -p "$scratch"/{run,state,spool,log,munge}
  chmod 700 "$scratch/munge"
  chmod 755 "$scratch" "$scratch/run"
  write_conf
  export SLURM_CONF="$conf"

  # munge: a fresh key, its own socket; munged insists on tight permissions on key and dirs.
  dd if=/dev/urandom of="$scratch/munge/munge.key" bs=1024 count=1 status=none
  chmod 400 "$scratch/munge/munge.key"
  /usr/sbin/munged --key-file="$scratch/munge/munge.key" --socket="$scratch/run/munge.socket" \
    --pid-file="$scratch/run/munged.pid" --log-file="$scratch/log/munged.log" \
    --seed-file="$scratch/munge/munged.seed" --force ||
    die "munged did not start (see $scratch/log/munged.log)"
  for _ in $(seq 50); do [ -S "$scratch/run/munge.socket" ] && break; sleep 0.1; done
  munge -n -S "$scratch/run/munge.socket" | unmunge -S "$scratch/run/munge.socket" >/dev/null ||
    die "munge round trip failed (see $scratch/log/munged.log)"

  /usr/sbin/slurmctld -f "$conf" -i || die "slurmctld did not start (see $scratch/log/slurmctld.log)"
  /usr/sbin/slurmd -f "$conf" -N localhost || die "slurmd did not start (see $scratch/log/slurmd.log)"
  local state=""
  for _ in $(seq 60); do
    state="$(sinfo -h -n localhost -o %T 2>/dev/null || true)"
    [ "$state" = "idle" ] && break
    sleep 0.5
  done
  [ "$state" = "idle" ] || die "node localhost is '${state:-unreachable}', not idle (see $scratch/log/)"
  echo "slurm_local: up, one node 'localhost' with $(nproc) CPUs, partition 'local', in $scratch"
  echo "export SLURM_CONF=$conf"
}

stop_pidfile() {
  local f="$1" pid
  [ -f "$f" ] || return 0
  pid="$(cat "$f")"
  kill -0 "$pid" 2>/dev/null || return 0
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
}

down() {
  [ -d "$scratch" ] || { echo "slurm_local: nothing in $scratch"; return 0; }
  # Jobs first, so that slurmd does not leave their processes behind.
  if pidfile_alive "$scratch/run/slurmctld.pid"; then
    SLURM_CONF="$conf" scancel --user="$(id -un)" 2>/dev/null || true
    sleep 1
  fi
  stop_pidfile "$scratch/run/slurmd.pid"
  stop_pidfile "$scratch/run/slurmctld.pid"
  stop_pidfile "$scratch/run/munged.pid"
  rm -rf "$scratch"
  echo "slurm_local: down, $scratch removed"
}

status() {
  if is_up; then
    echo "slurm_local: up ($conf)"
    SLURM_CONF="$conf" sinfo || true
    echo "export SLURM_CONF=$conf"
  else
    echo "slurm_local: down"
    return 1
  fi
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) status ;;
  *) echo "usage: $0 up|down|status" >&2; exit 2 ;;
esac
