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
#   image.sh mirror    print the Debian mirror the base is debootstrapped from (mirror() below)
#   image.sh base-tag  print the base image's tag (deploy/image/kafka-image.sh builds on it)
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

# The Debian suite of the base image, and the mirror debootstrap fetches it from:
# $JACKPOT_DEBIAN_MIRROR when set, else the first Debian mirror of this machine's apt sources, in
# apt's order: /etc/apt/sources.list, then sources.list.d/ by name, one-line entries in *.list
# ("deb [options] URI SUITE COMPONENTS...") and deb822 stanzas in *.sources ("Types: deb",
# "URIs:", "Suites:", "Components:"; "Enabled: no" skipped). A Debian mirror is a "deb" entry of
# a release suite (bookworm, trixie, stable, ...; not -security, -updates, -backports or a
# third-party suite) with the component main; one of bookworm itself comes first. $JACKPOT_APT_DIR (default /etc/apt) is where the sources
# are read (the tests give a folder of their own: tests/unit/test_image_mirror.py).
debian_suite=bookworm
debian_releases='buster|bullseye|bookworm|trixie|forky|sid|oldoldstable|oldstable|stable|testing|unstable'

# "RANK URI" per Debian mirror of one sources file ($1), RANK 1 for $debian_suite, 2 for another
# release.
mirrors_in() {
  local awk_rank='function rank(suite) {
      if (suite == want) return 1
      if (suite ~ "^(" releases ")$") return 2
      return 0
    }'
  case "$1" in
    *.sources)
      awk -v want="$debian_suite" -v releases="$debian_releases" "$awk_rank"'
        function flush(   n, i, s, u, r) {
          if (types ~ /(^|[[:space:]])deb([[:space:]]|$)/ && enabled != "no" \
              && components ~ /(^|[[:space:]])main([[:space:]]|$)/) {
            split(uris, u, /[[:space:]]+/)
            n = split(suites, s, /[[:space:]]+/)
            for (i = 1; i <= n; i++) if ((r = rank(s[i])) > 0) { print r, u[1]; break }
          }
          types = uris = suites = components = enabled = last = ""
        }
        /^[[:space:]]*#/ { next }
        /^[[:space:]]*$/ { flush(); next }
        /^[[:space:]]/ {                       # a continuation line of the field above
          if (last == "uris") uris = uris " " $0
          if (last == "suites") suites = suites " " $0
          if (last == "components") components = components " " $0
          next
        }
        {
          key = tolower(substr($0, 1, index($0, ":") - 1))
          value = substr($0, index($0, ":") + 1)
          gsub(/^[[:space:]]+|[[:space:]]+$/, "", value)
          last = key
          if (key == "types") types = value
          else if (key == "uris") uris = value
          else if (key == "suites") suites = value
          else if (key == "components") components = value
          else if (key == "enabled") enabled = tolower(value)
        }
        END { flush() }' "$1"
      ;;
    *)
      awk -v want="$debian_suite" -v releases="$debian_releases" "$awk_rank"'
        {
          sub(/#.*/, "")
          gsub(/\[[^]]*\]/, " ")               # [arch=amd64 signed-by=...]
          main = 0
          for (i = 4; i <= NF; i++) if ($i == "main") main = 1
          if ($1 == "deb" && $2 ~ /^(https?|file):/ && main && (r = rank($3)) > 0) print r, $2
        }' "$1"
      ;;
  esac
}

mirror() {
  if [ -n "${JACKPOT_DEBIAN_MIRROR:-}" ]; then
    printf '%s\n' "$JACKPOT_DEBIAN_MIRROR"
    return 0
  fi
  local apt=${JACKPOT_APT_DIR:-/etc/apt} file found listed
  local sources=()
  for file in "$apt/sources.list" "$apt"/sources.list.d/*; do
    case "$file" in
      */sources.list | *.list | *.sources)
        if [ -f "$file" ] && [ -r "$file" ]; then sources+=("$file"); fi
        ;;
    esac
  done
  found=$(for file in "${sources[@]}"; do mirrors_in "$file"; done \
    | sort -s -n -k1,1 | awk 'NR == 1 {print $2}')
  if [ -z "$found" ]; then
    listed=${sources[*]}
    [ -n "$listed" ] || listed="none ($apt/sources.list, $apt/sources.list.d/*.list, *.sources)"
    die "no Debian mirror in the apt sources read: $listed; wanted a \"deb\" entry of" \
      "$debian_suite or another Debian release with the component main (not -security," \
      "-updates or a third-party suite). Name one:" \
      "JACKPOT_DEBIAN_MIRROR=http://deb.debian.org/debian"
  fi
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
    log "debootstrap $debian_suite (minbase + python3) from $from"
    debootstrap --variant=minbase --include=python3,python3-venv,python-is-python3 \
      "$debian_suite" "$root" "$from" >"$cache/debootstrap.log" 2>&1 \
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
  base-tag) printf '%s\n' "$base" ;;
  mirror) mirror ;;
  podman) shift; exec podman "${podman_global[@]}" "$@" ;;
  *) die "usage: image.sh base|build|tag|base-tag|mirror|podman ARGS..." ;;
esac
