#!/usr/bin/env bash
# Installs Debian's chromium, which the browser tests in api/ drive, when it is missing: with
# apt-get as root, else through sudo. The tests themselves fail, never skip, without a browser.
#   scripts/ensure-chromium.sh        (PASTEBIN_CHROMIUM names another browser binary to expect)
set -euo pipefail
browser=${PASTEBIN_CHROMIUM:-/usr/bin/chromium}
[ -x "$browser" ] && exit 0

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
    echo "ensure-chromium: need root to run: $*" >&2; return 1; fi
}

echo "ensure-chromium: $browser is missing; installing Debian's chromium" >&2
as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
# A font, so pages and screenshots have glyphs on a minimal system.
as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >&2
[ -x "$browser" ] || { echo "ensure-chromium: $browser is still missing after the install" >&2; exit 1; }
