#!/usr/bin/env bash
# Installs Debian's prometheus package, which ships promtool, when promtool is missing: with apt-get
# as root, else through sudo. make test checks the shipped alerting rules with it
# (deploy/prometheus); that test fails, never skips, without it.
#   scripts/ensure-promtool.sh        (PASTEBIN_PROMTOOL names another promtool binary to expect)
set -euo pipefail
if [ -n "${PASTEBIN_PROMTOOL:-}" ]; then [ -x "$PASTEBIN_PROMTOOL" ] && exit 0; fi
command -v promtool >/dev/null && exit 0

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
    echo "ensure-promtool: need root to run: $*" >&2; return 1; fi
}

echo "ensure-promtool: promtool is missing; installing Debian's prometheus package" >&2
as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
# Only promtool is wanted: policy-rc.d keeps the package from starting a Prometheus server.
policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' | as_root tee "$policy" >/dev/null && as_root chmod +x "$policy"
  trap 'as_root rm -f "$policy"' EXIT
fi
as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >&2
command -v promtool >/dev/null || { echo "ensure-promtool: promtool is still missing after the install" >&2; exit 1; }
