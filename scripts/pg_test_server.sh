#!/usr/bin/env bash
# A throwaway PostgreSQL server for the plan-library tests, run from Debian's own binaries
# (apt-get install postgresql): `start DIR` creates a cluster in DIR (once), starts it on 127.0.0.1 and prints
# its URL; `restart DIR` and `stop DIR` do what they say. .ci/run starts one and the tests restart it.
# PGPORT picks the port (default 55432). As root, the server runs as the `postgres` user the package creates.
set -euo pipefail
action="${1:?usage: pg_test_server.sh start|restart|stop DIR}"
dir="${2:?usage: pg_test_server.sh start|restart|stop DIR}"
port="${PGPORT:-55432}"
bin="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)"
if [ -z "$bin" ] || [ ! -x "$bin/initdb" ]; then
    echo "PostgreSQL binaries not found under /usr/lib/postgresql (apt-get install -y postgresql)" >&2
    exit 1
fi
as_owner() {
    if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
case "$action" in
    start)
        mkdir -p "$dir"
        [ "$(id -u)" -eq 0 ] && chown postgres "$dir"
        if [ ! -f "$dir/data/PG_VERSION" ]; then
            as_owner "$bin/initdb" -D "$dir/data" -A trust -U planner -E UTF8 >/dev/null
        fi
        as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
            -o "-c listen_addresses=127.0.0.1 -p $port -k $dir" start >/dev/null
        as_owner "$bin/psql" -h 127.0.0.1 -p "$port" -U planner -d postgres -qtAc \
            "SELECT 1 FROM pg_database WHERE datname = 'planner_test'" | grep -q 1 \
            || as_owner "$bin/createdb" -h 127.0.0.1 -p "$port" -U planner planner_test
        echo "postgresql+psycopg://planner@127.0.0.1:$port/planner_test"
        ;;
    restart)
        as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 -m fast restart >/dev/null
        ;;
    stop)
        as_owner "$bin/pg_ctl" -D "$dir/data" -w -t 60 -m fast stop >/dev/null
        ;;
    *)
        echo "unknown action $action (start, restart or stop)" >&2
        exit 2
        ;;
esac
