#!/usr/bin/env bash
# Start a throwaway local PostgreSQL for the store tests; prints the asyncpg URL on success.
set -euo pipefail
PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
if [ -z "$PGBIN" ] || [ ! -x "$PGBIN/initdb" ]; then
  if command -v apt-get >/dev/null 2>&1; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null) >&2 || exit 1
    PGBIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
  else
    exit 1
  fi
fi
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
DIR=$(mktemp -d /tmp/clkt-pg.XXXXXX)
chown postgres "$DIR" 2>/dev/null || true
RUN="runuser -u postgres --"
[ "$(id -u)" = 0 ] || RUN=""
$RUN "$PGBIN/initdb" -D "$DIR/data" -A trust -U postgres >/dev/null
$RUN "$PGBIN/pg_ctl" -D "$DIR/data" -o "-p $PORT -k $DIR -c listen_addresses=127.0.0.1" -l "$DIR/log" -w start >/dev/null
"$PGBIN/psql" -h 127.0.0.1 -p $PORT -U postgres -c "CREATE DATABASE clkt_test" >/dev/null
echo "postgresql+asyncpg://postgres@127.0.0.1:$PORT/clkt_test"
