#!/usr/bin/env bash
# Installs the haste clients of cmd/pastebin/testdata/haste-clients (npm packages that nobody here
# wrote, at the versions and integrity hashes its package-lock.json pins) into .pastebin/haste-clients,
# once per lock file, and prints that folder. Node.js and npm come from Debian when missing (apt-get as
# root, else through sudo). make test runs it before the tests; TestHasteClientsFromNPM runs it too.
#   scripts/ensure-haste-clients.sh
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
src=$root/cmd/pastebin/testdata/haste-clients
dir=$root/.pastebin/haste-clients

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
    echo "ensure-haste-clients: need root to run: $*" >&2; return 1; fi
}

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "ensure-haste-clients: node or npm is missing; installing Debian's nodejs and npm" >&2
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs npm >&2
fi

stamp=$(cat "$src/package.json" "$src/package-lock.json" | sha256sum | cut -d' ' -f1)
if [ "$(cat "$dir/.installed" 2>/dev/null)" != "$stamp" ] || [ ! -d "$dir/node_modules" ]; then
  rm -rf "$dir"
  mkdir -p "$dir"
  cp "$src/package.json" "$src/package-lock.json" "$dir/"
  # npm ci installs exactly the lock file, checking each package's integrity; no install scripts run.
  (cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error) >&2
  echo "$stamp" >"$dir/.installed"
fi
echo "$dir"
