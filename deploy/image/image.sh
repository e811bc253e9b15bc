#!/usr/bin/env bash
# The OCI image of every service, built and run here without a Docker engine and without pulling
# from a container registry: Debian's podman with runc.
#
#   image.sh base      the base image jackpot-base:bookworm: a Debian bookworm minbase root
#                      filesystem with python3 python3-venv python-is-python3, made by debootstrap
#                      from the Debian mirror this machine's apt uses, then `podman import`ed with
#                      an explicit PATH (cached: the rootfs tarball in $JACKPOT_CACHE/image, the
#                      image in podman's store; a second run returns at once)
#   image.sh build     the unchanged Dockerfile built on that base: jackpot:<version>
#   image.sh tag       print the image's tag
#   image.sh podman ARGS...   podman with the options every run here needs (below)
#
# Gotchas on this machine, all handled here: crun refuses the host's hybrid cgroup layout (runc);
# podman's default container ulimits exceed the host's hard limits (explicit --ulimit); host
# networking, so podman adds no firewall rules. pip in the build verifies certificates with the
# host's CA bundle, bind-mounted read-only for the build only (the host's registry traffic may be
# re-signed by a local CA); it does not end up in the image.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
cache=${JACKPOT_CACHE:-$HOME/.cache/jackpot}/image
version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$repo/pyproject.toml")
base=jackpot-base:bookworm
tag=jackpot:$version
ca_bundle=/etc/ssl/certs/ca-certificates.crt
# The options every podman command here needs, global ones first.
podman_global=(--runtime runc)
ulimits=(--ulimit nofile=20000:20000 --ulimit nproc=32768:32768)

log() { printf 'image.sh: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

# The first Debian mirror of the machine's apt sources (deb822 or one-line format).
mirror() {
  local found
  found=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null | sed -n 's/^URIs:[[:space:]]*\([^[:space:]]*\).*/\1/p' \
    | grep -v security | head -n1 || true)
  if [ -z "$found" ]; then
    found=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null \
      | awk '$1 == "deb" && $0 !~ /security/ {for (i = 2; i <= NF; i++) if ($i ~ /^https?:/) {print $i; exit}}')
  fi
  [ -n "$found" ] || die "no Debian mirror in /etc/apt/sources.list*"
  printf '%s\n' "$found"
}

base() {
  if podman "${podman_global[@]}" image exists "$base"; then
    return 0
  fi
  local tarball="$cache/bookworm-minbase-python3.tar"
  if [ ! -f "$tarball" ]; then
    command -v debootstrap >/dev/null || die "debootstrap is missing: make image-tools"
    local root="$cache/rootfs.partial"
    rm -rf "$root" && mkdir -p "$root"
    local from
    from=$(mirror)
    log "debootstrap bookworm (minbase + python3) from $from"
    debootstrap --variant=minbase --include=python3,python3-venv,python-is-python3 \
      bookworm "$root" "$from" >"$cache/debootstrap.log" 2>&1 \
      || die "debootstrap failed; see $cache/debootstrap.log"
    rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
    tar -C "$root" --numeric-owner -cf "$tarball.partial" .
    mv "$tarball.partial" "$tarball"
    rm -rf "$root"
  fi
  log "importing $tarball as $base"
  podman "${podman_global[@]}" import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["python3"]' "$tarball" "$base" >/dev/null
}

build() {
  base
  [ -f "$ca_bundle" ] || die "no CA bundle at $ca_bundle"
  log "building $tag on $base"
  podman "${podman_global[@]}" build --pull=never --network=host "${ulimits[@]}" \
    --build-arg "PYTHON_IMAGE=$base" \
    -v "$ca_bundle:$ca_bundle:ro" \
    -t "$tag" -f "$repo/Dockerfile" "$repo"
}

case "${1:-}" in
  base) base ;;
  build) build ;;
  tag) printf '%s\n' "$tag" ;;
  podman) shift; exec podman "${podman_global[@]}" "$@" ;;
  *) die "usage: image.sh base|build|tag|podman ARGS..." ;;
esac
