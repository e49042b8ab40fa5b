# Shared by scripts/cluster-up and scripts/cluster-down (sourced, not run).
# A cluster lives in one directory, ${DOCRENDER_CLUSTER_DIR:-<repo>/.cluster}:
#   state       choices made once (namespace, ports, MinIO keys): key=value
#   extra.env   the caller's DOCRENDER_* settings at creation, reused on every restart
#   bin/        the gateway and worker binaries, copied from bin/ at creation
#   pids/NAME   "PID BINARY" of each process this cluster started
#   logs/NAME.log, data/NAME/, minio/   output and data
#   env, env.sh what cluster-up prints (env.sh is the same, quoted for `source`)

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DIR=${DOCRENDER_CLUSTER_DIR:-$ROOT/.cluster}
CACHE=${DOCRENDER_CACHE:-$HOME/.cache/docrender}
# The machine's services (scripts/setup --test starts them).
NATS_HOST=127.0.0.1
NATS_PORT=4222
NATS_URL="nats://$NATS_HOST:$NATS_PORT"
REDIS_URL="redis://127.0.0.1:6379/0"

log() { printf '%s: %s\n' "$(basename "$0")" "$*" >&2; }
die() { log "$*"; exit 1; }

# lock serialises cluster-up and cluster-down on one directory, so running
# either twice at once is safe.
lock() {
  mkdir -p "$DIR"
  exec 9>"$DIR/.lock"
  flock 9
}

# state_get KEY prints the recorded value (empty if none).
state_get() {
  [[ -f "$DIR/state" ]] || return 0
  sed -n "s/^$1=//p" "$DIR/state" | tail -n 1
}

state_set() { printf '%s=%s\n' "$1" "$2" >>"$DIR/state"; }

# running PID: the process exists and is not a zombie (a killed process
# whose parent, gone with cluster-up, was not there to reap it).
running() {
  local st
  st=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
  [[ -n "$st" && "$st" != Z* ]]
}

# alive NAME: the recorded process still runs the recorded binary (a PID
# reused by an unrelated process does not count).
alive() {
  local f="$DIR/pids/$1" pid bin
  [[ -f "$f" ]] || return 1
  read -r pid bin <"$f"
  [[ -n "$pid" ]] && running "$pid" || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$bin"
}

pid_of() { local pid _b; read -r pid _b <"$DIR/pids/$1"; echo "$pid"; }

# stop_names NAME...: SIGTERM to each live process (graceful: workers finish
# their jobs, gateways their requests), SIGKILL after 40 s; then whatever is
# left in their sessions (a Chromium orphaned by a killed worker).
stop_names() {
  local name pid sids=()
  for name in "$@"; do
    [[ -f "$DIR/pids/$name" ]] || continue
    pid=$(pid_of "$name")
    sids+=("$pid")
    if alive "$name"; then
      kill -TERM "$pid" 2>/dev/null || true
    fi
  done
  local deadline=$((SECONDS + 40))
  for name in "$@"; do
    while alive "$name" && ((SECONDS < deadline)); do sleep 0.2; done
    if alive "$name"; then
      log "$name did not stop in time: SIGKILL"
      kill -KILL "$(pid_of "$name")" 2>/dev/null || true
    fi
    rm -f "$DIR/pids/$name"
  done
  # Each process was started in a session of its own (setsid), so its
  # session ID is its PID: this reaches its children and nothing else.
  local sid p
  for sid in "${sids[@]}"; do
    for p in $(ps -o pid= -s "$sid" 2>/dev/null); do
      kill -KILL "$p" 2>/dev/null || true
    done
  done
}

# nats_request SUBJECT: a request with an empty body to the machine's NATS
# over its text protocol (no NATS CLI needed); prints the reply.
nats_request() {
  local line payload=""
  exec 8<>"/dev/tcp/$NATS_HOST/$NATS_PORT" || return 1
  read -r -t 2 line <&8 || true # INFO
  printf 'CONNECT {"verbose":false,"pedantic":false}\r\nSUB _INBOX.cluster 1\r\nPUB %s _INBOX.cluster 0\r\n\r\nPING\r\n' "$1" >&8
  while read -r -t 3 line <&8; do
    case "$line" in
      MSG*) read -r -t 3 payload <&8; break ;;
      -ERR*) payload="$line"; break ;;
    esac
  done
  exec 8>&-
  printf '%s\n' "${payload%$'\r'}"
}

# delete_namespace NS: the job and webhook streams of the namespace
# (their consumers go with them).
delete_namespace() {
  local up=${1^^} s
  for s in "${up}_JOBS" "${up}_WEBHOOKS"; do
    nats_request "\$JS.API.STREAM.DELETE.$s" >/dev/null || log "could not delete stream $s"
  done
}
