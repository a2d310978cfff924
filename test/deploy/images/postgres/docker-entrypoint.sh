#!/usr/bin/env bash
# The official postgres image's entrypoint, the part docker-compose.yml uses: as root, own the
# data folder and go on as postgres; an empty data folder is initialised once with POSTGRES_USER,
# the password of POSTGRES_PASSWORD_FILE (never on a command line), POSTGRES_INITDB_ARGS and
# POSTGRES_DB, listening on every address; then `postgres` runs with the given arguments.
set -euo pipefail
if [[ ${1:-} == -* ]]; then set -- postgres "$@"; fi
[[ ${1:-} == postgres ]] || exec "$@"
if [[ $(id -u) == 0 ]]; then
  mkdir -p "$PGDATA"; chown postgres:postgres "$PGDATA"; chmod 700 "$PGDATA"
  exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi
if [[ ! -s $PGDATA/PG_VERSION ]]; then
  : "${POSTGRES_USER:=postgres}" "${POSTGRES_DB:=$POSTGRES_USER}"
  password=${POSTGRES_PASSWORD:-}
  [[ -n ${POSTGRES_PASSWORD_FILE:-} ]] && password=$(<"$POSTGRES_PASSWORD_FILE")
  [[ -n $password ]] || { echo 'postgres: POSTGRES_PASSWORD or POSTGRES_PASSWORD_FILE is needed' >&2; exit 1; }
  # shellcheck disable=SC2086 # POSTGRES_INITDB_ARGS is a list of options
  initdb --username="$POSTGRES_USER" --pwfile=<(printf '%s\n' "$password") ${POSTGRES_INITDB_ARGS:-} -D "$PGDATA"
  sed -ri "s!^#?(listen_addresses)\s*=\s*\S+.*!\1 = '*'!" "$PGDATA/postgresql.conf"
  printf 'host all all all scram-sha-256\n' >>"$PGDATA/pg_hba.conf"
  pg_ctl -D "$PGDATA" -o "-c listen_addresses='' -c unix_socket_directories=/var/run/postgresql" -w start
  if [[ $POSTGRES_DB != postgres ]]; then
    psql -v ON_ERROR_STOP=1 -U "$POSTGRES_USER" -d postgres -v db="$POSTGRES_DB" <<<'CREATE DATABASE :"db";'
  fi
  pg_ctl -D "$PGDATA" -m fast -w stop
  echo 'postgres: init process complete; ready for start up.'
fi
exec "$@"
