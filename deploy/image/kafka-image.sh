#!/usr/bin/env bash
# The Kafka broker's image for the container tests, built here with podman and nothing pulled
# from a container registry (deploy/image/kafka/Containerfile):
#
#   kafka-image.sh build   build jackpot-kafka:<kafka version>-<digest> unless it exists (seconds
#                          when it does; about 20 s when not, on a cached base), print its tag
#   kafka-image.sh tag     print the tag
#
# The digest covers what the image is made of: deploy/image/kafka/*, deploy/local/pom.xml (the
# Kafka version and jars) and the base image's id, so a change to any rebuilds it. Builds are
# serialized by a lock in the cache; a build removes the older jackpot-kafka images.
# Environment: JACKPOT_CACHE (default ~/.cache/jackpot), as image.sh and kafka.sh.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
context="$here/kafka"
pom="$repo/deploy/local/pom.xml"
kafka_version=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$pom")
cache=${JACKPOT_CACHE:-$HOME/.cache/jackpot}
libs="$cache/kafka-$kafka_version/libs"
name=jackpot-kafka
ulimits=(--ulimit nofile=20000:20000 --ulimit nproc=32768:32768)

log() { printf 'kafka-image.sh: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }
podman() { "$here/image.sh" podman "$@"; }

base_tag() { "$here/image.sh" base-tag; }

tag() {
  local base_id
  base_id=$(podman image inspect --format '{{.Id}}' "$(base_tag)" 2>/dev/null) \
    || die "the base image $(base_tag) is missing: image.sh base (make image)"
  local digest
  digest=$( { cat "$context"/* "$pom"; printf '%s\n' "$base_id"; } | sha256sum | cut -c1-12)
  printf '%s:%s-%s\n' "$name" "$kafka_version" "$digest"
}

build() {
  "$here/image.sh" base
  local wanted
  wanted=$(tag)
  if podman image exists "$wanted"; then
    printf '%s\n' "$wanted"
    return 0
  fi
  "$repo/deploy/local/kafka.sh" install
  mkdir -p "$cache/image"
  exec 9>"$cache/image/kafka-image.lock"
  flock 9  # another session building the same image: wait for it, then find it built
  if ! podman image exists "$wanted"; then
    log "building $wanted on $(base_tag) with the jars of $libs"
    local t0=$SECONDS
    podman build --pull=never --network=host "${ulimits[@]}" \
      --build-arg "BASE=$(base_tag)" -v "$libs:/mnt/kafka-libs:ro" \
      -t "$wanted" -f "$context/Containerfile" "$context" >"$cache/image/kafka-build.log" 2>&1 \
      || { tail -n 30 "$cache/image/kafka-build.log" >&2; die "building $wanted failed"; }
    log "built $wanted in $((SECONDS - t0)) s"
    local old
    for old in $(podman images --format '{{.Repository}}:{{.Tag}}' | grep "/$name:" || true); do
      [ "${old#*/}" = "$wanted" ] || podman rmi "$old" >/dev/null 2>&1 || true
    done
  fi
  printf '%s\n' "$wanted"
}

case "${1:-}" in
  build) build ;;
  tag) tag ;;
  *) die "usage: kafka-image.sh build|tag" ;;
esac
