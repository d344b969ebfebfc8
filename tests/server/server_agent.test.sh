#!/usr/bin/env bash
# A Chat Completions coding agent from npm (opencode-ai) pointed at `specdec
# serve` on a fixture with a context long enough for its prompt (-c 32768):
# its run finishes (exit 0) and every request it made was answered 200 (it
# sends `tools` with each one; before tool calls existed here they were a 501).
# opencode-ai (~350 MB: its two linux-x64 binaries) is pinned by
# tests/agent/package-lock.json, which only `scripts/deps.sh --test` installs;
# $OPENCODE names another binary.
#
# The run needs no network: opencode's OpenAI-compatible provider
# (@ai-sdk/openai-compatible) is built into its binary; the package it would
# npm-install into its config directory on a first run (@opencode-ai/plugin) is
# pinned in tests/agent and that directory is pre-seeded with it; the
# models.dev catalogue fetch, auto-update, default plugins and LSP downloads
# are turned off. A hang anywhere is bounded by the timeout on the run.
source "$(dirname "$0")/lib.sh"
# Under the sanitizers (SD_ASAN, a Debug build ~100x slower) opencode's prompts
# (about 800 and 2,900 tokens) take over 5 minutes to prefill on one thread;
# the request paths it drives (tools, streaming) run there in server_tools.test.sh.
[ -n "${SD_ASAN:-}" ] && { echo "SKIPPED: under the sanitizers (SD_ASAN) opencode's 2,900-token prompts take over 5 minutes; server_tools.test.sh covers its request paths there"; exit 77; }
AGENT_DIR=$PWD/tests/agent
OC=${OPENCODE:-$AGENT_DIR/node_modules/.bin/opencode}
[ -x "$OC" ] || { echo "SKIPPED: opencode-ai not installed in tests/agent (missing package opencode-ai: scripts/deps.sh --test installs it, or OPENCODE=path)"; exit 77; }
OC=$(realpath "$OC")
start_server -m models/fixture-target.gguf -md models/fixture-draft.gguf -t 1 -c 32768 -n 64 --parallel 1
mkdir -p "$TMP/proj" "$TMP/home/.config/opencode"
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
# opencode skips its install into a config directory that has node_modules and
# a package-lock.json whose root lists every dependency it would add.
if [ -d "$AGENT_DIR/node_modules/@opencode-ai/plugin" ]; then
  cp "$AGENT_DIR/package.json" "$AGENT_DIR/package-lock.json" "$TMP/home/.config/opencode/"
  ln -s "$AGENT_DIR/node_modules" "$TMP/home/.config/opencode/node_modules"
fi
echo "hello" > "$TMP/proj/README.txt"
rc=0
(cd "$TMP/proj" && HOME="$TMP/home" XDG_CONFIG_HOME= XDG_DATA_HOME= XDG_CACHE_HOME= XDG_STATE_HOME= \
   OPENCODE_DISABLE_MODELS_FETCH=1 OPENCODE_DISABLE_AUTOUPDATE=1 OPENCODE_DISABLE_DEFAULT_PLUGINS=1 \
   OPENCODE_DISABLE_LSP_DOWNLOAD=1 OPENCODE_DISABLE_SHARE=1 OPENCODE_DISABLE_CLAUDE_CODE=1 \
   timeout -k 10 300 "$OC" run -m specdec/fixture "List the files in this directory.") \
  >"$TMP/agent.out" 2>"$TMP/agent.err" </dev/null || rc=$?
n=$(grep -c 'POST /v1/chat/completions' "$SERVER_LOG" || true)
bad=$(grep 'POST /v1/chat/completions' "$SERVER_LOG" | grep -v ' 200 ' || true)
echo "opencode exit $rc; $n chat requests"
grep 'POST /v1/chat/completions' "$SERVER_LOG"
log=$(ls "$TMP"/home/.local/share/opencode/log/*.log 2>/dev/null | head -1)
[ "$rc" = 0 ] || { echo "opencode failed:"; tail -20 "$TMP/agent.err"; [ -n "$log" ] && tail -20 "$log"; exit 1; }
[ "$n" -ge 1 ] || { echo "opencode made no chat request"; tail -20 "$TMP/agent.err"; exit 1; }
[ -z "$bad" ] || { echo "requests not answered 200: $bad"; exit 1; }
# nothing was installed from the network during the run
if [ -n "$log" ] && grep -qiE 'npm.?install|reify|background dependency install' "$log"; then
  echo "opencode installed packages during the run:"; grep -iE 'npm.?install|reify|background dependency install' "$log"; exit 1
fi
stop_server "$SERVER_PID"
