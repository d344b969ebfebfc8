#!/usr/bin/env bash
# Tool calls (tools, tool_choice, parallel_tool_calls, role "tool") through
# the official openai npm client against `specdec serve` on the fixture
# models: the model's template (Hermes-style calls) and --chat-template
# qwen35 (Qwen3.5's XML calls). tests/server/tools_client.mjs says what is checked.
source "$(dirname "$0")/lib.sh"
need_node_modules
# Under the sanitizers (SD_ASAN, ~100x slower) the XML syntax only: its parser path is the longer one.
syntaxes=(hermes xml)
[ -n "${SD_ASAN:-}" ] && syntaxes=(xml)
for t in "${syntaxes[@]}"; do
  args=()
  [ "$t" = xml ] && args=(--chat-template qwen35)
  start_server -m models/fixture-target.gguf -md models/fixture-draft.gguf -t 1 "${args[@]}"
  node tests/server/tools_client.mjs "$BASE" "$t" || { echo "--- server log"; tail -20 "$SERVER_LOG"; exit 1; }
  stop_server "$SERVER_PID"
done
