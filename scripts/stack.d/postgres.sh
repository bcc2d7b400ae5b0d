# PostgreSQL from Debian's packages: a throwaway cluster under the run dir, run as the postgres user
# (it refuses root), trust auth on 127.0.0.1 only. Databases: $POSTGRES_DB for the catalogs and
# `registry` for the schema registry's storage.
postgres_timeout=30

postgres_bin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1; }
postgres_datadir() { echo "$ICEFLOE_RUN/data/postgres"; }

postgres_start() {
  local bin data; bin=$(postgres_bin); data=$(postgres_datadir)
  [ -n "$bin" ] || die "PostgreSQL binaries not found under /usr/lib/postgresql (apt package postgresql)"
  chmod 755 "$ICEFLOE_RUN" "$ICEFLOE_RUN/data" "$ICEFLOE_RUN/logs"
  if [ ! -f "$data/PG_VERSION" ]; then
    install -d -o postgres -g postgres -m 700 "$data"
    su postgres -s /bin/sh -c "'$bin/initdb' -D '$data' -A trust -U postgres" >/dev/null
  fi
  touch "$ICEFLOE_RUN/logs/postgres.log" && chown postgres "$ICEFLOE_RUN/logs/postgres.log"
  # fsync off: a test stack, rebuilt on every `up`.
  su postgres -s /bin/sh -c "'$bin/pg_ctl' -D '$data' -l '$ICEFLOE_RUN/logs/postgres.log' -w -t 30 \
    -o \"-c listen_addresses=127.0.0.1 -p $POSTGRES_PORT -k /tmp -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200\" start" >&2
  head -n 1 "$data/postmaster.pid" > "$ICEFLOE_RUN/pids/postgres.pid"
  postgres_wait_accepting
  local psql=(psql -h 127.0.0.1 -p "$POSTGRES_PORT" -U postgres -v ON_ERROR_STOP=1 -qAt)
  if [ "$("${psql[@]}" -c "SELECT 1 FROM pg_roles WHERE rolname='$POSTGRES_USER'")" != 1 ]; then
    "${psql[@]}" -c "CREATE ROLE $POSTGRES_USER LOGIN SUPERUSER PASSWORD '$POSTGRES_PASSWORD'"
  fi
  local db
  for db in "$POSTGRES_DB" registry; do
    if [ "$("${psql[@]}" -c "SELECT 1 FROM pg_database WHERE datname='$db'")" != 1 ]; then
      "${psql[@]}" -c "CREATE DATABASE $db OWNER $POSTGRES_USER"
    fi
  done
}

postgres_wait_accepting() {
  local i
  for i in $(seq 1 30); do pg_isready -q -h 127.0.0.1 -p "$POSTGRES_PORT" && return 0; sleep 1; done
  return 1
}

postgres_ready() {
  pg_isready -q -h 127.0.0.1 -p "$POSTGRES_PORT" &&
    [ "$(PGPASSWORD=$POSTGRES_PASSWORD psql -h 127.0.0.1 -p "$POSTGRES_PORT" -U "$POSTGRES_USER" -d "$POSTGRES_DB" -qAtc 'SELECT 1' 2>/dev/null)" = 1 ]
}

postgres_stop() {
  local bin data; bin=$(postgres_bin); data=$(postgres_datadir)
  if [ -f "$data/postmaster.pid" ]; then
    su postgres -s /bin/sh -c "'$bin/pg_ctl' -D '$data' -m fast -w -t 30 stop" >&2 || stop_pid postgres
  fi
  rm -f "$ICEFLOE_RUN/pids/postgres.pid"
}

postgres_describe() { echo "PostgreSQL $(basename "$(dirname "$(postgres_bin)")") on 127.0.0.1:$POSTGRES_PORT (databases $POSTGRES_DB, registry; user $POSTGRES_USER)"; }

postgres_env() {
  echo "ICEFLOE_POSTGRES_URL=postgresql://$POSTGRES_USER:$POSTGRES_PASSWORD@127.0.0.1:$POSTGRES_PORT/$POSTGRES_DB"
}
