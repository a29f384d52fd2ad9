#!/usr/bin/env bash
# Build the controller image from ./Dockerfile with buildah, with no container registry.
#
#   tools/build_image.sh            (or: make image; needs root; installs debootstrap, buildah
#                                    and runc from Debian if missing)
#
# CONTEXT=DIR builds DIR/Dockerfile instead (IMAGE names it), and ARCHIVE=PATH also writes the
# image as an oci-archive there, for `jobset dev --load-image PATH`: examples/jax-train/README.md.
#
# 1. A Debian bookworm root filesystem (debootstrap minbase + python3, python3-venv and
#    python-is-python3: what the Dockerfile's stages run) is made once and cached as a tarball
#    under .cache/image/. The Debian mirror is the one this machine's apt uses, read at run time
#    from /etc/apt/sources.list(.d); DEBIAN_MIRROR overrides it.
# 2. The tarball becomes an image in buildah's local storage under the name the Dockerfile's
#    FROM lines use (python:3.11-slim-bookworm, the default of its BASE_IMAGE build arg, a
#    digest dropped: the stand-in has its own): a local stand-in, labelled with the tarball's
#    checksum, re-made only when the tarball changes, and passed as BASE_IMAGE. Nothing is
#    pulled (--pull=never).
# 3. `buildah bud --isolation chroot --network host --layers` builds the Dockerfile from the
#    working tree and tags it IMAGE (default ghcr.io/jobset-py/jobset:<version in pyproject>).
#    pip in the build step reaches the package index over the host network, configured like
#    this machine's pip (`pip config list`: http(s) index URLs, timeouts, the CA bundle to
#    trust), read at run time and bind-mounted read-only as /etc/xdg/pip for the RUN steps
#    only: it is in no layer of the image, and no index host is written in the repository.
#
# Every step is skipped when its result is already there, so a second run takes seconds.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CONTEXT="$(cd "${CONTEXT:-$REPO}" && pwd)"
CACHE="${JOBSET_IMAGE_CACHE:-$REPO/.cache/image}"
SUITE=bookworm
PACKAGES=python3,python3-venv,python-is-python3
VERSION="$(sed -n 's/^version = "\(.*\)"/\1/p' "$REPO/pyproject.toml" | head -1)"
IMAGE="${IMAGE:-ghcr.io/jobset-py/jobset:$VERSION}"
PYTHON="${PYTHON:-python3}"

log() { printf '[build_image %s] %s\n' "$(date +%T)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

[ "$(id -u)" = 0 ] || die "needs root (debootstrap and buildah's chroot isolation)"

need=()
command -v debootstrap >/dev/null || need+=(debootstrap)
command -v buildah >/dev/null || need+=(buildah)
# Not for the build: the OCI runtime `make image-test` runs the image with (buildah's default,
# crun, refuses this machine's hybrid cgroup v1/v2 layout).
command -v runc >/dev/null || need+=(runc)
# debootstrap checks the Release file's signature against Debian's archive keys, never
# trusting the mirror (--force-check-gpg: no fallback to unchecked downloads).
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
[ -s "$KEYRING" ] || need+=(debian-archive-keyring)
if [ ${#need[@]} -gt 0 ]; then
  log "installing ${need[*]} (Debian packages)"
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need[@]}"
fi

# The base the Dockerfile builds FROM: the one image name its FROM lines use (stage names aside),
# `${ARG}` replaced by that ARG's default in the Dockerfile (`ARG BASE_IMAGE=...`).
BASE="$(awk '
  toupper($1)=="ARG" { i = index($2, "="); if (i) args[substr($2, 1, i - 1)] = substr($2, i + 1) }
  toupper($1)=="FROM" {
    ref = $2
    if (ref ~ /^\$\{?[A-Za-z_][A-Za-z0-9_]*\}?$/) { gsub(/[${}]/, "", ref); ref = args[ref] }
    print ref
  }' "$CONTEXT/Dockerfile" | sort -u)"
[ "$(printf '%s\n' "$BASE" | wc -l)" = 1 ] && [ -n "$BASE" ] ||
  die "expected one base image in Dockerfile, got: $BASE"
# A digest names a registry's image; the stand-in below is made here and has its own, so it
# goes by the tag alone, and the build is told to use it (--build-arg BASE_IMAGE).
BASE="${BASE%@sha256:*}"
case "$BASE" in
  */*/*) ;;
  */*) BASE="docker.io/$BASE" ;;
  *) BASE="docker.io/library/$BASE" ;;
esac

# --- 1. the root filesystem --------------------------------------------------------------------
debian_mirror() {
  # The first http(s) URI apt uses for Debian's main archive (not -security), deb822 or one-line.
  local f uri
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    uri="$(awk -v suite="$SUITE" '
      /^[[:space:]]*$/ { if (uris != "" && ok) { print uris; exit } uris = ""; ok = 0; next }
      $1 == "URIs:" { uris = $2 }
      $1 == "Suites:" { for (i = 2; i <= NF; i++) if ($i == suite) ok = 1 }
      END { if (uris != "" && ok) print uris }' "$f" | head -1)"
    [ -n "$uri" ] && { echo "$uri"; return; }
  done
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    uri="$(awk -v suite="$SUITE" '$1 == "deb" {
      i = 2; if ($i ~ /^\[/) while ($i !~ /\]$/) i++; if ($i ~ /^\[/ || $i ~ /\]$/) i++
      if ($(i + 1) == suite) { print $i; exit } }' "$f")"
    [ -n "$uri" ] && { echo "$uri"; return; }
  done
}

ARCH="$(dpkg --print-architecture)"
TARBALL="$CACHE/$SUITE-$ARCH-minbase-$(echo "$PACKAGES" | tr , +).tar"
mkdir -p "$CACHE"
if [ ! -s "$TARBALL" ]; then
  MIRROR="${DEBIAN_MIRROR:-$(debian_mirror)}"
  [ -n "$MIRROR" ] || die "no Debian mirror for $SUITE in /etc/apt/sources.list(.d); set DEBIAN_MIRROR"
  ROOT="$(mktemp -d "$CACHE/rootfs.XXXXXX")"
  trap 'rm -rf "$ROOT" "$TARBALL.tmp"' EXIT
  log "debootstrap $SUITE ($ARCH, minbase + $PACKAGES) from apt's mirror"
  start=$SECONDS
  debootstrap --keyring="$KEYRING" --force-check-gpg \
    --variant=minbase --arch="$ARCH" --include="$PACKAGES" "$SUITE" "$ROOT" "$MIRROR" \
    >"$CACHE/debootstrap.log" 2>&1 || { tail -20 "$CACHE/debootstrap.log" >&2; die "debootstrap failed"; }
  # What a container image does not carry: apt's downloads and lists, device nodes, logs.
  chroot "$ROOT" apt-get clean
  rm -rf "$ROOT"/var/lib/apt/lists/* "$ROOT"/var/log/* "$ROOT"/var/cache/debconf/*-old \
    "$ROOT"/dev/* "$ROOT"/proc/* "$ROOT"/sys/* "$ROOT"/run/* "$ROOT"/tmp/* \
    "$ROOT"/usr/share/doc/* "$ROOT"/usr/share/man/* "$ROOT"/usr/share/info/* "$ROOT"/usr/share/locale/*
  tar --numeric-owner --xattrs -C "$ROOT" -cf "$TARBALL.tmp" .
  mv "$TARBALL.tmp" "$TARBALL"
  rm -rf "$ROOT"
  trap - EXIT
  log "rootfs: $(du -h "$TARBALL" | cut -f1) in $((SECONDS - start)) s -> ${TARBALL#"$REPO"/}"
fi

# --- 2. the base image ------------------------------------------------------------------------
SUM="$(sha256sum "$TARBALL" | cut -c1-16)"
have="$(buildah inspect --type image --format '{{index .ImageAnnotations "org.jobset-py.rootfs"}}' \
  "$BASE" 2>/dev/null || true)"
if [ "$have" != "$SUM" ]; then
  log "importing the rootfs as $BASE (a local stand-in for the Dockerfile's base)"
  ctr="$(buildah from --pull=never scratch)"
  buildah add --quiet "$ctr" "$TARBALL" / >/dev/null
  buildah config --os linux --arch "$ARCH" \
    --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin --env LANG=C.UTF-8 \
    --cmd python3 --annotation "org.jobset-py.rootfs=$SUM" \
    --label "org.jobset-py.base=debootstrap $SUITE minbase + $PACKAGES" "$ctr"
  buildah commit --quiet --rm "$ctr" "$BASE" >/dev/null
fi

# --- 3. the Dockerfile --------------------------------------------------------------------------
volumes=()
PIPDIR="$CACHE/pip"
# This machine's pip settings that also hold inside the build, as /etc/xdg/pip/pip.conf: http(s)
# indexes (file:// ones and local directories are not in the chroot), timeouts, and the CA
# bundle pip is told to trust (copied next to it: a TLS-inspecting proxy's CA, for instance).
rm -rf "$PIPDIR" && mkdir -p "$PIPDIR"
"$PYTHON" - "$PIPDIR" <<'EOF'
import shutil, subprocess, sys
out = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True).stdout
conf: dict[str, str] = {}
for line in out.splitlines():  # later lines (environment variables) win, as in pip
    key, _, value = line.partition("=")
    name, value = key.split(".", 1)[-1], value.strip().strip("'\"")
    if name in ("index-url", "extra-index-url"):
        value = " ".join(u for u in value.split() if u.startswith(("http://", "https://")))
    elif name == "cert":
        shutil.copyfile(value, f"{sys.argv[1]}/ca.crt")
        value = "/etc/xdg/pip/ca.crt"
    elif name == "default-timeout":
        name = "timeout"
    elif name not in ("timeout", "retries", "trusted-host"):
        continue
    if value:
        conf[name] = value
if conf:
    with open(f"{sys.argv[1]}/pip.conf", "w") as f:
        f.write("[global]\n" + "".join(f"{k} = {v}\n" for k, v in sorted(conf.items())))
EOF
if [ -s "$PIPDIR/pip.conf" ]; then
  log "pip in the build gets: $(sed 1d "$PIPDIR/pip.conf" | cut -d' ' -f1 | tr '\n' ' ')(mounted read-only, in no layer)"
  volumes+=(--volume "$PIPDIR:/etc/xdg/pip:ro")
fi

# Byte code of the working tree is not copied (the build compiles its own); it would only
# defeat the layer cache. Written here, not as a .dockerignore, so `docker build` is unchanged.
printf '%s\n' '**/__pycache__' '**/*.pyc' >"$CACHE/ignore"

log "buildah bud --isolation chroot -t $IMAGE"
start=$SECONDS
previous="$(buildah images --noheading --format '{{.ID}}' "$IMAGE" 2>/dev/null || true)"
buildah bud --isolation chroot --network host --pull=never --layers --force-rm --ignorefile "$CACHE/ignore" "${volumes[@]}" \
  --build-arg "BASE_IMAGE=$BASE" \
  --annotation "org.opencontainers.image.version=$VERSION" \
  -f "$CONTEXT/Dockerfile" -t "$IMAGE" "$CONTEXT"
now="$(buildah images --noheading --format '{{.ID}}' "$IMAGE")"
log "built $IMAGE ($now) in $((SECONDS - start)) s"
# The image the tag moved from (the layer cache of the build stage stays).
if [ -n "$previous" ] && [ "$previous" != "$now" ]; then buildah rmi "$previous" >/dev/null 2>&1 || true; fi
if [ -n "${ARCHIVE:-}" ]; then
  rm -f "$ARCHIVE"
  buildah push --quiet "$IMAGE" "oci-archive:$ARCHIVE:$IMAGE"
  log "wrote $IMAGE as an oci-archive: $ARCHIVE"
fi
