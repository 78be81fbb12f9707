#!/usr/bin/env bash
# Builds kvroute's image (deploy/Dockerfile) with podman on a machine that can pull no image: the
# Debian trixie base is made here with mmdebstrap from Debian's packages and imported, then the
# Dockerfile is built on it. Run as root from anywhere:
#   deploy/image/build.sh [TAG]          (default TAG: localhost/kvroute:<package version>)
# Environment:
#   KVROUTE_EXTRA_CA   a CA bundle the build's npm and cargo trust (default: this machine's bundle,
#                      for a TLS-intercepting proxy; it is a build secret, not in the image)
#   KVROUTE_BASE_TAR   where the base's rootfs tarball is kept (default: deploy/image/.cache/)
#   SOURCE_DATE_EPOCH  the base's and the image's timestamps (default: the last commit's time)
# Needs: apt-get install podman buildah mmdebstrap runc. The podman settings that this kind of
# machine needs (runc, cgroupfs, no default ulimits) are in containers.conf beside this script.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
version="$(node -p "require('$repo/package.json').version")"
tag="${1:-localhost/kvroute:$version}"
suite=trixie
base_tag="localhost/kvroute-base/debian:$suite"
cache="${KVROUTE_BASE_TAR:-$here/.cache/debian-$suite.tar}"
export CONTAINERS_CONF="${CONTAINERS_CONF:-$here/containers.conf}"
export SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(git -C "$repo" log -1 --format=%ct)}"

for tool in podman mmdebstrap runc; do
  command -v "$tool" >/dev/null || { echo "build.sh: $tool is missing: apt-get install podman buildah mmdebstrap runc" >&2; exit 1; }
done

# The base: Debian's minbase and its CA certificates, the same bytes for the same
# SOURCE_DATE_EPOCH and package versions (mmdebstrap's reproducible mode).
if [ ! -f "$cache" ]; then
  mkdir -p "$(dirname "$cache")"
  echo "== making the $suite base with mmdebstrap (a few minutes)"
  mmdebstrap --variant=minbase --include=ca-certificates --aptopt='Acquire::Check-Valid-Until "false"' \
    "$suite" "$cache.part" http://deb.debian.org/debian
  mv "$cache.part" "$cache"
fi
echo "== importing the base as $base_tag"
podman import --change 'CMD ["/bin/bash"]' "$cache" "$base_tag" >/dev/null

extra_ca="${KVROUTE_EXTRA_CA:-/etc/ssl/certs/ca-certificates.crt}"
secret=()
[ -f "$extra_ca" ] && secret=(--secret "id=extra-ca,src=$extra_ca")

echo "== building $tag"
# docker format: OCI images have no HEALTHCHECK. --network host: the build's apt, npm and cargo
# reach the registries the way this machine does.
podman build --format docker --network host --timestamp "$SOURCE_DATE_EPOCH" \
  --build-arg "BASE=$base_tag" "${secret[@]}" \
  -f "$repo/deploy/Dockerfile" -t "$tag" "$repo"
podman image inspect "$tag" --format '{{.Id}} {{.Size}} bytes'
