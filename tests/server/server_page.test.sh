#!/usr/bin/env bash
# The chat page at GET / in Debian's headless chromium (tests/server/page.mjs);
# the screenshot is kept as an artifact: $SD_BUILD_DIR/artifacts/chat-page.png.
source "$(dirname "$0")/lib.sh"
need_node_modules
command -v chromium >/dev/null || { echo "chromium missing: run scripts/deps.sh --test"; exit 1; }
start_server -m models/fixture-target.gguf -md models/fixture-draft.gguf -t 1
page=$(curl -sf "$BASE/") || { echo "GET / failed"; exit 1; }
echo "$page" | grep -q 'specdec chat' || { echo "GET / is not the chat page"; exit 1; }
shot=${SD_BUILD_DIR:-build}/artifacts/chat-page.png
node tests/server/page.mjs "$BASE" "$shot" || { echo "--- server log"; tail -20 "$SERVER_LOG"; exit 1; }
[ -s "$shot" ] || { echo "no screenshot"; exit 1; }
stop_server "$SERVER_PID"
