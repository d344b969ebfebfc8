#!/usr/bin/env bash
# Builds one libFuzzer target and runs it for a bounded time.
#   bash fuzz/run.sh SECONDS TARGET       e.g. bash fuzz/run.sh 300 fuzz_gguf
#   bash fuzz/run.sh --smoke [SECONDS]    every target for SECONDS each (default 60): the CI smoke
# TARGET is any fuzz/fuzz_*.c; it is compiled with clang -fsanitize=fuzzer,address,undefined
# together with every library source (src/ except src/cli; *_avx2.c and *_avx512.c get their ISA flags, as in CMakeLists.txt),
# built once into fuzz/out/obj/ and shared by the targets.
# Seeds: if fuzz/seeds_<P>.c exists (P = TARGET without "fuzz_", up to its first "_";
# e.g. seeds_gguf.c for fuzz_gguf and fuzz_gguf_roundtrip) it is built and run once to
# fill the corpus. Corpus: fuzz/corpus-TARGET/ ; binaries and crash files: fuzz/out/TARGET/
# (both git-ignored). Prints the executions and the number of crash files; exit 1 on a crash.
# Dictionary: fuzz/TARGET.dict when it exists. Extra libFuzzer flags: FUZZ_FLAGS (e.g. FUZZ_FLAGS=-runs=10000000 for an execution cap).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = --smoke ]; then
  # Each target in its own run of this script (objects shared, so only the first builds them);
  # all are run even when one fails, and the exit says whether any did.
  secs=${2:-60}; bad=0
  for t in fuzz/fuzz_*.c; do bash "$0" "$secs" "$(basename "${t%.c}")" || bad=1; done
  exit $bad
fi
if [ $# -ne 2 ] || ! [[ $1 =~ ^[0-9]+$ ]]; then
  echo "usage: fuzz/run.sh SECONDS TARGET   (TARGET: $(cd fuzz && ls fuzz_*.c | sed 's/\.c$//' | tr '\n' ' '))" >&2
  exit 2
fi
secs=$1; target=${2%.c}; target=${target#fuzz/}
src=fuzz/$target.c
[ -f "$src" ] || { echo "fuzz/run.sh: no $src" >&2; exit 2; }
out=fuzz/out/$target; corpus=fuzz/corpus-$target
mkdir -p "$out" "$corpus"

lib=()
# The NEON kernels build only for aarch64: left out elsewhere (they would only be skipped).
neon=(); [ "$(uname -m)" = aarch64 ] || neon=(-not -name '*_neon*.c')
while IFS= read -r f; do lib+=("$f"); done < <(find src -name '*.c' -not -path 'src/cli/*' "${neon[@]}" | sort)
# _DEFAULT_SOURCE: some library files use POSIX clocks without a feature macro; gcc's omp.h
# happens to expose them, clang's does not.
common=(-std=c11 -D_DEFAULT_SOURCE -g -O1 -Wall -Wextra -Isrc -Iinclude -Itests -fopenmp -ffp-contract=off)
libs=(-lpcre2-8 -ljansson -lmicrohttpd -lm -lpthread)

# Each library file is compiled on its own (again only when it or a header changed) and the
# objects go into a static archive, so
# the link pulls in only what the target uses. A file clang cannot compile (e.g. a gcc-only
# builtin) is compiled by gcc instead, uninstrumented; one neither can (the NEON kernels on
# x86) is skipped with a warning: a target that needs it then fails to link, by name.
build_lib() {  # $1 = output dir, rest = extra flags; sets $archive
  local dir=$1; shift; mkdir -p "$dir"; local objs=()
  for f in "${lib[@]}"; do
    local o=$dir/$(echo "${f%.c}" | tr / _).o extra=()
    [[ $f == *_avx2.c ]] && extra=(-mavx2 -mfma -mf16c)
    [[ $f == *_avx512.c ]] && extra=(-mavx512f -mavx512bw -mavx512vl -mavx512vnni -mavx2 -mfma -mf16c)
    # up to date: object newer than its source and than every header (make without a makefile)
    if [ -f "$o" ] && [ "$o" -nt "$f" ] && [ -z "$(find src tests -name '*.h' -newer "$o" -print -quit)" ]; then
      objs+=("$o")
    elif clang "${common[@]}" "$@" "${extra[@]}" -c "$f" -o "$o" 2>"$dir/cc.err"; then
      objs+=("$o")
    elif gcc "${common[@]}" "${extra[@]}" -c "$f" -o "$o" 2>>"$dir/cc.err"; then
      # clang cannot (e.g. a gcc-only builtin in the CPU feature probe): gcc's object, without
      # coverage or sanitizers, still links (plain C ABI), so the targets that need it build.
      echo "fuzz: note: $f compiled by gcc (clang: $(grep -m1 'error' "$dir/cc.err"))" >&2
      objs+=("$o")
    else
      echo "fuzz: warning: skipping $f (clang: $(grep -m1 'error' "$dir/cc.err"))" >&2
    fi
  done
  archive=$dir/libspecdec_fuzz.a
  rm -f "$archive"; ar rcs "$archive" "${objs[@]}"
}
echo "fuzz: building $target"
# One lock: targets run at once (or the smoke run) must not write the shared objects together.
exec 9>fuzz/out/.lock
flock 9
build_lib fuzz/out/obj -fsanitize=fuzzer-no-link,address,undefined
clang "${common[@]}" -fsanitize=fuzzer,address,undefined "$src" "$archive" "${libs[@]}" -o "$out/$target"

prefix=${target#fuzz_}; prefix=${prefix%%_*}
if [ -f "fuzz/seeds_$prefix.c" ] && [ -z "$(ls -A "$corpus")" ]; then
  build_lib fuzz/out/obj-seeds 2>/dev/null
  clang "${common[@]}" "fuzz/seeds_$prefix.c" "$archive" "${libs[@]}" -o "$out/seeds_$prefix"
  "$out/seeds_$prefix" "$corpus"
  echo "fuzz: seeded $corpus with $(ls "$corpus" | wc -l) files"
fi

flock -u 9
before=$(ls "$out" | grep -c '^crash-\|^leak-\|^timeout-\|^oom-' || true)
log=$out/fuzz.log
dict=; [ -f "fuzz/$target.dict" ] && dict=fuzz/$target.dict  # tokens the mutator may insert
set +e
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  "$out/$target" "$corpus" -max_total_time="$secs" -max_len=65536 -rss_limit_mb=2048 -timeout=20 \
  -print_final_stats=1 -artifact_prefix="$out/" ${dict:+-dict="$dict"} ${FUZZ_FLAGS:-} >"$log" 2>&1
rc=$?
set -e
after=$(ls "$out" | grep -c '^crash-\|^leak-\|^timeout-\|^oom-' || true)
execs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' || echo "?")
cov=$(grep -oE '(cov|ft): [0-9]+' "$log" | tail -2 | tr '\n' ' ')
echo "fuzz: $target ran ${secs}s: $execs executions, $((after - before)) new crash files ($cov); corpus $(ls "$corpus" | wc -l) files; log $log"
if [ $rc -ne 0 ] || [ "$after" -gt "$before" ]; then
  grep -m5 -E 'ERROR|SUMMARY|check failed' "$log" || true
  ls "$out" | grep -E '^(crash|leak|timeout|oom)-' || true
  exit 1
fi
