#!/usr/bin/env bash
# A three-member etcd cluster on 127.0.0.1 for Strata's etcd tests and benchmarks.
#
#   scripts/etcd-cluster.sh start          start the members that are not running (new cluster
#                                          or existing data), wait until all three are healthy
#   scripts/etcd-cluster.sh stop [N]       stop every member, or member N (SIGTERM; data kept)
#   scripts/etcd-cluster.sh clean          stop, then delete the data directories
#   scripts/etcd-cluster.sh kill N         SIGKILL member N (1..3)
#   scripts/etcd-cluster.sh restart N      start member N again (killing it first if it runs)
#   scripts/etcd-cluster.sh pause N        SIGSTOP member N
#   scripts/etcd-cluster.sh resume N       SIGCONT member N
#   scripts/etcd-cluster.sh endpoints      print HOST:PORT,HOST:PORT,HOST:PORT
#   scripts/etcd-cluster.sh leader         print the number of the member that leads now
#   scripts/etcd-cluster.sh status         one line per member
#
# Environment:
#   STRATA_ETCD_DIR    where data directories, logs and pid files go
#                      (default ${TMPDIR:-/tmp}/strata-etcd-cluster)
#   STRATA_ETCD_PORT   base port (default 32379): member N serves clients on BASE+N-1 and
#                      talks to its peers on BASE+10+N-1
#   STRATA_ETCD_FLAGS  extra flags for every member, e.g. "--max-txn-ops 256"
set -euo pipefail

DIR=${STRATA_ETCD_DIR:-${TMPDIR:-/tmp}/strata-etcd-cluster}
BASE=${STRATA_ETCD_PORT:-32379}
EXTRA=${STRATA_ETCD_FLAGS:-}
ETCD=${ETCD_BIN:-etcd}
ETCDCTL=${ETCDCTL_BIN:-etcdctl}
export ETCDCTL_API=3

die() { echo "etcd-cluster: $*" >&2; exit 1; }

client_port() { echo $((BASE + $1 - 1)); }
peer_port() { echo $((BASE + 10 + $1 - 1)); }
endpoint() { echo "127.0.0.1:$(client_port "$1")"; }
endpoints() { echo "$(endpoint 1),$(endpoint 2),$(endpoint 3)"; }
pidfile() { echo "$DIR/m$1.pid"; }

member_pid() {
  local f
  f=$(pidfile "$1")
  [[ -f $f ]] || return 1
  local pid
  pid=$(cat "$f")
  kill -0 "$pid" 2>/dev/null || return 1
  # Guard against a recycled pid: it must still be our etcd.
  grep -q -- "--name" "/proc/$pid/cmdline" 2>/dev/null || return 1
  echo "$pid"
}

check_n() {
  [[ ${1:-} =~ ^[123]$ ]] || die "member number must be 1, 2 or 3 (got '${1:-}')"
}

start_member() {
  local n=$1
  if member_pid "$n" >/dev/null; then return 0; fi
  command -v "$ETCD" >/dev/null || die "etcd is not installed (apt-get install etcd-server)"
  mkdir -p "$DIR"
  local cluster="m1=http://127.0.0.1:$(peer_port 1),m2=http://127.0.0.1:$(peer_port 2),m3=http://127.0.0.1:$(peer_port 3)"
  # shellcheck disable=SC2086
  setsid "$ETCD" --name "m$n" --data-dir "$DIR/m$n.data" \
    --listen-client-urls "http://$(endpoint "$n")" --advertise-client-urls "http://$(endpoint "$n")" \
    --listen-peer-urls "http://127.0.0.1:$(peer_port "$n")" \
    --initial-advertise-peer-urls "http://127.0.0.1:$(peer_port "$n")" \
    --initial-cluster "$cluster" --initial-cluster-state new \
    --initial-cluster-token "strata-$BASE" \
    --logger zap --log-outputs "$DIR/m$n.log" $EXTRA \
    </dev/null >>"$DIR/m$n.out" 2>&1 &
  echo $! >"$(pidfile "$n")"
}

healthy() {
  "$ETCDCTL" --endpoints="$(endpoint "$1")" --command-timeout=2s endpoint health >/dev/null 2>&1
}

wait_healthy() {
  local deadline=$((SECONDS + ${STRATA_ETCD_WAIT:-60}))
  for n in "$@"; do
    until healthy "$n"; do
      member_pid "$n" >/dev/null || die "member $n exited; see $DIR/m$n.log"
      ((SECONDS < deadline)) || die "member $n not healthy after ${STRATA_ETCD_WAIT:-60}s; see $DIR/m$n.log"
      sleep 0.2
    done
  done
}

stop_member() {
  local n=$1 pid
  pid=$(member_pid "$n") || { rm -f "$(pidfile "$n")"; return 0; }
  kill -CONT "$pid" 2>/dev/null || true
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 100); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$(pidfile "$n")"
}

signal_member() {
  local n=$1 sig=$2 pid
  pid=$(member_pid "$n") || die "member $n is not running"
  kill "-$sig" "$pid"
}

cmd=${1:-}
case $cmd in
  start)
    for n in 1 2 3; do start_member "$n"; done
    wait_healthy 1 2 3
    echo "etcd cluster up: $(endpoints) (data in $DIR)"
    ;;
  stop)
    if [[ -n ${2:-} ]]; then
      check_n "$2"
      stop_member "$2"
    else
      for n in 1 2 3; do stop_member "$n"; done
    fi
    ;;
  clean)
    for n in 1 2 3; do stop_member "$n"; done
    rm -rf "$DIR"
    ;;
  kill)
    check_n "${2:-}"
    signal_member "$2" KILL
    for _ in $(seq 1 50); do member_pid "$2" >/dev/null || break; sleep 0.1; done
    rm -f "$(pidfile "$2")"
    ;;
  restart)
    check_n "${2:-}"
    if member_pid "$2" >/dev/null; then stop_member "$2"; fi
    start_member "$2"
    wait_healthy "$2"
    ;;
  pause)
    check_n "${2:-}"
    signal_member "$2" STOP
    ;;
  resume)
    check_n "${2:-}"
    signal_member "$2" CONT
    ;;
  endpoints)
    endpoints
    ;;
  leader)
    for n in 1 2 3; do
      member_pid "$n" >/dev/null || continue
      line=$("$ETCDCTL" --endpoints="$(endpoint "$n")" --command-timeout=2s endpoint status -w simple 2>/dev/null) || continue
      # simple output: ENDPOINT, ID, VERSION, DB SIZE, IS LEADER, IS LEARNER, ...
      if [[ $(echo "$line" | awk -F', ' '{print $5}') == true ]]; then
        echo "$n"
        exit 0
      fi
    done
    die "no member reports itself as leader"
    ;;
  status)
    for n in 1 2 3; do
      if pid=$(member_pid "$n"); then
        state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null || echo '?')
        echo "m$n $(endpoint "$n") pid $pid state $state"
      else
        echo "m$n $(endpoint "$n") down"
      fi
    done
    ;;
  *)
    sed -n '2,21p' "$0" >&2
    exit 2
    ;;
esac
