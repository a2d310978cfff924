#!/usr/bin/env bash
# The official redis image's entrypoint, the part docker-compose.yml uses: arguments starting
# with `-` go to redis-server; as root, own the working folder and run redis-server as redis.
set -euo pipefail
if [[ ${1:-} == -* || ${1:-} == *.conf ]]; then set -- redis-server "$@"; fi
if [[ ${1:-} == redis-server && $(id -u) == 0 ]]; then
  chown -R redis:redis .
  exec setpriv --reuid=redis --regid=redis --init-groups "$0" "$@"
fi
exec "$@"
