#!/usr/bin/env bash
# Runs a command with the private services of a profile up, and stops afterwards those it started.
#   scripts/with-services.sh <profile> <command...>
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
profile=$1; shift
started=$("$root/scripts/services.sh" "$profile" up)
stop() { [ -z "$started" ] || "$root/scripts/services.sh" "$profile" down $started; }
trap stop EXIT
trap 'exit 130' INT TERM
eval "$("$root/scripts/services.sh" "$profile" env)"
"$@"
