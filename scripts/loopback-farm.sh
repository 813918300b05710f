#!/usr/bin/env bash
# A farm of "boards" on this machine, reached over real SSH: one sshd per board on 127.0.0.1, each
# running the dynamically linked riscv64 runner (build/rvv-dynamic, or --runner) under qemu-user at
# VLEN 1024 -- the same setup as the farm tests, for trying `--farm` commands without a K3.
#   bash scripts/loopback-farm.sh up DIR [N]   # N boards (default 2): keys, sshd, DIR/farm.toml
#   bash scripts/loopback-farm.sh down DIR     # stops its sshd processes
# then e.g. `k3tune tune --farm DIR/farm.toml --tag qemu --objective instructions --op ...`.
# The board user is the current user (authorized by a key made here). Sessions of the sshd do not
# read ~/.bashrc (SetEnv SHLVL=1): a slow rc file would slow every board command.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
usage() { echo "usage: loopback-farm.sh up DIR [N] [--runner PATH] | down DIR" >&2; exit 2; }
[ $# -ge 2 ] || usage
cmd=$1 dir=$2
shift 2
case $cmd in
  down)
    for pidfile in "$dir"/sshd-*/sshd.pid; do
      [ -f "$pidfile" ] && kill "$(cat "$pidfile")" 2>/dev/null || true
    done
    echo "loopback-farm: stopped the boards of $dir"
    exit 0 ;;
  up) ;;
  *) usage ;;
esac
boards=2
runner=$root/build/rvv-dynamic/harness/runner/k3bench
while [ $# -gt 0 ]; do
  case $1 in
    --runner) runner=$2; shift 2 ;;
    [1-9]*) boards=$1; shift ;;
    *) usage ;;
  esac
done
[ -x "$runner" ] || { echo "loopback-farm: runner $runner missing (cmake --preset test-rvv-dynamic && cmake --build build/rvv-dynamic)" >&2; exit 1; }
command -v /usr/sbin/sshd >/dev/null || { echo "loopback-farm: /usr/sbin/sshd missing (scripts/setup.sh installs openssh-server)" >&2; exit 1; }
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
[ "$(id -u)" = 0 ] && mkdir -p /run/sshd
[ -f "$dir/user_ed25519" ] || ssh-keygen -q -t ed25519 -N "" -C loopback-farm-user -f "$dir/user_ed25519"
cp "$dir/user_ed25519.pub" "$dir/authorized_keys"
: >"$dir/known_hosts"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
{
  echo '[farm]'
  echo 'name = "loopback"'
  echo 'known_hosts = "known_hosts"'
  echo "control_dir = \"$dir/ctl\""
  echo
  echo '[defaults]'
  echo 'kind = "ssh"'
  echo 'host = "127.0.0.1"'
  echo "user = \"$(id -un)\""
  echo 'identity = "user_ed25519"'
  echo "runner = \"$runner\""
  echo 'variant = "rvv-dynamic"'
  echo 'tags = ["qemu", "vlen1024"]'
  echo 'exec_prefix = ["qemu-riscv64", "-L", "/usr/riscv64-linux-gnu", "-cpu", "rv64,v=true,vlen=1024,elen=64,vext_spec=v1.0"]'
} >"$dir/farm.toml"
for i in $(seq 1 "$boards"); do
  b=$dir/sshd-b$i
  mkdir -p "$b"
  [ -f "$b/host_ed25519" ] || ssh-keygen -q -t ed25519 -N "" -C loopback-farm-host -f "$b/host_ed25519"
  port=$(free_port)
  cat >"$b/sshd_config" <<EOF
Port $port
ListenAddress 127.0.0.1
HostKey $b/host_ed25519
PidFile $b/sshd.pid
AuthorizedKeysFile $dir/authorized_keys
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
MaxSessions 64
MaxStartups 64
LogLevel ERROR
SetEnv SHLVL=1
Subsystem sftp internal-sftp
EOF
  /usr/sbin/sshd -f "$b/sshd_config" -E "$b/sshd.log"
  echo "[127.0.0.1]:$port $(cut -d' ' -f1-2 "$b/host_ed25519.pub")" >>"$dir/known_hosts"
  printf '\n[boards.b%d]\nport = %d\nwork_dir = "%s/board-b%d"\n' "$i" "$port" "$dir" "$i" >>"$dir/farm.toml"
done
echo "loopback-farm: $boards boards up; farm file $dir/farm.toml (stop: bash scripts/loopback-farm.sh down $dir)"
