#!/usr/bin/env bash
# Runs a command with the private services of a profile up, and stops afterwards those it started.
# It says first which services the command uses (scripts/services.sh used): for make run (the run
# profile), the user's own where PASTEBIN_DATABASE_URL or PASTEBIN_REDIS_URL is set.
#   scripts/with-services.sh <profile> <command...>
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
profile=$1; shift
started=$("$root/scripts/services.sh" "$profile" up)
stop() { [ -z "$started" ] || "$root/scripts/services.sh" "$profile" down $started; }
trap stop EXIT
trap 'exit 130' INT TERM
# shellcheck disable=SC2086
"$root/scripts/services.sh" "$profile" used $started
eval "$("$root/scripts/services.sh" "$profile" env)"
"$@"
