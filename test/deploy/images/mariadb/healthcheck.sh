#!/usr/bin/env bash
# The official mariadb image's healthcheck.sh, the two tests docker-compose.yml uses:
#   --connect              the server accepts TCP connections (a refusal of the login or of
#                          plain text still counts: the server answered)
#   --innodb_initialized   InnoDB is up (as the healthcheck user, over the Unix socket)
set -uo pipefail
readonly CNF=/var/lib/mysql/.my-healthcheck.cnf
for t in "$@"; do
  case $t in
  --connect)
    mariadb --no-defaults --skip-ssl -h 127.0.0.1 --protocol=tcp -u healthcheck -e 'select 1' 2>&1 | grep -qF "Can't connect" && exit 1 ;;
  --innodb_initialized)
    [[ $(mariadb --defaults-extra-file="$CNF" -N -B -e "select 1 from information_schema.ENGINES where engine = 'innodb' and support in ('YES', 'DEFAULT', 'ENABLED')" 2>/dev/null) == 1 ]] || exit 1 ;;
  *) echo "healthcheck.sh: this stand-in knows --connect and --innodb_initialized, not $t" >&2; exit 2 ;;
  esac
done
exit 0
