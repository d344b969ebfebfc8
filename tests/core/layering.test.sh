#!/usr/bin/env bash
# The layers of src/ only include downward:
#   core < format < numerics < tokenizer < grammar < model < decode < chat < api < server < cli
# Fails, naming the file and include, when a lower layer includes a higher one.
# src/server/ is a front end on the public API (the CLI's `serve` and `chat`
# commands call it): besides "specdec.h" and its own files it may include
# only src/core/'s utilities (string buffer, status codes), never the engine.
set -u
cd "${SD_SOURCE_DIR:-$(dirname "$0")/../..}"
order=(core format numerics tokenizer grammar model decode chat api server cli)
rank() { local i; for i in "${!order[@]}"; do [ "${order[$i]}" = "$1" ] && { echo "$i"; return; }; done; echo -1; }
bad=0; checked=0
for f in $(find src -name '*.[ch]'); do
  layer=$(echo "$f" | cut -d/ -f2); lr=$(rank "$layer")
  while read -r inc; do
    dep=${inc%%/*}; dr=$(rank "$dep"); checked=$((checked+1))
    [ "$dr" -lt 0 ] && [ "$layer" != server ] && continue
    [ "$inc" = specdec.h ] && continue
    if [ "$dr" -gt "$lr" ]; then echo "layering: $f includes \"$inc\" (a higher layer)"; bad=1; fi
    if [ "$layer" = server ] && [ "$dep" != server ] && [ "$dep" != core ]; then
      echo "layering: $f includes \"$inc\" (the server uses only specdec.h and core/)"; bad=1
    fi
  done < <(grep -oE '^#include "[^"]+"' "$f" | sed -E 's/#include "([^"]+)"/\1/')
done
echo "layering: $checked includes checked"
[ "$checked" -gt 0 ] || { echo "layering: no includes found"; exit 1; }
exit $bad
