#!/usr/bin/env bash
# Penalties and logit bias through the official openai npm client against
# `specdec serve` on the fixture models (tests/server/penalty_client.mjs says
# what is checked).
source "$(dirname "$0")/lib.sh"
need_node_modules
start_server -m models/fixture-target.gguf -md models/fixture-draft.gguf -t 1
node tests/server/penalty_client.mjs "$BASE" || { echo "--- server log"; tail -20 "$SERVER_LOG"; exit 1; }
stop_server "$SERVER_PID"
