#!/usr/bin/env bash
# API keys and CORS (docs/SECURITY.md): every route with no key, wrong keys
# and the right ones (401 / 401 / 200; the public routes 200), OpenAI's 401
# body, keys from --api-key and --api-key-file, no key (right or wrong) in the
# server's log, preflights answered for the allowed origin only, /metrics
# public only with --metrics-public; bad key flags refused at startup. Then
# the injection case: control-token text in every message field stays text
# (/apply-template's ids, a chat request's prompt_tokens).
source "$(dirname "$0")/lib.sh"
fail() { echo "FAIL: $*"; echo "--- server log"; tail -20 "$SERVER_LOG"; exit 1; }
PY=/usr/bin/python3
K1=sk-test-7f3a9c1e55d04b2a
K2=file-key-0b8e4d6a
printf '# keys for the test\n\n  %s  \n# another comment\n' "$K2" > "$TMP/keys"
ORIGIN=http://app.example:8443

start_server -m models/fixture-target.gguf -t 1 -c 1024 --parallel 1 --api-key "$K1" --api-key-file "$TMP/keys" \
  --cors-origin "$ORIGIN"
$PY tests/server/security_client.py auth "$BASE" "$K1" "$K2" 0 "$ORIGIN" || fail "auth"
$PY tests/server/security_client.py inject "$BASE" "$K1" || fail "inject"
curl -s -H "Authorization: Bearer $K1" "$BASE/metrics" > "$TMP/metrics"
grep -q '^specdec_refused_total{reason="auth"} [1-9]' "$TMP/metrics" || fail "401s not counted"
grep -q '^specdec_refused_total{reason="cors"} [1-9]' "$TMP/metrics" || fail "refused preflights not counted"
stop_server "$SERVER_PID"
grep -q 'POST /v1/chat/completions 401' "$SERVER_LOG" || fail "the access log has no 401 lines: the check below would see nothing"
for k in "$K1" "$K2" "${K1}x" "${K1%?}"; do
  if grep -qF -- "$k" "$SERVER_LOG"; then fail "a key (or a guess) is in the server's log"; fi
done
echo "ok  no key, right or wrong, in the server's log ($(wc -l < "$SERVER_LOG") lines)"

start_server -m models/fixture-target.gguf -t 1 -c 1024 --parallel 1 --api-key "$K1" --metrics-public
code=$(curl -s -o /dev/null -w '%{http_code}' "$BASE/metrics")
[ "$code" = 200 ] || fail "--metrics-public: GET /metrics without a key: $code"
code=$(curl -s -o /dev/null -w '%{http_code}' "$BASE/props")
[ "$code" = 401 ] || fail "--metrics-public: GET /props without a key: $code"
code=$(curl -s -o /dev/null -w '%{http_code}' -X OPTIONS -H "Origin: $ORIGIN" "$BASE/v1/models")
[ "$code" = 403 ] || fail "no --cors-origin: a preflight got $code, want 403"
echo "ok  --metrics-public opens /metrics only; without --cors-origin every preflight is refused"
stop_server "$SERVER_PID"

# Without keys every route is open (the default, for 127.0.0.1).
start_server -m models/fixture-target.gguf -t 1 -c 1024 --parallel 1
code=$(curl -s -o /dev/null -w '%{http_code}' "$BASE/v1/models")
[ "$code" = 200 ] || fail "no keys: GET /v1/models $code"
$PY tests/server/security_client.py inject "$BASE" || fail "inject without keys"
stop_server "$SERVER_PID"

# Bad key flags: refused at startup (exit 2), the key text not printed.
printf '# only a comment\n\n' > "$TMP/empty"
printf 'good-key\nbad key with spaces\n' > "$TMP/spaced"
for args in "--api-key-file $TMP/empty" "--api-key-file $TMP/nonexistent" "--api-key-file $TMP/spaced" "--api-key ''"; do
  rc=0; eval "\"$BIN\" serve -m models/fixture-target.gguf $args" > "$TMP/out" 2>&1 || rc=$?
  [ "$rc" = 2 ] || fail "serve $args: exit $rc, want 2: $(cat "$TMP/out")"
  if grep -q 'bad key with spaces\|good-key' "$TMP/out"; then fail "serve $args printed a key"; fi
  echo "ok  serve $args: exit 2: $(head -1 "$TMP/out")"
done

# The chat page asks for the key (headless chromium; tests/server/page_auth.mjs).
need_node_modules
command -v chromium >/dev/null || { echo "chromium missing: run scripts/deps.sh --test"; exit 1; }
start_server -m models/fixture-target.gguf -t 1 -c 1024 --parallel 1 --api-key "$K1"
node tests/server/page_auth.mjs "$BASE" "$K1" || fail "the chat page with a key"
stop_server "$SERVER_PID"
