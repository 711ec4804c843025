#!/usr/bin/env bash
# Runs the whole HTTP API through a validator nobody here wrote: Stoplight Prism's proxy between curl
# and a real `pastebin serve`, which checks every request and answer against openapi.yaml. Every
# operation is called, its errors included (400, 401, 403, 404, 405, 410, 413, 415, 422, 429, 431,
# 451, HEAD), the admin API and the console too, and any disagreement Prism reports is printed.
# Exits non-zero on one.
#
#   make contract          (or: scripts/with-services.sh run scripts/contract.sh)
#
# Not part of make test: it needs Node.js, and fetches @stoplight/prism-cli from the npm registry into
# npm's own cache, never into the project. The server gets a database of its own on the run
# profile's PostgreSQL, dropped at the end, and an embedded S3 store in a temporary folder. The
# server's and Prism's logs land in artifacts/contract/.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
: "${PASTEBIN_DATABASE_URL:?run it with the services up: make contract}"
offset=${PASTEBIN_PORT_OFFSET:-0}
api=127.0.0.1:$((64580 + offset))
proxy=127.0.0.1:$((64581 + offset))
prism_version=${PRISM_VERSION:-5.16.0}
admin=contract-check-admin-token
tmp=$(mktemp -d)
pg_bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
db=contract_$$
base_url=${PASTEBIN_DATABASE_URL%/*} # postgres://postgres@127.0.0.1:<port>
pg_port=${base_url##*:}

cleanup() {
  [ -z "${serve_pid:-}" ] || kill "$serve_pid" 2>/dev/null || true
  [ -z "${prism_pid:-}" ] || kill -- "-$prism_pid" 2>/dev/null || true # npm, its shell and node
  wait 2>/dev/null || true
  "$pg_bin/dropdb" -h 127.0.0.1 -p "$pg_port" -U postgres --if-exists "$db" || true
  mkdir -p "$root/artifacts/contract"
  cp "$tmp/serve.log" "$tmp/prism.log" "$root/artifacts/contract/" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

for addr in $api $proxy; do
  if curl -s -o /dev/null "http://$addr/" 2>/dev/null; then echo "contract: $addr is taken" >&2; exit 1; fi
done
(cd "$root" && go build -o bin/pastebin ./cmd/pastebin)
"$pg_bin/createdb" -h 127.0.0.1 -p "$pg_port" -U postgres "$db"

PASTEBIN_DATABASE_URL="$base_url/$db?sslmode=disable" PASTEBIN_ADDR=$api PASTEBIN_ADMIN_TOKEN=$admin \
  PASTEBIN_REDIS_PREFIX="contract-$$:" PASTEBIN_EMBEDDED_S3_DIR="$tmp/s3" PASTEBIN_MAX_PASTE_SIZE=64KiB \
  PASTEBIN_MAX_HEADER_SIZE=8KiB PASTEBIN_RATE_CREATE=60/1m PASTEBIN_RATE_DELETE_FAILURES=5/1m \
  PASTEBIN_CLEANUP_WORKERS=1 PASTEBIN_LOG_FORMAT=json "$root/bin/pastebin" serve >"$tmp/serve.log" 2>&1 &
serve_pid=$!
(cd "$tmp" && exec setsid npx --yes "@stoplight/prism-cli@$prism_version" proxy "$root/openapi.yaml" "http://$api" \
  --host 127.0.0.1 --port "${proxy##*:}" --cors=false --errors=false) >"$tmp/prism.log" 2>&1 &
prism_pid=$!
for _ in $(seq 600); do
  curl -sf "http://$api/healthz" >/dev/null 2>&1 && curl -s "http://$proxy/healthz" >/dev/null 2>&1 && break
  kill -0 "$serve_pid" 2>/dev/null || { cat "$tmp/serve.log" >&2; exit 1; }
  kill -0 "$prism_pid" 2>/dev/null || { cat "$tmp/prism.log" >&2; exit 1; }
  sleep 0.2
done

calls=0 failures=0
# call WANT WHAT CURL-ARGS... sends one request through the proxy. It fails when the status is not
# WANT or Prism reports a violation (its sl-violations header). The answer's headers are left in
# $tmp/headers. bad is call for a request that breaks the contract on purpose: Prism may report the
# request, but never the answer. direct is call for what Prism 5 cannot carry (say why), sent to the
# server itself, and checked for its status alone.
call() { send any "$@"; }
bad() { send request "$@"; }
direct() {
  local want=$1 what=$2 why=$3; shift 3
  send any "$want" "$what (direct: $why)" "$@"
}
send() {
  local allowed=$1 want=$2 what=$3; shift 3
  local got violations
  got=$(curl -s --max-time 30 -o "$tmp/body" -D "$tmp/headers" -w '%{http_code}' "$@" || true)
  violations=$(tr -d '\r' <"$tmp/headers" | sed -n 's/^sl-violations: //Ip')
  if [ "$allowed" = request ] && [ -n "$violations" ] &&
    [ "$(jq '[.[] | select(.location[0] != "request")] | length' <<<"$violations")" = 0 ]; then
    violations=""
  fi
  calls=$((calls + 1))
  if [ "$got" != "$want" ] || [ -n "$violations" ]; then
    failures=$((failures + 1))
    printf 'FAIL %-56s %s (want %s) %s\n' "$what" "$got" "$want" "$violations"
  else
    printf 'ok   %-56s %s\n' "$what" "$got"
  fi
}
header() { tr -d '\r' <"$tmp/headers" | sed -n "s/^$1: //Ip"; }
headjson="Prism parses the absent body of a HEAD answer as JSON"
# head_error checks the HEAD answer of an error for GET's headers: the problem's type and its length.
head_error() {
  if [ "$(header Content-Type)" != application/problem+json ] || [ "$(header Content-Length)" -lt 1 ]; then
    failures=$((failures + 1)); echo "FAIL   HEAD of an error: not the headers of GET's problem"
  fi
}
p=http://$proxy
html='Accept: text/html,application/xhtml+xml'
json='Content-Type: application/json'
auth() { echo "Authorization: Bearer $1"; }

# Pastes to read, delete and burn. Wrong delete tokens count against one limit, wrong admin tokens
# (bearer and the console's sign-in) against another: the calls that expect 401 or 403 come before
# the one that runs into the first.
create() { curl -s --data-binary "$1" "http://$api/${2:-}"; }
{ read -r url; read -r token; } < <(create 'the contract check')
code=${url##*/}
{ read -r gone_url; read -r gone_token; } < <(create 'deleted at once')
gone=${gone_url##*/}
curl -s -o /dev/null -X DELETE -H "$(auth "$gone_token")" "http://$api/$gone"
burn=$(create 'burns' '?burn=true' | head -n 1); burn=${burn##*/}
burn2=$(create 'burns on its page' '?burn=true' | head -n 1); burn2=${burn2##*/}
{ read -r web_url; read -r web_token; } < <(create 'deleted from its page')
unknown=Zzzzzzzzzzz

echo "== create"
call 201 "POST / raw" --data-binary 'raw body' "$p/?expires_in=1h&title=T&language=go"
call 201 "POST / headers, JSON answer" -H 'Accept: application/json' -H 'Paste-Burn-After-Reading: true' \
  -H 'Paste-Filename: résumé.txt' --data-binary 'with headers' "$p/"
# Every part with its type: Prism 5's multipart parser crashes on a part without one (stoplightio/prism#2672).
call 201 "POST / multipart" -F 'file=@-;filename=notes.md;type=text/markdown' -F 'expires_in=10m;type=text/plain' "$p/" <<<'# notes'
direct 303 "POST / web form" "Prism follows redirects, prism#1977" -H "$html" --data-urlencode 'content=from the form' "http://$api/"
bad 400 "POST / web form, empty" -H "$html" --data-urlencode 'content=' "$p/"
bad 400 "POST / empty" --data-binary '' "$p/"
bad 400 "POST / bad expiry" --data-binary 'x' "$p/?expires_in=soon"
head -c 70000 /dev/zero | tr '\0' a >"$tmp/large"
bad 413 "POST / too large" --data-binary "@$tmp/large" "$p/"
call 201 "PUT /{name}" -T "$root/go.mod" "$p/"
call 201 "POST /api/v1/pastes" -H "$json" -d '{"content":"json","expires_in":3600,"title":null}' "$p/api/v1/pastes"
direct 400 "POST /api/v1/pastes malformed" "Prism never answers JSON that does not parse" -H "$json" -d '{"content":' "http://$api/api/v1/pastes"
bad 400 "POST /api/v1/pastes empty" -H "$json" -d '{"content":""}' "$p/api/v1/pastes"
bad 415 "POST /api/v1/pastes text/plain" -H 'Content-Type: text/plain' -d '{"content":"x"}' "$p/api/v1/pastes"
bad 413 "POST /api/v1/pastes too large" -H "$json" --data-binary "{\"content\":\"$(cat "$tmp/large")\"}" "$p/api/v1/pastes"
key=contract-key-$$-0123456789
call 201 "POST / Idempotency-Key" -H "Idempotency-Key: $key" --data-binary 'once' "$p/"
call 201 "POST / Idempotency-Key replayed" -H "Idempotency-Key: $key" --data-binary 'once' "$p/"
call 422 "POST / Idempotency-Key reused" -H "Idempotency-Key: $key" --data-binary 'other' "$p/"
bad 400 "POST / Idempotency-Key too short" -H 'Idempotency-Key: short' --data-binary 'x' "$p/"
{ read -r rurl; read -r rtoken; } < <(curl -s -H "Idempotency-Key: $key-gone" --data-binary 'replayed after delete' "http://$api/")
curl -s -o /dev/null -X DELETE -H "$(auth "$rtoken")" "$rurl"
call 410 "POST / Idempotency-Key of a deleted paste" -H "Idempotency-Key: $key-gone" --data-binary 'replayed after delete' "$p/"

echo "== read"
call 200 "GET /" "$p/"
call 200 "GET / (browser)" -H "$html" "$p/"
call 200 "GET /{code}" "$p/$code"
etag=$(header ETag)
call 200 "GET /{code} (browser)" -H "$html" "$p/$code"
call 304 "GET /{code} If-None-Match" -H "If-None-Match: $etag" "$p/$code"
call 404 "GET /{code} unknown" "$p/$unknown"
call 410 "GET /{code} deleted" "$p/$gone"
call 410 "GET /{code} deleted (browser)" -H "$html" "$p/$gone"
call 200 "HEAD /{code}" -I "$p/$code"
call 304 "HEAD /{code} If-None-Match" -I -H "If-None-Match: $etag" "$p/$code"
direct 404 "HEAD /{code} unknown" "$headjson" -I "http://$api/$unknown"
head_error
direct 410 "HEAD /{code} deleted" "$headjson" -I "http://$api/$gone"
head_error
call 200 "GET /raw/{code}" "$p/raw/$code"
call 200 "GET /raw/{code}?download" "$p/raw/$code?download"
call 304 "GET /raw/{code} If-None-Match" -H "If-None-Match: $etag" "$p/raw/$code"
call 404 "GET /raw/{code} unknown" "$p/raw/$unknown"
call 410 "GET /raw/{code} deleted" "$p/raw/$gone"
call 200 "HEAD /raw/{code}" -I "$p/raw/$code"
direct 404 "HEAD /raw/{code} unknown" "$headjson" -I "http://$api/raw/$unknown"
head_error
direct 410 "HEAD /raw/{code} deleted" "$headjson" -I "http://$api/raw/$gone"
head_error
call 200 "GET /api/v1/pastes/{code}" "$p/api/v1/pastes/$code"
call 404 "GET /api/v1/pastes/{code} unknown" "$p/api/v1/pastes/$unknown"
call 410 "GET /api/v1/pastes/{code} deleted" "$p/api/v1/pastes/$gone"

echo "== haste clients, edit as new, my pastes"
call 200 "POST /documents" -H 'Content-Type: text/plain' --data-binary 'a haste client' "$p/documents?expires_in=1h"
hkey=$(jq -r .key "$tmp/body")
hburn=$(curl -s -H 'Paste-Burn-After-Reading: true' --data-binary 'haste burn' "http://$api/documents" | jq -r .key)
call 200 "GET /documents/{key}" "$p/documents/$hkey"
call 200 "GET /documents/{key}.js" "$p/documents/$hkey.js"
call 404 "GET /documents/{key} unknown" "$p/documents/$unknown"
call 409 "GET /documents/{key} burn" "$p/documents/$hburn"
bad 400 "POST /documents empty" --data-binary '' "$p/documents"
direct 301 "GET /{code}.js" "Prism follows redirects, prism#1977" "http://$api/$hkey.js"
call 200 "GET /?from={code} (browser)" -H "$html" "$p/?from=$hkey"
call 409 "GET /?from={code} burn (browser)" -H "$html" "$p/?from=$hburn"
call 200 "GET /mine" -H "$html" "$p/mine"

echo "== burn"
call 409 "GET /raw/{code} of a burn paste" "$p/raw/$burn"
call 200 "POST /raw/{code} burns" -X POST "$p/raw/$burn"
call 410 "POST /raw/{code} burned" -X POST "$p/raw/$burn"
call 200 "POST /{code}/burn" -X POST -H "$html" "$p/$burn2/burn"
call 410 "POST /{code}/burn burned" -X POST -H "$html" "$p/$burn2/burn"
direct 303 "POST /{code}/burn not a burn" "Prism follows redirects, prism#1977" -X POST -H "$html" "http://$api/$code/burn"
call 404 "POST /{code}/burn unknown" -X POST "$p/$unknown/burn"

echo "== takedowns, blocked content, audit"
down=$(create 'taken down' | head -n 1); down=${down##*/}
legal=$(create 'taken down for legal reasons' | head -n 1); legal=${legal##*/}
call 200 "DELETE /admin/pastes/{code}" -X DELETE -H "$(auth $admin)" "$p/admin/pastes/$down?reason=spam"
call 200 "DELETE /admin/pastes/{code} again" -X DELETE -H "$(auth $admin)" -H "$json" -d '{"reason":"spam"}' "$p/admin/pastes/$down"
call 410 "GET /raw/{code} taken down" "$p/raw/$down"
call 200 "DELETE /admin/pastes/{code} legal" -X DELETE -H "$(auth $admin)" "$p/admin/pastes/$legal?reason=court+order&legal=true"
call 451 "GET /{code} taken down, legal" "$p/$legal"
call 451 "GET /{code} taken down, legal (browser)" -H "$html" "$p/$legal"
call 451 "GET /api/v1/pastes/{code} taken down, legal" "$p/api/v1/pastes/$legal"
direct 451 "HEAD /raw/{code} taken down, legal" "$headjson" -I "http://$api/raw/$legal"
head_error
bad 400 "DELETE /admin/pastes/{code} without a reason" -X DELETE -H "$(auth $admin)" "$p/admin/pastes/$unknown"
call 404 "DELETE /admin/pastes/{code} unknown" -X DELETE -H "$(auth $admin)" "$p/admin/pastes/$unknown?reason=spam"
hash=$(printf 'blocked content' | sha256sum | cut -c1-64)
call 201 "POST /admin/blocked" -H "$(auth $admin)" -H "$json" -d "{\"content_hash\":\"$hash\",\"reason\":\"spam\"}" "$p/admin/blocked"
call 200 "POST /admin/blocked again" -H "$(auth $admin)" -H "$json" -d "{\"content_hash\":\"$hash\",\"reason\":\"spam\"}" "$p/admin/blocked"
call 451 "POST / blocked content" --data-binary 'blocked content' "$p/"
call 451 "POST /api/v1/pastes blocked content" -H "$json" -d '{"content":"blocked content"}' "$p/api/v1/pastes"
call 200 "GET /admin/blocked" -H "$(auth $admin)" "$p/admin/blocked"
call 200 "DELETE /admin/blocked/{hash}" -X DELETE -H "$(auth $admin)" "$p/admin/blocked/$hash?reason=mistake"
call 200 "GET /admin/audit" -H "$(auth $admin)" "$p/admin/audit?limit=5"

echo "== console"
direct 303 "GET /admin without a session" "Prism follows redirects, prism#1977" -H "$html" "http://$api/admin"
call 200 "GET /admin/sign-in" -H "$html" "$p/admin/sign-in"
call 401 "POST /admin/sign-in wrong token" -H "$html" --data-urlencode 'token=wrong-token-of-some-length' "$p/admin/sign-in"
direct 303 "POST /admin/sign-in" "Prism follows redirects, prism#1977" -H "$html" --data-urlencode "token=$admin" "http://$api/admin/sign-in"
cookie="Cookie: $(header Set-Cookie | sed -n 's/^\(pastebin_admin=[^;]*\).*/\1/p')"
call 200 "GET /admin" -H "$html" -H "$cookie" "$p/admin"
csrf=$(grep -o 'name="csrf" value="[^"]*"' "$tmp/body" | head -n 1 | sed 's/.*value="//; s/"$//' || true)
call 200 "GET /admin/runs" -H "$html" -H "$cookie" "$p/admin/runs"
direct 303 "POST /admin/runs" "Prism follows redirects, prism#1977" -H "$html" -H "$cookie" --data-urlencode "csrf=$csrf" "http://$api/admin/runs"
console_run=$(header Location)
call 200 "GET /admin/runs/{id}" -H "$html" -H "$cookie" "$p$console_run"
call 200 "GET /admin/runs/{id} as JSON" -H 'Accept: application/json' -H "$cookie" "$p$console_run"
bad 403 "POST /admin/runs without the form token" -H "$html" -H "$cookie" --data-urlencode 'csrf=wrong' "$p/admin/runs"
call 200 "GET /admin/takedown" -H "$html" -H "$cookie" "$p/admin/takedown"
victim=$(create 'taken down from the console' | head -n 1)
call 200 "POST /admin/takedown" -H "$html" -H "$cookie" --data-urlencode "csrf=$csrf" --data-urlencode "code=$victim" \
  --data-urlencode 'reason=spam' "$p/admin/takedown"
call 200 "GET /admin/blocked (console)" -H "$html" -H "$cookie" "$p/admin/blocked"
call 200 "POST /admin/blocked (console)" -H "$html" -H "$cookie" --data-urlencode "csrf=$csrf" --data-urlencode "target=$hash" \
  --data-urlencode 'reason=spam' "$p/admin/blocked"
call 200 "POST /admin/blocked/{hash}/unblock" -H "$html" -H "$cookie" --data-urlencode "csrf=$csrf" --data-urlencode "reason=mistake" "$p/admin/blocked/$hash/unblock"
call 200 "GET /admin/audit (console)" -H "$html" -H "$cookie" "$p/admin/audit"
direct 303 "POST /admin/sign-out" "Prism follows redirects, prism#1977" -H "$html" -H "$cookie" --data-urlencode "csrf=$csrf" "http://$api/admin/sign-out"
direct 303 "GET /admin after signing out" "Prism follows redirects, prism#1977" -H "$html" -H "$cookie" "http://$api/admin"

echo "== delete"
bad 400 "POST /{code}/delete no token" -H "$html" --data-urlencode 'token=' "$p/${web_url##*/}/delete"
call 403 "POST /{code}/delete wrong token" -H "$html" --data-urlencode "token=$(printf 'A%.0s' $(seq 43))" "$p/${web_url##*/}/delete"
direct 303 "POST /{code}/delete" "Prism follows redirects, prism#1977" -H "$html" --data-urlencode "token=$web_token" "http://$api/${web_url##*/}/delete"
call 404 "POST /{code}/delete unknown" --data-urlencode "token=$web_token" "$p/$unknown/delete"
bad 401 "DELETE /api/v1/pastes/{code} no token" -X DELETE "$p/api/v1/pastes/$code"
call 404 "DELETE /api/v1/pastes/{code} unknown" -X DELETE -H "$(auth "$token")" "$p/api/v1/pastes/$unknown"
call 204 "DELETE /api/v1/pastes/{code}" -X DELETE -H "$(auth "$token")" "$p/api/v1/pastes/$code"
call 204 "DELETE /{code} again" -X DELETE -H "$(auth "$token")" "$p/$code"
wrong=$(printf 'B%.0s' $(seq 43))
call 403 "DELETE /{code} wrong token" -X DELETE -H "$(auth "$wrong")" "$p/$gone"
for _ in $(seq 20); do
  [ "$(curl -s -o /dev/null -w '%{http_code}' -X DELETE -H "$(auth "$wrong")" "http://$api/$gone")" != 429 ] || break
done
call 429 "DELETE /{code} over the failure limit" -X DELETE -H "$(auth "$wrong")" "$p/$gone"

echo "== operations"
call 200 "GET /healthz" "$p/healthz"
call 200 "GET /readyz" "$p/readyz"
call 200 "GET /metrics" "$p/metrics"
call 200 "GET /openapi.yaml" "$p/openapi.yaml"
call 200 "GET /problems" "$p/problems"
call 200 "GET /problems/{name}" "$p/problems/gone"
call 404 "GET /problems/{name} unknown" "$p/problems/nope"
asset=$(curl -s -H "$html" "http://$api/" | grep -o '/static/[^"]*\.css' | head -n 1)
call 200 "GET /static/{hash}/{name}" "$p$asset"
call 404 "GET /static/{hash}/{name} old hash" "$p/static/0000/app.css"
bad 431 "GET /healthz, headers too large" -H "X-Big: $(head -c 9000 /dev/zero | tr '\0' a)" "$p/healthz"

echo "== admin"
bad 401 "POST /admin/cleanup no token" -X POST "$p/admin/cleanup"
call 401 "POST /admin/cleanup wrong token" -X POST -H "$(auth wrong-token-of-some-length)" "$p/admin/cleanup"
call 202 "POST /admin/cleanup" -X POST -H "$(auth $admin)" "$p/admin/cleanup"
run=$(header Location)
call 200 "GET /admin/cleanup/runs" -H "$(auth $admin)" "$p/admin/cleanup/runs?limit=5"
bad 400 "GET /admin/cleanup/runs limit=0" -H "$(auth $admin)" "$p/admin/cleanup/runs?limit=0"
call 200 "GET /admin/cleanup/runs/{id}" -H "$(auth $admin)" "$p$run"
call 404 "GET /admin/cleanup/runs/{id} unknown" -H "$(auth $admin)" "$p/admin/cleanup/runs/999999"
call 200 "GET /admin/cleanup/backlog" -H "$(auth $admin)" "$p/admin/cleanup/backlog"

echo "== create rate"
for _ in $(seq 80); do
  got=$(curl -s -o /dev/null -w '%{http_code}' --data-binary 'to the limit' "http://$api/")
  [ "$got" != 429 ] || break
done
call 429 "POST / over the create rate" --data-binary 'one too many' "$p/"
call 429 "POST / over the create rate (browser)" -H "$html" --data-urlencode 'content=one too many' "$p/"

echo "== 405: methods the spec does not have, so to the server itself: Allow"
for m in "PATCH /api/v1/pastes" "GET /api/v1/pastes" "POST /healthz"; do
  direct=$(curl -s -o /dev/null -D - -X "${m% *}" "http://$api${m#* }" | tr -d '\r' | sed -n 's/^Allow: //Ip')
  printf '%-4s %-48s Allow: %s\n' "$([ -n "$direct" ] && echo ok || echo FAIL)" "$m (direct)" "$direct"
  [ -n "$direct" ] || failures=$((failures + 1))
done

echo "$calls calls through Prism $prism_version, $failures failures"
[ "$failures" = 0 ]
