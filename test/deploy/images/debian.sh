#!/usr/bin/env bash
# test/deploy/images/debian.sh minbase|standard: a Debian 12 (bookworm) image made from Debian's
# packages alone (debootstrap, then `docker import`), tagged msgx-standin/debian:bookworm-<variant>.
#   minbase   the base of the stand-in images (test/deploy/images/*/Dockerfile): as small as
#             Debian's own docker image;
#   standard  a fresh Debian 12 machine as the installer leaves it without a desktop (required and
#             important packages): the machine of test/deploy/fresh-machine.test.ts.
# Kept while its inputs (this file, the variant) hash the same: label msgx.inputs.
# Needs root, debootstrap and the Docker engine. apt reaches deb.debian.org over http (signed
# indices), so no CA is needed here.
set -euo pipefail
variant=${1:?usage: debian.sh minbase|standard}
[[ $variant == minbase || $variant == standard ]] || { echo "debian.sh: minbase or standard, not $variant" >&2; exit 2; }
readonly MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
tag="msgx-standin/debian:bookworm-$variant"
inputs=$( { cat "${BASH_SOURCE[0]}"; echo "$variant $MIRROR"; } | sha256sum | cut -c1-16)
if [[ $(docker image inspect -f '{{index .Config.Labels "msgx.inputs"}}' "$tag" 2>/dev/null) == "$inputs" ]]; then
  echo "debian.sh: $tag is current ($inputs)" >&2
  exit 0
fi
root=$(mktemp -d /var/tmp/msgx-debian.XXXXXX)
trap 'rm -rf "$root"' EXIT
args=(--variant=minbase)
[[ $variant == standard ]] && args=()
echo "debian.sh: debootstrap bookworm ($variant) into $root" >&2
debootstrap "${args[@]}" bookworm "$root" "$MIRROR" >"$root.log" 2>&1 || { tail -20 "$root.log" >&2; rm -f "$root.log"; exit 1; }
rm -f "$root.log"
cat >"$root/etc/apt/sources.list" <<EOF
deb $MIRROR bookworm main
deb $MIRROR bookworm-updates main
deb http://deb.debian.org/debian-security bookworm-security main
EOF
if [[ $variant == minbase ]]; then
  # as Debian's docker images: no documentation, no recommends, apt's lists not kept
  printf 'path-exclude /usr/share/doc/*\npath-include /usr/share/doc/*/copyright\npath-exclude /usr/share/man/*\npath-exclude /usr/share/info/*\npath-exclude /usr/share/locale/*\n' >"$root/etc/dpkg/dpkg.cfg.d/docker"
  printf 'APT::Install-Recommends "false";\n' >"$root/etc/apt/apt.conf.d/docker-no-recommends"
  printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d" # packages never start services in a build
  chmod 755 "$root/usr/sbin/policy-rc.d"
  rm -rf "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/* "$root"/usr/share/locale/*
fi
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/archives/*.deb
tar -C "$root" -c . | docker import --change "LABEL msgx.inputs=$inputs" --change 'CMD ["bash"]' - "$tag" >/dev/null
echo "debian.sh: made $tag ($inputs)" >&2
