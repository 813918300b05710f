#!/usr/bin/env bash
# A private Slurm cluster on loopback for the Slurm farm tests (label slurm): Debian's munge,
# slurmctld and two slurmd (nodes b1 and b2, multiple-slurmd mode) run as the current user, with
# their configuration, keys, sockets, state, spools, logs and pid files all under DIR, on free
# unprivileged ports. Nothing under /etc, /run or /var is read or written.
#
#   slurm-cluster.sh start DIR [NODES]  writes DIR/slurm.conf, DIR/gres.conf and a munge key, starts
#                                       the daemons and waits until sinfo shows every node idle;
#                                       prints "SLURM_CONF=DIR/slurm.conf". NODES defaults to 2.
#   slurm-cluster.sh stop DIR           stops every daemon it started (by pid file).
#
# Each node offers one GRES k3 (GresTypes=k3, so `--gres=k3:1` takes the whole board) and the
# feature "k3"; the partition "boards" holds every node. The short timeouts (SlurmdTimeout=10,
# cred_expire=10 so a requeued job may start again after 10 s rather than 120 s) keep the tests quick.
set -euo pipefail

cmd=${1:?usage: slurm-cluster.sh start|stop DIR [NODES]}
dir=${2:?usage: slurm-cluster.sh start|stop DIR [NODES]}
nodes=${3:-2}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

# Every daemon at once: TERM, then KILL what is left after 5 s; munged last (the others use it).
stop_pidfiles() {
  local pids=() f pid
  for f in "$@"; do
    [ -f "$f" ] || continue
    pid=$(cat "$f" 2>/dev/null || true)
    rm -f "$f"
    [ -n "$pid" ] && kill "$pid" 2>/dev/null && pids+=("$pid")
  done
  for _ in $(seq 50); do
    local alive=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [ $alive -eq 0 ] && return 0
    sleep 0.1
  done
  for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
}

if [ "$cmd" = stop ]; then
  stop_pidfiles "$dir"/run/slurmd-*.pid "$dir/run/slurmctld.pid"
  stop_pidfiles "$dir/run/munged.pid"
  exit 0
fi
[ "$cmd" = start ] || { echo "slurm-cluster.sh: unknown command '$cmd'" >&2; exit 2; }

for tool in munged slurmctld slurmd sinfo; do
  command -v "$tool" >/dev/null || PATH=$PATH:/usr/sbin
  command -v "$tool" >/dev/null ||
    { echo "slurm-cluster.sh: $tool not found (scripts/setup.sh installs munge and Slurm)" >&2; exit 1; }
done

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null ||
    echo $((20000 + RANDOM % 20000))
}

user=$(id -un)
mkdir -p "$dir"/{munge,run,log,state}
chmod 700 "$dir/munge"
# munge: a fresh key; its own socket, pid, seed and log files under DIR.
[ -f "$dir/munge/munge.key" ] || { head -c 1024 /dev/urandom > "$dir/munge/munge.key"; chmod 400 "$dir/munge/munge.key"; }
socket="$dir/munge/munge.socket"
munged --socket="$socket" --key-file="$dir/munge/munge.key" --pid-file="$dir/run/munged.pid" \
  --seed-file="$dir/munge/munged.seed" --log-file="$dir/log/munged.log" --force

ctl_port=$(free_port)
ports=()
for i in $(seq "$nodes"); do ports+=("$(free_port)"); done
host=$(hostname -s)

{
  echo "ClusterName=k3test"
  echo "SlurmctldHost=$host(127.0.0.1)"
  echo "SlurmctldPort=$ctl_port"
  echo "SlurmUser=$user"
  echo "SlurmdUser=$user"
  echo "AuthType=auth/munge"
  echo "CredType=cred/munge"
  echo "AuthInfo=socket=$socket,cred_expire=10"
  echo "StateSaveLocation=$dir/state"
  echo "SlurmdSpoolDir=$dir/spool-%n"
  echo "SlurmctldPidFile=$dir/run/slurmctld.pid"
  echo "SlurmdPidFile=$dir/run/slurmd-%n.pid"
  echo "SlurmctldLogFile=$dir/log/slurmctld.log"
  echo "SlurmdLogFile=$dir/log/slurmd-%n.log"
  echo "SlurmctldDebug=info"
  echo "SlurmdDebug=info"
  echo "ProctrackType=proctrack/linuxproc"
  echo "TaskPlugin=task/none"
  echo "SchedulerType=sched/backfill"
  echo "SelectType=select/cons_tres"
  echo "SelectTypeParameters=CR_Core"
  echo "GresTypes=k3"
  echo "SlurmdTimeout=10"
  echo "SlurmctldTimeout=10"
  echo "MessageTimeout=5"
  echo "InactiveLimit=0"
  echo "MinJobAge=600"
  echo "KillWait=5"
  echo "ReturnToService=2"
  echo "JobRequeue=1"
  echo "MpiDefault=none"
  echo "JobAcctGatherType=jobacct_gather/none"
  echo "AccountingStorageType=accounting_storage/none"
  echo "SchedulerParameters=sched_interval=2"
  for i in $(seq "$nodes"); do
    echo "NodeName=b$i NodeHostname=localhost NodeAddr=127.0.0.1 Port=${ports[$((i - 1))]} CPUs=1 RealMemory=100 Gres=k3:1 Feature=k3 State=UNKNOWN"
  done
  echo "PartitionName=boards Nodes=b[1-$nodes] Default=YES MaxTime=INFINITE State=UP"
} > "$dir/slurm.conf"
{
  echo "NodeName=b[1-$nodes] Name=k3 Count=1"
} > "$dir/gres.conf"
export SLURM_CONF="$dir/slurm.conf"

slurmctld -f "$SLURM_CONF" -i
for i in $(seq "$nodes"); do
  mkdir -p "$dir/spool-b$i"
  slurmd -f "$SLURM_CONF" -N "b$i"
done

# Every node idle (slurmd registered), within 60 s.
for _ in $(seq 600); do
  states=$(sinfo -h -N -o '%N %T' 2>/dev/null | sort -u || true)
  idle=$(printf '%s\n' "$states" | grep -c ' idle$' || true)
  [ "$idle" -eq "$nodes" ] && { echo "SLURM_CONF=$SLURM_CONF"; exit 0; }
  sleep 0.1
done
echo "slurm-cluster.sh: nodes not idle after 60 s: $(sinfo -h -N -o '%N %T %E' 2>&1 | tr '\n' ';') (logs: $dir/log)" >&2
exit 1
