#!/usr/bin/env bash
# Private PostgreSQL, Redis and (for tests) versitygw instances on private ports, with their data under
# .pastebin/<profile>/ in the project (git-ignored). Never touches the machine's own PostgreSQL or Redis.
#
#   scripts/services.sh <profile> up      start what is missing; print the names of what it started
#   scripts/services.sh <profile> down [name...]   stop the named services (default: all)
#   scripts/services.sh <profile> env     print the environment that points the pastebin at them
#   scripts/services.sh <profile> used [started...]   say on stderr which services a run uses, by
#                                         URL (passwords hidden), and which of them were just started
#   scripts/services.sh <profile> status
#   scripts/services.sh <profile> tool <name>   print the path of a tool the tests run themselves
#                                                (haproxy, podman, systemd-analyze), installing it
#                                                with apt-get if missing
#
# Profiles: run (make run), test (make test: also an S3 server, a three-master Redis Cluster, and
# pgbouncer in transaction pooling mode in front of the test PostgreSQL), bench (durable settings,
# big buffers).
#
# The run profile uses what the user configured: with PASTEBIN_DATABASE_URL or PASTEBIN_REDIS_URL
# set, that service is the user's, and its private one is neither started nor exported (a URL that
# names the private one itself, left from an earlier `eval` of env, counts as not set). The test
# and bench profiles always use their own, which their suites need (a cluster, pgbouncer, an S3).
#
# Every port is above Linux's ephemeral range (32768-60999), so the machine's own outgoing connections
# can never take one first. PASTEBIN_PORT_OFFSET (default 0) shifts them all, so that two checkouts on
# one machine can run their services side by side.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
profile=${1:?usage: services.sh <run|test|bench> <up|down|env|status|tool>}
action=${2:?usage: services.sh <run|test|bench> <up|down|env|status|tool>}
shift 2

cluster_ports=""
pgb_port=""
case "$profile" in
  run)   pg_port=64320; redis_port=63790; s3_port="" ;;
  test)  pg_port=64321; redis_port=63791; s3_port=64571; cluster_ports="63793 63794 63795"; pgb_port=64323 ;;
  bench) pg_port=64322; redis_port=63792; s3_port=64572 ;;
  *) echo "services.sh: unknown profile $profile" >&2; exit 2 ;;
esac
offset=${PASTEBIN_PORT_OFFSET:-0}
case "$offset" in ''|*[!0-9]*) echo "services.sh: PASTEBIN_PORT_OFFSET must be a number" >&2; exit 2 ;; esac
# The highest port is 64572: past an offset of 900 ports run out (65535).
[ "$offset" -le 900 ] || { echo "services.sh: PASTEBIN_PORT_OFFSET must be at most 900" >&2; exit 2; }
pg_port=$((pg_port + offset)); redis_port=$((redis_port + offset))
cluster_ports=$(for p in $cluster_ports; do echo $((p + offset)); done)
[ -z "$s3_port" ] || s3_port=$((s3_port + offset))
[ -z "$pgb_port" ] || pgb_port=$((pgb_port + offset))
dir="$root/.pastebin/$profile"
s3_key=pastebin-test
s3_secret=pastebin-test-secret
versitygw_version=v1.8.0

log() { echo "services[$profile]: $*" >&2; }

pg_url="postgres://postgres@127.0.0.1:$pg_port/pastebin?sslmode=disable"
redis_url="redis://127.0.0.1:$redis_port/0"

# configured <service>: the user's own URL names that service (run profile only).
configured() {
  [ "$profile" = run ] || return 1
  case "$1" in
    postgres) [ -n "${PASTEBIN_DATABASE_URL:-}" ] && [ "$PASTEBIN_DATABASE_URL" != "$pg_url" ] ;;
    redis) [ -n "${PASTEBIN_REDIS_URL:-}" ] && [ "$PASTEBIN_REDIS_URL" != "$redis_url" ] ;;
    *) return 1 ;;
  esac
}

# without_password prints a URL with its password, in the user part or as a parameter, hidden.
without_password() {
  sed -E 's#(://[^:/@?]*):[^@/?]*@#\1:***@#; s#([?&]password=)[^&]*#\1***#g' <<<"$1"
}

# used says which services a run uses: the user's, or the private ones (started now, or running
# already). make run prints it, so that nobody wonders which database or Redis it talks to.
used() {
  local s url how
  for s in $services; do
    if configured "$s"; then
      case "$s" in
        postgres) url=$PASTEBIN_DATABASE_URL; how="yours, from PASTEBIN_DATABASE_URL" ;;
        redis) url=$PASTEBIN_REDIS_URL; how="yours, from PASTEBIN_REDIS_URL" ;;
      esac
    else
      case "$s" in
        postgres) url=$pg_url ;; redis) url=$redis_url ;; s3) url="http://127.0.0.1:$s3_port" ;;
        redis-cluster) url=$(cluster_url) ;; pgbouncer) url="postgres://postgres@127.0.0.1:$pgb_port/pastebin" ;;
      esac
      how="private, running already"
      case " $* " in *" $s "*) how="private, started now; stopped at the end" ;; esac
    fi
    log "$s: $(without_password "$url") ($how)"
  done
  if [ "$profile" = run ]; then
    if [ -n "${PASTEBIN_S3_ENDPOINT:-}" ]; then
      log "s3: $(without_password "$PASTEBIN_S3_ENDPOINT") (yours, from PASTEBIN_S3_ENDPOINT)"
    else
      log "s3: embedded in the process, data in ${PASTEBIN_EMBEDDED_S3_DIR:-.pastebin/s3}"
    fi
  fi
}

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
    log "need root to run: $*"; return 1; fi
}

# apt-get starts the services it installs: on a machine with systemd, the system's own PostgreSQL
# and Redis, on their usual ports, beside the private ones. Debian's policy-rc.d says no to those
# starts (exit 101; invoke-rc.d and deb-systemd-invoke ask it) while the install runs. A policy the
# machine has of its own (Docker images have one) is left alone, and one of ours that a killed
# install left behind is recognised by its mark and removed.
policy_rc_d=/usr/sbin/policy-rc.d
policy_mark="# written by pastebin's scripts/services.sh while it installs packages; removed after"

deny_service_starts() {
  allow_service_starts
  [ ! -e "$policy_rc_d" ] || return 1
  printf '#!/bin/sh\n%s\nexit 101\n' "$policy_mark" | as_root tee "$policy_rc_d" >/dev/null &&
    as_root chmod 755 "$policy_rc_d"
}

allow_service_starts() {
  if grep -qsF "$policy_mark" "$policy_rc_d"; then as_root rm -f "$policy_rc_d"; fi
  return 0
}

apt_install() {
  log "installing $* with apt-get"
  local denied=""
  deny_service_starts && denied=1
  [ -z "$denied" ] || trap allow_service_starts EXIT
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >&2
  [ -z "$denied" ] || { allow_service_starts; trap - EXIT; }
}

pg_bin() {
  local bin
  bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  if [ -z "$bin" ]; then
    apt_install postgresql >/dev/null
    bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
  fi
  echo "$bin"
}

# PostgreSQL refuses to run as root: then it runs as the postgres system user, which must own its
# data folder and be able to reach it. A project under a private home falls back to /var/tmp.
pg_dir() {
  mkdir -p "$root/.pastebin"
  if [ "$(id -u)" != 0 ] || runuser -u postgres -- test -x "$root/.pastebin" 2>/dev/null; then
    echo "$dir/pg"
  else
    echo "/var/tmp/pastebin-$(echo "$root" | md5sum | cut -c1-8)/$profile/pg"
  fi
}

# As root, from /: the postgres user may not enter a private folder the command was started in
# (a clone under mktemp -d), and PostgreSQL's tools complain of it on every call.
as_pg() {
  if [ "$(id -u)" = 0 ]; then (cd / && runuser -u postgres -- "$@"); else "$@"; fi
}

pg_running() { [ -f "$1/postmaster.pid" ] && as_pg "$(pg_bin)/pg_ctl" -D "$1" status >/dev/null 2>&1; }

pg_settings() {
  local common="-c listen_addresses=127.0.0.1 -c unix_socket_directories= -c max_connections=300"
  case "$profile" in
    # Tests throw their databases away: durability buys nothing there.
    test)  echo "$common -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c shared_buffers=256MB" ;;
    bench) echo "$common -c shared_buffers=2GB -c work_mem=64MB -c wal_buffers=64MB -c max_wal_size=16GB -c checkpoint_timeout=30min -c shared_preload_libraries=pg_stat_statements -c log_lock_waits=on -c log_autovacuum_min_duration=0 -c log_checkpoints=on" ;;
    *)     echo "$common" ;;
  esac
}

pg_up() {
  local bin data
  bin=$(pg_bin); data=$(pg_dir)
  if pg_running "$data"; then return 1; fi
  if [ ! -f "$data/PG_VERSION" ]; then
    mkdir -p "$data"
    if [ "$(id -u)" = 0 ]; then chown postgres:postgres "$data"; fi
    chmod 700 "$data"
    as_pg "$bin/initdb" -D "$data" -U postgres --auth=trust -E UTF8 --locale=C >"$data.initdb.log" 2>&1 ||
      { cat "$data.initdb.log" >&2; return 2; }
  fi
  as_pg "$bin/pg_ctl" -D "$data" -l "$data/server.log" -w -t 60 -o "-p $pg_port $(pg_settings)" start >/dev/null ||
    { tail -n 20 "$data/server.log" >&2; return 2; }
  "$bin/psql" -h 127.0.0.1 -p "$pg_port" -U postgres -tAc "SELECT 1 FROM pg_database WHERE datname='pastebin'" |
    grep -q 1 || "$bin/createdb" -h 127.0.0.1 -p "$pg_port" -U postgres pastebin ||
    { log "could not create the pastebin database"; return 2; }
  return 0
}

pg_down() {
  local data; data=$(pg_dir)
  pg_running "$data" && as_pg "$(pg_bin)/pg_ctl" -D "$data" -m fast -w stop >/dev/null
  return 0
}

redis_bin() {
  command -v redis-server >/dev/null || apt_install redis-server >/dev/null
  command -v redis-server
}

redis_running() { [ -f "$dir/redis/redis.pid" ] && kill -0 "$(cat "$dir/redis/redis.pid")" 2>/dev/null; }

redis_up() {
  if redis_running; then return 1; fi
  mkdir -p "$dir/redis"
  "$(redis_bin)" --port "$redis_port" --bind 127.0.0.1 --protected-mode yes --daemonize yes \
    --pidfile "$dir/redis/redis.pid" --logfile "$dir/redis/redis.log" --dir "$dir/redis" \
    --save '' --appendonly no
  for _ in $(seq 100); do
    redis-cli -p "$redis_port" ping >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  log "redis did not answer on port $redis_port"; return 2
}

redis_down() {
  redis_running || return 0
  local pid; pid=$(cat "$dir/redis/redis.pid")
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
}

# pgbouncer in transaction pooling mode, the way a large deployment runs it in front of PostgreSQL.
# The fallback database "*" passes any database name through, so the tests' per-test databases are
# reachable through it too. Like PostgreSQL, it runs as the postgres user when we are root.
pgb_bin() {
  [ -x /usr/sbin/pgbouncer ] || apt_install pgbouncer >/dev/null
  echo /usr/sbin/pgbouncer
}

pgb_dir() { echo "$(dirname "$(pg_dir)")/pgbouncer"; }

pgb_running() { [ -f "$(pgb_dir)/pgbouncer.pid" ] && kill -0 "$(cat "$(pgb_dir)/pgbouncer.pid")" 2>/dev/null; }

pgb_up() {
  [ -n "$pgb_port" ] || return 1
  if pgb_running; then return 1; fi
  local bin d; bin=$(pgb_bin); d=$(pgb_dir)
  mkdir -p "$d"
  if [ "$(id -u)" = 0 ]; then chown postgres:postgres "$d"; fi
  echo '"postgres" ""' >"$d/userlist.txt"
  # server_idle_timeout is short because every test database is dropped soon after it is made.
  cat >"$d/pgbouncer.ini" <<INI
[databases]
* = host=127.0.0.1 port=$pg_port

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $pgb_port
unix_socket_dir =
auth_type = trust
auth_file = $d/userlist.txt
admin_users = postgres
pool_mode = transaction
max_client_conn = 2000
default_pool_size = 20
server_idle_timeout = 10
log_connections = 0
log_disconnections = 0
logfile = $d/pgbouncer.log
pidfile = $d/pgbouncer.pid
INI
  as_pg "$bin" -d -q "$d/pgbouncer.ini" || { tail -n 20 "$d/pgbouncer.log" >&2; return 2; }
  for _ in $(seq 100); do
    "$(pg_bin)/psql" -h 127.0.0.1 -p "$pgb_port" -U postgres -d pastebin -tAc 'SELECT 1' >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  log "pgbouncer did not answer on port $pgb_port"; tail -n 20 "$d/pgbouncer.log" >&2; return 2
}

pgb_down() {
  pgb_running || return 0
  local pid; pid=$(cat "$(pgb_dir)/pgbouncer.pid")
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
}

# The Redis Cluster of the test profile: three masters without replicas, each with its cluster bus
# on its port + 3 (63796-63798). It is made anew on every start (no data is kept, nodes.conf
# included), joined with redis-cli --cluster create, and ready once every node says cluster_state:ok.
# A master that is down fails only its own slots (cluster-require-full-coverage no).
cluster_dir="$dir/redis-cluster"

cluster_running() {
  local p
  for p in $cluster_ports; do
    [ -f "$cluster_dir/$p/redis.pid" ] && kill -0 "$(cat "$cluster_dir/$p/redis.pid")" 2>/dev/null || return 1
  done
}

cluster_node_up() {
  local port=$1 d="$cluster_dir/$1"
  mkdir -p "$d"
  "$(redis_bin)" --port "$port" --cluster-port $((port + 3)) --bind 127.0.0.1 --protected-mode yes \
    --cluster-enabled yes --cluster-config-file "$d/nodes.conf" --cluster-node-timeout 5000 \
    --cluster-require-full-coverage no --daemonize yes --pidfile "$d/redis.pid" --logfile "$d/redis.log" \
    --dir "$d" --save '' --appendonly no
}

cluster_up() {
  [ -n "$cluster_ports" ] || return 1
  if cluster_running; then return 1; fi
  cluster_down
  rm -rf "$cluster_dir"
  local p nodes=""
  for p in $cluster_ports; do cluster_node_up "$p"; nodes="$nodes 127.0.0.1:$p"; done
  for p in $cluster_ports; do
    for _ in $(seq 100); do redis-cli -p "$p" ping >/dev/null 2>&1 && break; sleep 0.1; done
  done
  # shellcheck disable=SC2086
  redis-cli --cluster create $nodes --cluster-yes >"$cluster_dir/create.log" 2>&1 ||
    { cat "$cluster_dir/create.log" >&2; cluster_down; return 2; }
  for _ in $(seq 200); do
    local ok=0
    for p in $cluster_ports; do
      redis-cli -p "$p" cluster info 2>/dev/null | grep -q '^cluster_state:ok' && ok=$((ok + 1))
    done
    [ "$ok" = 3 ] && return 0
    sleep 0.1
  done
  log "the redis cluster on ports $(echo $cluster_ports) did not reach cluster_state:ok"; cluster_down; return 2
}

cluster_down() {
  local p pid
  for p in $cluster_ports; do
    [ -f "$cluster_dir/$p/redis.pid" ] || continue
    pid=$(cat "$cluster_dir/$p/redis.pid")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    rm -f "$cluster_dir/$p/redis.pid"
  done
  return 0
}

# go-redis's cluster URL (ParseClusterURL): the first node, the others as addr parameters.
cluster_url() {
  local first="" rest="" p
  for p in $cluster_ports; do
    if [ -z "$first" ]; then first="127.0.0.1:$p"; else rest="$rest${rest:+&}addr=127.0.0.1:$p"; fi
  done
  echo "redis+cluster://$first?$rest"
}

# versitygw is a real S3 server that checks signatures, so tests exercise the SDK's real signing.
versitygw_bin() {
  local bin="$root/.pastebin/bin/versitygw-$versitygw_version"
  if [ ! -x "$bin" ]; then
    command -v go >/dev/null || { log "Go is needed to build versitygw"; return 2; }
    log "building versitygw $versitygw_version (once)"
    mkdir -p "$root/.pastebin/bin/tmp"
    GOBIN="$root/.pastebin/bin/tmp" GOFLAGS= go install "github.com/versity/versitygw/cmd/versitygw@$versitygw_version" >&2
    mv "$root/.pastebin/bin/tmp/versitygw" "$bin"
  fi
  echo "$bin"
}

s3_running() { [ -f "$dir/s3.pid" ] && kill -0 "$(cat "$dir/s3.pid")" 2>/dev/null; }

s3_up() {
  [ -n "$s3_port" ] || return 1
  if s3_running; then return 1; fi
  local bin; bin=$(versitygw_bin)
  mkdir -p "$dir/s3/data"
  ROOT_ACCESS_KEY_ID=$s3_key ROOT_SECRET_ACCESS_KEY=$s3_secret \
    nohup "$bin" --port "127.0.0.1:$s3_port" --quiet --keep-alive --health /healthz posix "$dir/s3/data" \
    >"$dir/s3/versitygw.log" 2>&1 &
  echo $! >"$dir/s3.pid"
  for _ in $(seq 100); do
    curl -sf "http://127.0.0.1:$s3_port/healthz" >/dev/null 2>&1 && return 0
    s3_running || break
    sleep 0.1
  done
  log "versitygw did not answer on port $s3_port"; cat "$dir/s3/versitygw.log" >&2; return 2
}

s3_down() {
  s3_running || return 0
  local pid; pid=$(cat "$dir/s3.pid")
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || { rm -f "$dir/s3.pid"; return 0; }; sleep 0.1; done
}

services="postgres redis"
[ -n "$s3_port" ] && services="$services s3"
[ -n "$cluster_ports" ] && services="$services redis-cluster"
[ -n "$pgb_port" ] && services="$services pgbouncer"

start_one() {
  local rc=0
  case "$1" in
    postgres) pg_up || rc=$? ;; redis) redis_up || rc=$? ;; s3) s3_up || rc=$? ;;
    redis-cluster) cluster_up || rc=$? ;; pgbouncer) pgb_up || rc=$? ;;
  esac
  case $rc in 0) echo "$1" ;; 1) ;; *) exit 1 ;; esac
}

case "$action" in
  up)
    mkdir -p "$dir"
    # A service that fails to start is stopped (it may have half-started: a daemon that never
    # answered), and so are the ones this call started before it.
    started=""
    for s in $services; do
      configured "$s" && continue
      if ! name=$(start_one "$s"); then
        "$0" "$profile" down $started "$s"
        exit 1
      fi
      [ -z "$name" ] || { echo "$name"; started="$started $name"; }
    done ;;
  down)
    names=${*:-$services}
    for s in $names; do
      case "$s" in
        postgres) pg_down ;; redis) redis_down ;; s3) s3_down ;; redis-cluster) cluster_down ;; pgbouncer) pgb_down ;;
      esac
    done ;;
  env)
    configured postgres || echo "export PASTEBIN_DATABASE_URL='$pg_url'"
    configured redis || echo "export PASTEBIN_REDIS_URL='$redis_url'"
    if [ -n "$s3_port" ]; then
      echo "export PASTEBIN_TEST_S3_ENDPOINT='http://127.0.0.1:$s3_port'"
      echo "export PASTEBIN_TEST_S3_ACCESS_KEY_ID='$s3_key'"
      echo "export PASTEBIN_TEST_S3_SECRET_ACCESS_KEY='$s3_secret'"
      echo "export PASTEBIN_TEST_S3_DATA_DIR='$dir/s3/data'"
      # The soak runs S3 servers of its own, which it stops and starts again.
      echo "export PASTEBIN_TEST_VERSITYGW='$root/.pastebin/bin/versitygw-$versitygw_version'"
    fi
    [ -z "$cluster_ports" ] || echo "export PASTEBIN_TEST_REDIS_CLUSTER_URL='$(cluster_url)'"
    # The same PostgreSQL through pgbouncer, in transaction pooling mode (tests, benchmarks, the soak).
    [ -z "$pgb_port" ] || echo "export PASTEBIN_TEST_POOLER_URL='postgres://postgres@127.0.0.1:$pgb_port/pastebin?sslmode=disable'" ;;
  used) used "$@" ;;
  status)
    pg_running "$(pg_dir)" && echo "postgres: running on 127.0.0.1:$pg_port" || echo "postgres: stopped"
    redis_running && echo "redis: running on 127.0.0.1:$redis_port" || echo "redis: stopped"
    [ -n "$s3_port" ] && { s3_running && echo "s3: running on 127.0.0.1:$s3_port" || echo "s3: stopped"; }
    [ -n "$cluster_ports" ] && { cluster_running && echo "redis-cluster: running on 127.0.0.1:"$(echo $cluster_ports | tr ' ' ,) ||
      echo "redis-cluster: stopped"; }
    [ -n "$pgb_port" ] && { pgb_running && echo "pgbouncer: running on 127.0.0.1:$pgb_port" || echo "pgbouncer: stopped"; }
    true ;;
  tool)
    case "${1:-}" in
      haproxy) command -v haproxy >/dev/null || apt_install haproxy >/dev/null; command -v haproxy ;;
      # runc too: where crun cannot run a container (hybrid cgroups), scripts/image.sh chooses it.
      podman) { command -v podman && command -v runc; } >/dev/null || apt_install podman runc >/dev/null; command -v podman ;;
      # systemd-analyze checks deploy/systemd's unit; a container's Debian may lack systemd.
      systemd-analyze) command -v systemd-analyze >/dev/null || apt_install systemd >/dev/null; command -v systemd-analyze ;;
      *) echo "services.sh: unknown tool ${1:-} (want haproxy, podman or systemd-analyze)" >&2; exit 2 ;;
    esac ;;
  *) echo "services.sh: unknown action $action" >&2; exit 2 ;;
esac
