#!/usr/bin/env bash
# A throw-away PostgreSQL server for assay's store tests, on 127.0.0.1 only.
#
#   scripts/postgres.sh start   install PostgreSQL from Debian packages if missing, create a new
#                               cluster in a temporary directory, start it on a free port, create
#                               the database assay_test and print its URL
#   scripts/postgres.sh url     print the URL of the running server
#   scripts/postgres.sh stop    stop the server and delete its cluster
#
# Typical use:  export ASSAY_TEST_POSTGRES_URL="$(scripts/postgres.sh start)"
#
# The cluster holds nothing worth keeping: it trusts connections from 127.0.0.1 (so its URL
# carries no password) and runs without fsync. PostgreSQL refuses to run as root, so under root
# it runs as the "postgres" system user that the Debian package creates.
set -euo pipefail
cd "$(dirname "$0")/.."

STATE_DIR=".cache/postgres"
STATE="$STATE_DIR/state"
DATABASE="assay_test"
ROLE="assay"

log() { echo "postgres.sh: $*" >&2; }

pg_bindir() {
  local dir
  dir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)"
  if [ -n "$dir" ] && [ -x "$dir/initdb" ]; then
    echo "$dir"
  elif command -v initdb >/dev/null 2>&1; then
    dirname "$(command -v initdb)"
  fi
}

install_postgres() {
  if [ -n "$(pg_bindir)" ]; then
    return
  fi
  if [ "$(id -u)" -ne 0 ]; then
    log "PostgreSQL is not installed and installing it needs root: apt-get install -y postgresql"
    exit 1
  fi
  log "installing PostgreSQL from Debian packages"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq postgresql >&2
  if [ -z "$(pg_bindir)" ]; then
    log "apt-get installed postgresql but no initdb was found under /usr/lib/postgresql"
    exit 1
  fi
}

# Run a command as the user the server runs as: "postgres" under root, else the current user.
as_server_user() {
  if [ "$(id -u)" -eq 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

read_state() {
  if [ ! -f "$STATE" ]; then
    return 1
  fi
  # shellcheck disable=SC1090
  . "$STATE"
}

url() {
  echo "postgresql+psycopg://$ROLE@127.0.0.1:$PGPORT/$DATABASE"
}

start() {
  if read_state && as_server_user "$BINDIR/pg_ctl" -D "$PGDATA" status >/dev/null 2>&1; then
    url
    return
  fi
  install_postgres
  BINDIR="$(pg_bindir)"
  if [ "$(id -u)" -eq 0 ] && ! id postgres >/dev/null 2>&1; then
    log "running as root, but there is no 'postgres' system user to run the server as"
    exit 1
  fi
  local base
  base="$(mktemp -d /tmp/assay-postgres.XXXXXX)"
  PGDATA="$base/data"
  if [ "$(id -u)" -eq 0 ]; then
    chown postgres: "$base"
  fi
  as_server_user "$BINDIR/initdb" -D "$PGDATA" -U postgres --auth=trust --encoding=UTF8 \
    --locale=C.UTF-8 >"$base/initdb.log" 2>&1 || {
      log "initdb failed:"; cat "$base/initdb.log" >&2; exit 1; }
  mkdir -p "$STATE_DIR"
  local attempt
  for attempt in 1 2 3 4 5; do
    PGPORT="$(free_port)"
    if as_server_user "$BINDIR/pg_ctl" -D "$PGDATA" -l "$base/server.log" -w -t 30 \
        -o "-c listen_addresses=127.0.0.1 -p $PGPORT -k $base -c fsync=off \
            -c synchronous_commit=off -c full_page_writes=off -c max_connections=200" \
        start >/dev/null 2>&1; then
      break
    fi
    if [ "$attempt" -eq 5 ]; then
      log "the server did not start; its log:"; cat "$base/server.log" >&2; exit 1
    fi
  done
  printf 'BINDIR=%q\nPGDATA=%q\nPGBASE=%q\nPGPORT=%q\n' "$BINDIR" "$PGDATA" "$base" "$PGPORT" \
    >"$STATE"
  as_server_user "$BINDIR/psql" -h 127.0.0.1 -p "$PGPORT" -U postgres -d postgres -q \
    -v ON_ERROR_STOP=1 \
    -c "CREATE ROLE $ROLE LOGIN CREATEDB" \
    -c "CREATE DATABASE $DATABASE OWNER $ROLE" >/dev/null
  url
}

stop() {
  if ! read_state; then
    log "no server started by this script is running"
    return
  fi
  as_server_user "$BINDIR/pg_ctl" -D "$PGDATA" -m fast -w stop >/dev/null 2>&1 || true
  case "$PGBASE" in
    /tmp/assay-postgres.*) rm -rf "$PGBASE" ;;
  esac
  rm -f "$STATE"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  url)
    if read_state; then url; else log "not running; use: scripts/postgres.sh start"; exit 1; fi
    ;;
  *)
    echo "usage: scripts/postgres.sh start|url|stop" >&2
    exit 2
    ;;
esac
