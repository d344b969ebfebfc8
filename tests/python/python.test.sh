#!/usr/bin/env bash
# The Python package (python/specdec) over the shared library, against the
# command line on the fixture pair: streamed text and tokens equal `specdec
# generate`'s (greedy, and sampling at temperature 0.8 with a seed), the
# lossless check reported as the CLI reports it, a missing model raising the
# package's exception with the CLI's message, tokenize equal to `specdec
# tokenize` and detokenize its byte-exact inverse (tests/python/check_specdec.py).
# Then `pip install --no-build-isolation` of python/ works offline and the
# installed copy runs. Debian's /usr/bin/python3 when present, else python3.
set -euo pipefail
bin=${SD_SPECDEC_BIN:?}
build=${SD_BUILD_DIR:?}
src=${SD_SOURCE_DIR:?}
. "$src/tests/support/checks.sh"
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3 || true)
[ -n "$PY" ] || { echo "SKIPPED: python3 not found (missing package python3)"; exit 77; }
lib=$build/libspecdec.so
[ -e "$lib" ] || { fail "no $lib (the specdec_shared target)"; finish; }
export SPECDEC_LIB=$lib
# A sanitizer build's library needs its runtimes loaded first in a program
# that was not built with them (python): preload what the library links.
asan=$(ldd "$lib" | awk '/libasan|libubsan/ {print $3}' | tr '\n' ':')
if [ -n "$asan" ]; then
  export LD_PRELOAD=${asan%:} ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
fi

T=models/fixture-target.gguf D=models/fixture-draft.gguf
prompt=$'def parse(path):\n    """Read the file at path and return its lines."""\n    # über'
n=48
gen() { "$bin" generate -m "$T" -md "$D" -p "$prompt" -n $n -t 1 --spec auto "$@"; }
for s in greedy:0 sample:0.8 penal:0.8; do
  name=${s%%:*} temp=${s#*:}
  pen=()
  [ "$name" = penal ] && pen=(--presence-penalty 0.7 --frequency-penalty 0.4 --repeat-penalty 1.3 --repeat-last-n 32)
  gen --temp "$temp" --seed 7 "${pen[@]}" --no-check >"$tmp/$name.txt" 2>/dev/null || fail "generate --temp $temp failed"
  gen --temp "$temp" --seed 7 "${pen[@]}" --no-check --json >"$tmp/$name.json" 2>/dev/null || fail "generate --json failed"
  # The CLI checks a speculative run by default (deterministic drafts at any temperature).
  gen --temp "$temp" --seed 7 "${pen[@]}" >/dev/null 2>"$tmp/$name.stats" || fail "generate (checked) failed"
done
# A quantized KV cache (--cache-type-k q8_0 --cache-type-v q4_0): the package's cache_type_k/_v give these bytes.
gen --temp 0 -ctk q8_0 -ctv q4_0 --no-check >"$tmp/kvq.txt" 2>/dev/null || fail "generate -ctk q8_0 -ctv q4_0 failed"
"$bin" generate -m models/missing.gguf -p x 2>"$tmp/missing.err" >/dev/null && fail "a missing model did not fail"
"$bin" tokenize -m "$T" -p "$prompt" >"$tmp/tokenize.txt" || fail "specdec tokenize failed"

PYTHONPATH=$src/python env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT "$PY" tests/python/check_specdec.py "$T" "$D" "$prompt" "$n" "$tmp" ||
  fail "check_specdec.py: $? checks failed"

# The first Python example of README.md and of docs/PYTHON.md, as they stand:
# each runs and ends with a LOSSLESS stats line.
for doc in README.md docs/PYTHON.md; do
  awk '/^```python/ {code = 1; next} code && /^```/ {exit} code' "$doc" >"$tmp/example.py"
  [ "$(wc -l <"$tmp/example.py")" -ge 4 ] || fail "no Python example in $doc"
  PYTHONPATH=$src/python "$PY" "$tmp/example.py" >"$tmp/example.out" 2>&1 || fail "$doc's example failed: $(cat "$tmp/example.out")"
  tail -n 1 "$tmp/example.out" | grep -Eq 'LOSSLESS ([0-9]+)/\1$' || fail "$doc's example: no LOSSLESS line: $(tail -n 1 "$tmp/example.out")"
done

# Offline install from a copy (setuptools builds in the source tree), then the
# installed package, found through --target's directory, generates the same text.
cp -r "$src/python" "$tmp/pkg"
rm -rf "$tmp/pkg/specdec/__pycache__"
if "$PY" -m pip --version >/dev/null 2>&1; then
  if "$PY" -m pip install --no-build-isolation --no-index --no-deps --no-cache-dir --target "$tmp/site" \
      "$tmp/pkg" >"$tmp/pip.log" 2>&1; then
    got=$(cd "$tmp" && PYTHONPATH=$tmp/site "$PY" -c '
import sys, specdec
assert specdec.__file__.startswith(sys.argv[1]), specdec.__file__
llm = specdec.LLM(sys.argv[2], draft_path=sys.argv[3])
sys.stdout.write("".join(llm.stream(sys.argv[4], n_predict=int(sys.argv[5]), seed=7)))
' "$tmp/site" "$src/$T" "$src/$D" "$prompt" "$n") || fail "the pip-installed package does not run"
    [ "$got" = "$(cat "$tmp/greedy.txt")" ] || fail "the pip-installed package's text differs from the CLI's"
  else
    cat "$tmp/pip.log"
    fail "pip install --no-build-isolation python/ failed"
  fi
else
  fail "$PY has no pip (Debian: apt-get install python3-pip) to check pip install python/"
fi
finish
