#!/usr/bin/env bash
# A Chat Completions coding agent from npm (opencode-ai) pointed at `specdec
# serve` on a fixture with a context long enough for its prompt (-c 32768):
# its run finishes (exit 0) and every request it made was answered 200 (it
# sends `tools` with each one; before tool calls existed here they were a 501).
# opencode-ai is optional (a ~350 MB npm package whose first run fetches its
# OpenAI-compatible provider from npm): $OPENCODE, or tests/server/node_modules/.bin/opencode.
source "$(dirname "$0")/lib.sh"
OC=${OPENCODE:-tests/server/node_modules/.bin/opencode}
[ -x "$OC" ] || { echo "SKIPPED: opencode-ai not installed (optional npm package: npm install opencode-ai in tests/server, or OPENCODE=path)"; exit 77; }
OC=$(realpath "$OC")
start_server -m models/fixture-target.gguf -md models/fixture-draft.gguf -t 1 -c 32768 -n 64 --parallel 1
mkdir -p "$TMP/proj" "$TMP/home"
cat > "$TMP/proj/opencode.json" <<JSON
{
  "provider": {
    "specdec": {
      "npm": "@ai-sdk/openai-compatible",
      "name": "specdec",
      "options": { "baseURL": "$BASE/v1", "apiKey": "none" },
      "models": { "fixture": { "name": "fixture", "tool_call": true, "limit": { "context": 32768, "output": 64 } } }
    }
  },
  "model": "specdec/fixture",
  "autoupdate": false,
  "share": "disabled"
}
JSON
echo "hello" > "$TMP/proj/README.txt"
rc=0
(cd "$TMP/proj" && HOME="$TMP/home" timeout 600 "$OC" run -m specdec/fixture "List the files in this directory.") \
  >"$TMP/agent.out" 2>"$TMP/agent.err" || rc=$?
n=$(grep -c 'POST /v1/chat/completions' "$SERVER_LOG" || true)
bad=$(grep 'POST /v1/chat/completions' "$SERVER_LOG" | grep -v ' 200 ' || true)
echo "opencode exit $rc; $n chat requests"
grep 'POST /v1/chat/completions' "$SERVER_LOG"
[ "$rc" = 0 ] || { echo "opencode failed:"; tail -20 "$TMP/agent.err"; exit 1; }
[ "$n" -ge 1 ] || { echo "opencode made no chat request"; tail -20 "$TMP/agent.err"; exit 1; }
[ -z "$bad" ] || { echo "requests not answered 200: $bad"; exit 1; }
stop_server "$SERVER_PID"
