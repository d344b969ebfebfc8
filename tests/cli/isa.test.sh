#!/usr/bin/env bash
# The kernel path (instruction set): inspect --cpu names the paths and the one
# in use; generate --isa / SPECDEC_ISA pick one and its stats line names it,
# with the same text on every path; a path this machine lacks is refused with
# one line (exit 2 for the flag, 1 from the model load for the environment).
set -euo pipefail
export OMP_WAIT_POLICY=passive
bin="${SD_SPECDEC_BIN:?}"
model=models/fixture-target.gguf
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

"$bin" inspect --cpu > "$tmp/cpu.txt"
grep -q "^cpu features:" "$tmp/cpu.txt" || { echo "no feature line"; cat "$tmp/cpu.txt"; exit 1; }
grep -qE "^in use: (scalar|avx2|avx512|neon)$" "$tmp/cpu.txt" || { echo "no path in use"; cat "$tmp/cpu.txt"; exit 1; }
paths=$(sed -n 's/^kernel paths: //p' "$tmp/cpu.txt")
avail=() missing=()
for isa in scalar avx2 avx512 neon; do
  if grep -qE "(^| )$isa \(unavailable\)" <<<"$paths"; then missing+=("$isa"); else avail+=("$isa"); fi
done
[ "${#avail[@]}" -ge 1 ] && [ "${avail[0]}" = scalar ] || { echo "scalar must always be available: $paths"; exit 1; }

ref=""
for isa in "${avail[@]}"; do
  "$bin" generate -m "$model" -p "The quick brown fox" -n 12 --spec none --isa "$isa" > "$tmp/out.txt" 2> "$tmp/err.txt"
  grep -q "| isa $isa |" "$tmp/err.txt" || { echo "stats line does not name $isa"; cat "$tmp/err.txt"; exit 1; }
  out=$(cat "$tmp/out.txt")
  [ -z "$ref" ] && ref=$out
  [ "$out" = "$ref" ] || { echo "$isa output differs from ${avail[0]}'s"; exit 1; }
  SPECDEC_ISA=$isa "$bin" generate -m "$model" -p "The quick" -n 2 --spec none 2> "$tmp/err.txt" > /dev/null
  grep -q "| isa $isa |" "$tmp/err.txt" || { echo "SPECDEC_ISA=$isa not used"; cat "$tmp/err.txt"; exit 1; }
done

for isa in "${missing[@]}"; do
  set +e
  "$bin" generate -m "$model" -p "x" -n 2 --isa "$isa" > /dev/null 2> "$tmp/err.txt"; rc=$?
  set -e
  [ "$rc" = 2 ] && [ "$(wc -l < "$tmp/err.txt")" = 1 ] && grep -q "$isa" "$tmp/err.txt" ||
    { echo "--isa $isa: want one line and exit 2, got $rc:"; cat "$tmp/err.txt"; exit 1; }
  set +e
  SPECDEC_ISA=$isa "$bin" generate -m "$model" -p "x" -n 2 > /dev/null 2> "$tmp/err.txt"; rc=$?
  set -e
  [ "$rc" = 1 ] && [ "$(wc -l < "$tmp/err.txt")" = 1 ] && grep -q "SPECDEC_ISA=$isa" "$tmp/err.txt" ||
    { echo "SPECDEC_ISA=$isa: want one line and exit 1, got $rc:"; cat "$tmp/err.txt"; exit 1; }
done
set +e
"$bin" generate -m "$model" -p "x" -n 2 --isa sse9 > /dev/null 2> "$tmp/err.txt"; rc=$?
set -e
[ "$rc" = 2 ] || { echo "--isa sse9 accepted"; exit 1; }
echo "isa: ${avail[*]} agree; refused: ${missing[*]:-none}"
