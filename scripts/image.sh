#!/usr/bin/env bash
# Builds the pastebin's container image (Containerfile) with podman, and runs podman with the
# settings this machine allows.
#
#   scripts/image.sh build           build localhost/pastebin:<version> (tagged :latest too); print its name
#   scripts/image.sh context         only stage bin/image/ (the static binary, the CA bundle), for
#                                    `docker build -f Containerfile .` or `docker compose build`
#   scripts/image.sh name            print the image's name
#   scripts/image.sh podman ARGS...  run podman with the settings the last build found to work
#
# <version> is `git describe --tags --always --dirty` ("dev" outside a git checkout). The binary is
# built here with CGO_ENABLED=0 and copied with the machine's CA bundle onto an empty base: nothing
# is pulled, so the build works offline.
#
# podman is Debian's package, installed with apt-get when missing (scripts/services.sh tool podman).
# Its defaults assume a desktop: crun, and RLIMIT_NOFILE and RLIMIT_NPROC set in every container.
# Where the machine refuses them (a sandbox that denies setrlimit, crun on hybrid cgroups) no
# container starts at all. So `build` starts the new image once with the machine's own settings and,
# if that fails, with settings that ask less: runc, the cgroupfs manager and no default ulimits (a
# container keeps the limits podman has). It says on stderr which it chose. The settings are kept in
# .pastebin/podman/containers.conf, which `podman` passes as CONTAINERS_CONF, and which a podman
# run by hand needs just the same.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
action=${1:?usage: image.sh <build|context|name|podman> [args...]}
shift

repo=localhost/pastebin
stage="$root/bin/image"
conf_dir="$root/.pastebin/podman"
conf="$conf_dir/containers.conf"
chosen="$conf_dir/chosen" # "machine" or "conf": the settings under which the last build's image ran

log() { echo "image: $*" >&2; }

version() { git -C "$root" describe --tags --always --dirty 2>/dev/null || echo dev; }

# stage_context puts in bin/image/ what the Containerfile copies, and only that (.dockerignore).
stage_context() {
  local ca=/etc/ssl/certs/ca-certificates.crt
  [ -s "$ca" ] || { log "$ca is missing: install Debian's ca-certificates"; return 1; }
  rm -rf "$stage"
  mkdir -p "$stage/rootfs/etc/ssl/certs" "$stage/rootfs/var/lib" "$stage/state"
  (cd "$root" && CGO_ENABLED=0 "${GO:-go}" build -trimpath -ldflags='-s -w' -o "$stage/rootfs/pastebin" ./cmd/pastebin)
  cp "$ca" "$stage/rootfs/etc/ssl/certs/ca-certificates.crt"
  chmod -R u=rwX,go=rX "$stage"
}

# build_image builds the image; its dates are the commit's, so one commit builds one image ID.
build_image() {
  local name=$1 epoch revision
  epoch=$(git -C "$root" log -1 --format=%ct 2>/dev/null || echo 0)
  revision=$(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)
  podman build --quiet --pull=never --file "$root/Containerfile" --timestamp "$epoch" \
    --build-arg VERSION="${name##*:}" --build-arg REVISION="$revision" \
    --build-arg CREATED="$(date -u -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ)" \
    --tag "$name" --tag "$repo:latest" "$root" >/dev/null
  # Earlier builds that no tag names any more (:latest moved on) are only disk space.
  podman image prune --force --filter label=org.opencontainers.image.title=pastebin >/dev/null
}

write_conf() {
  cat >"$conf" <<'CONF'
# Written by scripts/image.sh: podman's defaults start no container on this machine.
[containers]
default_ulimits = []

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
CONF
}

# starts reports whether the image starts (its help) with the settings in the environment.
starts() { podman run --rm --network none --read-only "$1" help >/dev/null 2>"$conf_dir/trial.log"; }

choose_settings() {
  local image=$1 why
  mkdir -p "$conf_dir"
  if starts "$image"; then
    echo machine >"$chosen"
    return 0
  fi
  why=$(grep -m 1 . "$conf_dir/trial.log" || true)
  write_conf
  if CONTAINERS_CONF="$conf" starts "$image"; then
    echo conf >"$chosen"
    log "podman's defaults start no container here ($why);"
    log "using runc, the cgroupfs manager and no default ulimits instead: CONTAINERS_CONF=$conf"
    return 0
  fi
  log "no container starts here: with podman's defaults \"$why\", with $conf:"
  cat "$conf_dir/trial.log" >&2
  return 1
}

case "$action" in
  build)
    "$root/scripts/services.sh" test tool podman >/dev/null
    name="$repo:$(version)"
    stage_context
    build_image "$name"
    choose_settings "$name"
    echo "$name" ;;
  context) stage_context ;;
  name) echo "$repo:$(version)" ;;
  podman)
    [ -f "$chosen" ] || { log "run scripts/image.sh build first: it finds the settings podman needs here"; exit 2; }
    if [ "$(cat "$chosen")" = conf ]; then export CONTAINERS_CONF="$conf"; fi
    exec podman "$@" ;;
  *) log "unknown action $action (want build, context, name or podman)"; exit 2 ;;
esac
