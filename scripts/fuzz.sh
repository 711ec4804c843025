#!/usr/bin/env bash
# Runs every Go fuzz target in the module, one after the other, each for a while.
#   scripts/fuzz.sh [fuzztime] [target-regexp]
# fuzztime is go test's -fuzztime: a count of inputs (4000x, the short run of make test, and the
# default here) or a duration (1m, 10m). In Go 1.26 a duration's deadline can race the fuzz
# coordinator and fail a target that found nothing with "context deadline exceeded"
# (golang/go#75804, fixed in Go 1.27): a count has no deadline to race. target-regexp picks
# targets by name, as -run does: scripts/fuzz.sh 1000000x FuzzDecodeJSON.
#
# Most targets are pure; FuzzRouter (api) sends its requests through the whole server over the test
# services, so run this with them up: make fuzz and make test do (scripts/with-services.sh test).
# Interesting inputs go to GOCACHE's fuzz cache, where go test -fuzz finds them too. An input that fails is written to the package's
# testdata/fuzz/<Fuzz...>/ under a 16-hex-digit name, which git ignores: fix the bug, rename the
# file to say what it catches, and commit it as a seed.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
GO=${GO:-go}
fuzztime=${1:-4000x}
only=${2:-.}
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
cache=$("$GO" env GOCACHE)/fuzz

failed=()
ran=0
start=$SECONDS
# Only packages with a Fuzz function in their tests (skipping what go skips: .*, _*, testdata); the
# test binary then lists the exact names.
for dir in $(grep -rlE --include='*_test.go' --exclude-dir='.*' --exclude-dir='_*' --exclude-dir=testdata \
	'^func Fuzz[A-Z0-9_]' "$root" | xargs -r -n1 dirname | sort -u); do
	pkg=$("$GO" list -f '{{.ImportPath}}' "$dir")
	# One instrumented binary per package, run once per target: go test -fuzz links it anew each time,
	# which takes longer than a short run itself.
	"$GO" test -c -fuzz=. -o "$bin/fuzz.test" "$dir"
	for name in $(cd "$dir" && "$bin/fuzz.test" -test.list '^Fuzz' | grep -E -- "$only" || true); do
		echo "== $name ($pkg, $fuzztime)"
		ran=$((ran + 1))
		if ! (cd "$dir" && "$bin/fuzz.test" -test.run '^$' -test.fuzz "^$name\$" -test.fuzztime "$fuzztime" \
			-test.fuzzcachedir "$cache/$pkg" -test.timeout 0); then
			failed+=("$name ($pkg)")
		fi
	done
done
echo "== $ran fuzz targets in $((SECONDS - start))s"
if [ "$ran" -eq 0 ]; then
	echo "no fuzz target matches $only" >&2
	exit 1
fi
if [ ${#failed[@]} -gt 0 ]; then
	printf 'fuzz target failed: %s\n' "${failed[@]}" >&2
	echo "inputs in testdata/fuzz not committed (a failing one has a hex name):" >&2
	git status --short --untracked-files=all --ignored -- '*/testdata/fuzz/*' >&2 2>/dev/null || true
	exit 1
fi
