#!/usr/bin/env bash
# A scratch PostgreSQL cluster of our own: data dir owned by `postgres`, its
# own port and socket dir under /tmp, pg_cron preloaded. Nothing else on the
# machine is touched.
#   scripts/cluster.sh start DIR PORT   (idempotent: reuses a running cluster)
#   scripts/cluster.sh stop DIR
set -euo pipefail
# The server binaries of PG_CONFIG (the one the extension is installed into).
BIN=$("${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}" --bindir)
cmd=$1 dir=$2 port=${3:-28815}
# From / : the postgres user may not be allowed into the directory we were called from.
as_pg() { if [ "$(id -un)" = postgres ]; then (cd / && "$@"); else (cd / && sudo -u postgres "$@"); fi; }

case "$cmd" in
  start)
    if [ ! -d "$dir/data" ]; then
      mkdir -p "$dir" && chown postgres:postgres "$dir"
      as_pg "$BIN/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >/dev/null
      cat <<CONF | as_pg tee -a "$dir/data/postgresql.conf" >/dev/null
port = $port
listen_addresses = '127.0.0.1'
unix_socket_directories = '$dir'
shared_preload_libraries = 'pg_cron'
cron.database_name = 'postgres'
fsync = off
synchronous_commit = off
full_page_writes = off
max_wal_size = '4GB'
shared_buffers = '1GB'
work_mem = '64MB'
maintenance_work_mem = '512MB'
CONF
    fi
    # A cluster of another major here (PG_CONFIG of the wrong server): say so rather than pg_ctl's "see the log".
    want=$("$BIN/postgres" --version | sed -E 's/.* ([0-9]+)[.].*/\1/')
    have=$(cat "$dir/data/PG_VERSION")
    if [ "$have" != "$want" ]; then
      echo "cluster.sh: $dir/data is a PostgreSQL $have cluster, the binaries in $BIN are $want (PG_CONFIG=${PG_CONFIG:-unset})" >&2
      exit 1
    fi
    if ! as_pg "$BIN/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
      as_pg "$BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w start >/dev/null
    fi
    ;;
  stop)
    [ -d "$dir/data" ] && as_pg "$BIN/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
    ;;
  *) echo "usage: $0 start|stop DIR [PORT]" >&2; exit 2 ;;
esac
