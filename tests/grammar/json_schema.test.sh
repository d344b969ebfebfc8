#!/usr/bin/env bash
# The JSON Schema -> GBNF converter against independent references, over
# random schema/document pairs (tests/grammar/json_schema_fuzz.py): accepted
# documents parse strictly and validate with Debian's python3-jsonschema
# (format checking on), valid documents in the canonical form are accepted;
# and integer / number bounds are exact (json_schema_ranges.py).
# Acceptance: tests/grammar/gbnf_ref.py, a reference reader of the grammar,
# and the grammar engine (sd_grammar_accepts), which must agree on every document.
# SD_JSON_SCHEMA_N sets the number of random schemas (default 720: about
# 10,000 pairs, under a minute on one core).
set -euo pipefail
cd "${SD_SOURCE_DIR:-$(dirname "$0")/../..}"
BUILD=${SD_BUILD_DIR:-build}
CONV=$BUILD/sd-json_schema_check
PY=/usr/bin/python3
[ -x "$CONV" ] || { echo "json_schema.test.sh: $CONV not built"; exit 1; }
if ! "$PY" -c 'import jsonschema, pyrfc3339' 2>/dev/null; then
  echo "json_schema.test.sh: python3-jsonschema / python3-rfc3339 missing (scripts/deps.sh --test): skipped"
  exit 77
fi
"$PY" tests/grammar/json_schema_ranges.py "$CONV" 120 1
"$PY" tests/grammar/json_schema_fuzz.py --engine "$CONV" "${SD_JSON_SCHEMA_N:-720}" 7
