#!/usr/bin/env bash
# The official mariadb image's entrypoint, the part docker-compose.yml uses: arguments starting
# with `-` go to mariadbd; as root, own the data folder and go on as mysql; an empty data folder
# is initialised once: root (localhost and %) with MARIADB_ROOT_PASSWORD_FILE's password,
# MARIADB_DATABASE, MARIADB_USER@% with MARIADB_PASSWORD_FILE's password and every right on that
# database, the healthcheck user of healthcheck.sh, then /docker-entrypoint-initdb.d/*.sql.
# Passwords go to the server on standard input, never on a command line.
set -euo pipefail
if [[ ${1:-} == -* ]]; then set -- mariadbd "$@"; fi
[[ ${1:-} == mariadbd ]] || exec "$@"
readonly DATADIR=/var/lib/mysql SOCKET=/run/mysqld/mysqld.sock
if [[ $(id -u) == 0 ]]; then
  mkdir -p "$DATADIR" /run/mysqld; chown mysql:mysql "$DATADIR" /run/mysqld
  exec setpriv --reuid=mysql --regid=mysql --init-groups "$0" "$@"
fi
secret() { local v=${!1:-} f="${1}_FILE"; [[ -n ${!f:-} ]] && v=$(<"${!f}"); v=${v//\\/\\\\}; printf '%s' "${v//\'/\\\'}"; }
if [[ ! -d $DATADIR/mysql ]]; then
  root=$(secret MARIADB_ROOT_PASSWORD)
  [[ -n $root ]] || { echo 'mariadb: MARIADB_ROOT_PASSWORD or MARIADB_ROOT_PASSWORD_FILE is needed' >&2; exit 1; }
  mariadb-install-db --datadir="$DATADIR" --skip-test-db --auth-root-authentication-method=normal --skip-name-resolve >/dev/null
  mariadbd --skip-networking --socket="$SOCKET" &
  for _ in $(seq 60); do mariadb-admin --socket="$SOCKET" -uroot ping >/dev/null 2>&1 && break; sleep 0.5; done
  health=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
  {
    echo "SET @@SESSION.SQL_LOG_BIN=0;"
    echo "DELETE FROM mysql.global_priv WHERE user NOT IN ('mysql', 'mariadb.sys', 'root') OR host NOT IN ('localhost');"
    echo "ALTER USER 'root'@'localhost' IDENTIFIED BY '$root';"
    echo "CREATE USER 'root'@'%' IDENTIFIED BY '$root'; GRANT ALL ON *.* TO 'root'@'%' WITH GRANT OPTION;"
    echo "CREATE USER 'healthcheck'@'localhost' IDENTIFIED BY '$health'; GRANT USAGE ON *.* TO 'healthcheck'@'localhost';"
    if [[ -n ${MARIADB_DATABASE:-} ]]; then echo "CREATE DATABASE IF NOT EXISTS \`$MARIADB_DATABASE\`;"; fi
    if [[ -n ${MARIADB_USER:-} ]]; then
      echo "CREATE USER '$MARIADB_USER'@'%' IDENTIFIED BY '$(secret MARIADB_PASSWORD)';"
      if [[ -n ${MARIADB_DATABASE:-} ]]; then echo "GRANT ALL ON \`$MARIADB_DATABASE\`.* TO '$MARIADB_USER'@'%';"; fi
    fi
    echo "FLUSH PRIVILEGES;"
  } | mariadb --socket="$SOCKET" -uroot
  printf '[mariadb-client]\nsocket=%s\nuser=healthcheck\npassword=%s\n' "$SOCKET" "$health" >"$DATADIR/.my-healthcheck.cnf"
  chmod 600 "$DATADIR/.my-healthcheck.cnf"
  for f in /docker-entrypoint-initdb.d/*.sql; do
    [[ -e $f ]] || continue
    echo "mariadb: running $f"
    MYSQL_PWD="$root" mariadb --socket="$SOCKET" -uroot ${MARIADB_DATABASE:+--database="$MARIADB_DATABASE"} <"$f"
  done
  # the temporary init server this entrypoint started above, inside its own container (as the
  # official image does), never a server of the machine
  MYSQL_PWD="$root" mariadb-admin --socket="$SOCKET" -uroot shutdown
  wait
  echo 'mariadb: init process done; ready for start up.'
fi
exec "$@"
