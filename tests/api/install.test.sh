#!/usr/bin/env bash
# The library as an outside program sees it: `cmake --install` into a fresh
# prefix, then examples/stream.c compiled with nothing but pkg-config's flags
# for that prefix, linked against the shared library and against the static
# one, and run on the fixture target. Its text must equal what
# `specdec generate` prints for the same prompt and settings (greedy, n-gram
# drafting), and the shared library must export only specdec_* symbols.
# Under the ASan build the installed specdec.pc carries -fsanitize itself.
set -euo pipefail
bin=${SD_SPECDEC_BIN:?}
build=${SD_BUILD_DIR:?}
. "${SD_SOURCE_DIR:?}/tests/support/checks.sh"
T=models/fixture-target.gguf
prefix=$tmp/prefix

cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" || { cat "$tmp/install.log"; exit 1; }
for f in bin/specdec include/specdec.h; do [ -e "$prefix/$f" ] || fail "not installed: $f"; done
pc=$(find "$prefix" -name specdec.pc | head -n 1)
[ -n "$pc" ] || { fail "no specdec.pc installed"; finish; }
libdir=$(dirname "$(dirname "$pc")")
for f in libspecdec.a libspecdec.so; do [ -e "$libdir/$f" ] || fail "not installed: $libdir/$f"; done
export PKG_CONFIG_PATH=$(dirname "$pc")

# Only the public API leaves the shared library.
# (nm's output held first: `nm | grep -q` under pipefail fails when grep quits
# early and nm, still writing, dies of SIGPIPE)
exported=$(nm -D --defined-only "$libdir/libspecdec.so" | awk '{print $3}')
others=$(grep -v '^specdec_' <<<"$exported" || true)
[ -z "$others" ] || fail "libspecdec.so exports non-API symbols: $(echo $others | head -c 300)"
grep -qx 'specdec_generate' <<<"$exported" || fail "specdec_generate not exported"

# Shared: pkg-config alone; the loader finds the library through LD_LIBRARY_PATH.
cc -std=c11 -Wall -Wextra -Werror examples/stream.c -o "$tmp/stream_shared" $(pkg-config --cflags --libs specdec) ||
  { fail "the example does not build against the shared library"; finish; }
# Static: the archive by path, the rest of the link line from pkg-config --static.
cc -std=c11 -Wall -Wextra -Werror examples/stream.c -o "$tmp/stream_static" $(pkg-config --cflags specdec) \
  "$libdir/libspecdec.a" $(pkg-config --static --libs specdec | sed 's/ -lspecdec\b//') ||
  { fail "the example does not build against the static library"; finish; }
readelf -d "$tmp/stream_static" | grep -q 'libspecdec' && fail "the static example still needs libspecdec.so"

prompt=$'def add(a, b):\n    return a + b\n\ndef sub(a, b):'
"$bin" generate -m "$T" -p "$prompt" -n 32 -t 1 --spec ngram --no-check >"$tmp/cli.txt" 2>/dev/null
printf '\n' >>"$tmp/cli.txt" # the example ends its text with a newline
for kind in shared static; do
  rc=0
  LD_LIBRARY_PATH=$libdir OMP_NUM_THREADS=1 "$tmp/stream_$kind" "$T" "$prompt" 32 >"$tmp/$kind.txt" 2>"$tmp/$kind.err" || rc=$?
  [ "$rc" = 0 ] || { fail "$kind example exited $rc: $(cat "$tmp/$kind.err")"; continue; }
  cmp -s "$tmp/cli.txt" "$tmp/$kind.txt" || fail "$kind example's text differs from specdec generate's"
  grep -q "32 generated tokens, drafter auto (ngram)" "$tmp/$kind.err" || fail "$kind example stats: $(cat "$tmp/$kind.err")"
done
# A missing model is an error message, not a crash.
rc=0
LD_LIBRARY_PATH=$libdir "$tmp/stream_shared" "$tmp/none.gguf" >/dev/null 2>"$tmp/err" || rc=$?
[ "$rc" = 1 ] && grep -q "^error: $tmp/none.gguf" "$tmp/err" || fail "missing model: rc $rc, $(cat "$tmp/err")"
finish
