#!/usr/bin/env bash
# A throwaway PostgreSQL 15 cluster for the tests (`make test`; docs/POSTGRES.md).
#
#   pg-test-cluster.sh run CMD [ARG…]  start a cluster, run CMD with HOTPATCH_TEST_DATABASE set,
#                                      stop and remove the cluster (also when CMD fails or the
#                                      script is interrupted); exits with CMD's status. When
#                                      HOTPATCH_TEST_DATABASE is already set (a `make test-swift`
#                                      inside `make test`), CMD runs against that one instead.
#   pg-test-cluster.sh start           start a cluster, print its directory
#   pg-test-cluster.sh env DIR         print `export HOTPATCH_TEST_DATABASE=…` for that cluster
#   pg-test-cluster.sh stop DIR        stop the cluster and remove DIR
#
# The cluster lives in a new directory under /tmp, listens only on a Unix socket in that
# directory (no TCP port: nothing to pick, nothing to collide with the Debian package's own
# cluster on 5432), trusts local connections (nothing but the socket's directory reaches it)
# and holds one database, hotpatch_test, owned by the role hotpatch.
#
# PG_TEST_STATEMENT_LOG=FILE (with `run`): the server logs every statement it executes, and
# that log is appended to FILE when the cluster stops; scripts/pg-statements.py turns it into
# the set of distinct statements, which is how `make test`'s PostgreSQL coverage is compared
# between two layouts of the suite (docs/TESTING.md).
set -euo pipefail

PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
# PostgreSQL refuses to run as root, and CI runs as root: the server then runs as this
# system user, created on first use. Anyone else runs it as themselves.
PG_SYSTEM_USER=hotpatch-pg
DATABASE=hotpatch_test
ROLE=hotpatch

die() { echo "pg-test-cluster: $*" >&2; exit 1; }

# Runs a server-side command as the user the server runs as.
as_server_user() {
    if [ "$(id -u)" = 0 ]; then runuser -u "$PG_SYSTEM_USER" -- "$@"; else "$@"; fi
}

url() { echo "postgresql://$ROLE@/$DATABASE?host=$1"; }

start() {
    [ -x "$PG_BIN/initdb" ] || die "no $PG_BIN/initdb: install postgresql-15 (make deps) or set PG_BIN"
    if [ "$(id -u)" = 0 ] && ! id -u "$PG_SYSTEM_USER" >/dev/null 2>&1; then
        useradd --system --user-group --no-create-home --home-dir /nonexistent \
            --shell /usr/sbin/nologin "$PG_SYSTEM_USER"
    fi
    # /tmp, not $TMPDIR: the server user must be able to reach the directory, and a root
    # TMPDIR is often private to root.
    local dir
    dir=$(mktemp -d /tmp/hotpatch-pg.XXXXXX)
    [ "$(id -u)" = 0 ] && chown "$PG_SYSTEM_USER:" "$dir"
    # The server user needs a working directory it can read (pg_ctl checks it).
    (
        cd "$dir"
        # C locale, UTF-8: text sorts byte by byte as in SQLite, so SQL shared by both
        # backends orders rows the same way; --no-sync because the cluster is thrown away.
        as_server_user "$PG_BIN/initdb" --pgdata="$dir/data" --username="$ROLE" --auth=trust \
            --encoding=UTF8 --locale=C --no-sync >"$dir/initdb.log" 2>&1 \
            || { cat "$dir/initdb.log" >&2; exit 1; }
        as_server_user "$PG_BIN/pg_ctl" start --wait --pgdata="$dir/data" --log="$dir/server.log" \
            -o "-c listen_addresses='' -c unix_socket_directories='$dir' -c max_connections=200 ${PG_TEST_STATEMENT_LOG:+-c log_statement=all -c log_parameter_max_length=0 -c log_line_prefix='%m [%p] app=%a '}" \
            >/dev/null || { cat "$dir/server.log" >&2; exit 1; }
    ) || { rm -rf "$dir"; die "could not start a cluster in $dir"; }
    "$PG_BIN/createdb" --host="$dir" --username="$ROLE" "$DATABASE" \
        || { stop "$dir"; die "could not create $DATABASE"; }
    echo "$dir"
}

stop() {
    local dir=$1
    [ -d "$dir/data" ] || die "$dir holds no cluster"
    (cd "$dir" && as_server_user "$PG_BIN/pg_ctl" stop --wait --mode=fast --pgdata="$dir/data" >/dev/null) \
        || echo "pg-test-cluster: could not stop the server in $dir; removing it anyway" >&2
    if [ -n "${PG_TEST_STATEMENT_LOG:-}" ] && [ -f "$dir/server.log" ]; then cat "$dir/server.log" >>"$PG_TEST_STATEMENT_LOG"; fi
    rm -rf "$dir"
}

run() {
    [ $# -gt 0 ] || die "usage: $0 run CMD [ARG…]"
    if [ -n "${HOTPATCH_TEST_DATABASE:-}" ]; then exec "$@"; fi
    CLUSTER_DIR=$(start)
    # EXIT covers a failing CMD and `set -e`; INT and TERM end the script (and so run EXIT)
    # instead of leaving a server behind.
    trap 'stop "$CLUSTER_DIR"' EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    export HOTPATCH_TEST_DATABASE
    HOTPATCH_TEST_DATABASE=$(url "$CLUSTER_DIR")
    echo "pg-test-cluster: PostgreSQL at $HOTPATCH_TEST_DATABASE" >&2
    local status=0
    "$@" || status=$?
    exit "$status"
}

case "${1:-}" in
    run) shift; run "$@" ;;
    start) start ;;
    env) [ $# = 2 ] || die "usage: $0 env DIR"; echo "export HOTPATCH_TEST_DATABASE='$(url "$2")'" ;;
    stop) [ $# = 2 ] || die "usage: $0 stop DIR"; stop "$2" ;;
    *) die "usage: $0 run CMD [ARG…] | start | env DIR | stop DIR" ;;
esac
