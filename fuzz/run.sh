#!/usr/bin/env bash
# Builds one libFuzzer target and runs it for a bounded time.
#   bash fuzz/run.sh SECONDS TARGET       e.g. bash fuzz/run.sh 300 fuzz_gguf
#   bash fuzz/run.sh --smoke [SECONDS]    every target for SECONDS each (default 60): the CI smoke
# TARGET is any fuzz/fuzz_*.c; it is compiled with clang -fsanitize=fuzzer,address,undefined
# together with every library source (src/ except src/cli; *_avx2.c and *_avx512.c get their ISA flags, as in CMakeLists.txt,
# and no sanitizers: the targets run with SPECDEC_ISA=scalar),
# built once into fuzz/out/obj/ (FUZZ_JOBS files at a time, default nproc) and shared by the targets:
# a target's own build is then only its own source and the link.
# Seeds: if fuzz/seeds_<P>.c exists (P = TARGET without "fuzz_", up to its first "_";
# e.g. seeds_gguf.c for fuzz_gguf and fuzz_gguf_roundtrip) it is built (against the same
# objects) and run once to fill the corpus. Corpus: fuzz/corpus-TARGET/ ; binaries and crash files: fuzz/out/TARGET/
# (both git-ignored). Prints the executions and the number of crash files; exit 1 on a crash.
# Dictionary: fuzz/TARGET.dict when it exists. Extra libFuzzer flags: FUZZ_FLAGS (e.g. FUZZ_FLAGS=-runs=10000000 for an execution cap).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = --smoke ]; then
  # The library objects are built once, FUZZ_JOBS at a time; then the targets run FUZZ_JOBS
  # at once (each libFuzzer process is one thread), each for SECONDS on its own core, so the
  # whole takes about the build plus ceil(targets / FUZZ_JOBS) x SECONDS. Every target is run
  # even when one fails; each one's summary is printed, and the exit says whether any failed.
  secs=${2:-60}; jobs=${FUZZ_JOBS:-$(nproc)}; bad=0; names=()
  mkdir -p fuzz/out; rm -f fuzz/out/smoke-*.log fuzz/out/smoke-*.rc
  start=$(date +%s)
  bash "$0" --build-lib || exit 1
  for t in fuzz/fuzz_*.c; do
    name=$(basename "${t%.c}"); names+=("$name")
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
    ( rc=0; bash "$0" "$secs" "$name" >"fuzz/out/smoke-$name.log" 2>&1 || rc=$?
      echo $rc >"fuzz/out/smoke-$name.rc" ) &
  done
  wait
  for name in "${names[@]}"; do
    cat "fuzz/out/smoke-$name.log"
    [ "$(cat "fuzz/out/smoke-$name.rc" 2>/dev/null)" = 0 ] || { echo "fuzz: $name FAILED" >&2; bad=1; }
  done
  echo "fuzz: smoke of ${#names[@]} targets (${secs}s each, $jobs at once) took $(( $(date +%s) - start ))s"
  exit $bad
fi
build_only=0; [ "${1:-}" = --build-lib ] && build_only=1
if [ $build_only = 0 ] && { [ $# -ne 2 ] || ! [[ $1 =~ ^[0-9]+$ ]]; }; then
  echo "usage: fuzz/run.sh SECONDS TARGET   (TARGET: $(cd fuzz && ls fuzz_*.c | sed 's/\.c$//' | tr '\n' ' '))" >&2
  exit 2
fi

lib=()
# The NEON kernels build only for aarch64: left out elsewhere (they would only be skipped).
neon=(); [ "$(uname -m)" = aarch64 ] || neon=(-not -name '*_neon*.c')
while IFS= read -r f; do lib+=("$f"); done < <(find src -name '*.c' -not -path 'src/cli/*' "${neon[@]}" | sort)
# _DEFAULT_SOURCE: some library files use POSIX clocks without a feature macro; gcc's omp.h
# happens to expose them, clang's does not.
common=(-std=c11 -D_DEFAULT_SOURCE -g -O1 -Wall -Wextra -Isrc -Iinclude -Itests -fopenmp -ffp-contract=off)
san=(-fsanitize=fuzzer-no-link,address,undefined)
libs=(-lpcre2-8 -ljansson -lmicrohttpd -lm -lpthread)

# compile_one SRC OBJ: a file clang cannot compile (e.g. a gcc-only builtin) is compiled by
# gcc instead, uninstrumented; one neither can (the NEON kernels on x86) is skipped with a
# warning (no object): a target that needs it then fails to link, by name.
# The ISA kernels (*_avx2.c, *_avx512.c) are compiled without sanitizers or coverage: under
# them their intrinsics take minutes each to compile (most of the build), and the targets run
# with SPECDEC_ISA=scalar, so the kernels that do run are the portable, instrumented ones
# (the ISA kernels are checked under ASan by scripts/test.sh --asan, on every path).
compile_one() {
  local f=$1 o=$2 extra=() sanf=("${san[@]}")
  [[ $f == *_avx2.c ]] && extra=(-mavx2 -mfma -mf16c) sanf=()
  [[ $f == *_avx512.c ]] && extra=(-mavx512f -mavx512bw -mavx512vl -mavx512vnni -mavx2 -mfma -mf16c) sanf=()
  rm -f "$o"
  if clang "${common[@]}" "${sanf[@]}" "${extra[@]}" -c "$f" -o "$o" 2>"$o.err"; then
    :
  elif gcc "${common[@]}" "${extra[@]}" -c "$f" -o "$o" 2>>"$o.err"; then
    # gcc's object, without coverage or sanitizers, still links (plain C ABI).
    echo "fuzz: note: $f compiled by gcc (clang: $(grep -m1 'error' "$o.err"))" >&2
  else
    rm -f "$o"; echo "fuzz: warning: skipping $f (clang: $(grep -m1 'error' "$o.err"))" >&2
  fi
  rm -f "$o.err"
}

# Each library file is compiled on its own (again only when it or a header changed), up to
# FUZZ_JOBS at once, with the sanitizers and coverage of the targets; the objects go into a
# static archive, so the link pulls in only what a target (or a seeds program) uses.
build_lib() {  # $1 = output dir; sets $archive
  local dir=$1 jobs=${FUZZ_JOBS:-$(nproc)} objs=() f o
  mkdir -p "$dir"
  # a header newer than an object makes every object stale (make without a makefile)
  local newest_h; newest_h=$(find src tests -name '*.h' -printf '%T@ %p\n' | sort -n | tail -1 | cut -d' ' -f2-)
  # the longest compiles first, so none is the tail of the build: the ISA kernels, then the
  # rest largest first
  local order=(); while IFS= read -r f; do order+=("$f"); done < <(
    printf '%s\n' "${lib[@]}" | grep -E '_avx(2|512)\.c$' | xargs -r ls -S
    printf '%s\n' "${lib[@]}" | grep -vE '_avx(2|512)\.c$' | xargs -r ls -S)
  for f in "${order[@]}"; do
    o=$dir/$(echo "${f%.c}" | tr / _).o
    if ! { [ -f "$o" ] && [ "$o" -nt "$f" ] && { [ -z "$newest_h" ] || [ "$o" -nt "$newest_h" ]; }; }; then
      while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
      compile_one "$f" "$o" &
    fi
  done
  wait
  for f in "${lib[@]}"; do
    o=$dir/$(echo "${f%.c}" | tr / _).o
    [ -f "$o" ] && objs+=("$o")
  done
  archive=$dir/libspecdec_fuzz.a
  rm -f "$archive"; ar rcs "$archive" "${objs[@]}"
}
# One lock: targets run at once (or the smoke run) must not write the shared objects together.
mkdir -p fuzz/out
exec 9>fuzz/out/.lock
flock 9
if [ $build_only = 1 ]; then
  t0=$(date +%s); build_lib fuzz/out/obj
  echo "fuzz: library objects up to date ($(( $(date +%s) - t0 ))s)"
  exit 0
fi
secs=$1; target=${2%.c}; target=${target#fuzz/}
src=fuzz/$target.c
[ -f "$src" ] || { echo "fuzz/run.sh: no $src" >&2; exit 2; }
out=fuzz/out/$target; corpus=fuzz/corpus-$target
mkdir -p "$out" "$corpus"
echo "fuzz: building $target"
build_lib fuzz/out/obj
clang "${common[@]}" -fsanitize=fuzzer,address,undefined "$src" "$archive" "${libs[@]}" -o "$out/$target"

prefix=${target#fuzz_}; prefix=${prefix%%_*}
if [ -f "fuzz/seeds_$prefix.c" ] && [ -z "$(ls -A "$corpus")" ]; then
  # against the sanitized objects: the coverage hooks have weak no-op definitions in the
  # sanitizer runtime, so no second, plain build of the library is needed
  clang "${common[@]}" -fsanitize=address,undefined "fuzz/seeds_$prefix.c" "$archive" "${libs[@]}" -o "$out/seeds_$prefix"
  ASAN_OPTIONS=detect_leaks=0 "$out/seeds_$prefix" "$corpus"
  echo "fuzz: seeded $corpus with $(ls "$corpus" | wc -l) files"
fi

flock -u 9
before=$(ls "$out" | grep -c '^crash-\|^leak-\|^timeout-\|^oom-' || true)
log=$out/fuzz.log
dict=; [ -f "fuzz/$target.dict" ] && dict=fuzz/$target.dict  # tokens the mutator may insert
set +e
SPECDEC_ISA=scalar ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
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
