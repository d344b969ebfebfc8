#!/usr/bin/env bash
# Is a grown model (sd-genmodel --grow) the small model it was grown from?
# Greedy token ids of every bench prompt on SMALL vs GROWN, in specdec and in
# llama.cpp (node-llama-cpp, greedy_ids.mjs), plus specdec vs llama.cpp on
# GROWN. One line per prompt: "same" or the first differing position.
#   bench/grown_parity.sh SMALL.gguf GROWN.gguf [N]      (N = 64 tokens)
#   ENGINES=specdec bench/grown_parity.sh models/fixture-q35-target.gguf cache/models/grown-qwen35-2b-q8_0.gguf
#     (qwen35 hybrids as well as qwen3; at a first difference, bench/vs-llamacpp/near_tie.py SMALL PROMPT N GROWN
#     gives the float64 reference's gap between the two tokens)
# (A "class: NAME" first line is dropped, as specdec bench does.)
# Environment: PROMPTS=bench/prompts, SPECDEC=build/specdec, T=2,
#   ENGINES="specdec llama" (drop one to skip it).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
small=${1:?usage: grown_parity.sh SMALL.gguf GROWN.gguf [N]}; grown=${2:?grown model}; n=${3:-64}
PROMPTS=${PROMPTS:-$root/bench/prompts} SPECDEC=${SPECDEC:-$root/build/specdec} T=${T:-2}
ENGINES=${ENGINES:-specdec llama}
ids() { # engine model prompt-text
  if [ "$1" = specdec ]; then "$SPECDEC" bench -m "$2" -t "$T" --greedy-ids "$3" -n "$n" 2>/dev/null
  else node "$root/bench/vs-llamacpp/greedy_ids.mjs" "$2" "$3" "$n" "$T" 2>/dev/null; fi
}
first_diff() { # ids-a ids-b -> "same" or "differ at i"
  [ "$1" = "$2" ] && { echo same; return; }
  read -ra a <<< "$1"; read -ra b <<< "$2"
  for i in "${!a[@]}"; do [ "${a[$i]}" != "${b[$i]:-}" ] && { echo "differ at $i"; return; }; done
  echo "differ (length)"
}
bad=0
printf '| prompt | %s |\n|---|%s\n' "$(for e in $ENGINES; do printf 'small vs grown, %s | ' "$e"; done; printf 'grown: specdec vs llama.cpp')" \
  "$(for e in $ENGINES; do printf '%s' '---|'; done; printf '%s' '---|')"
for f in "$PROMPTS"/*.txt; do
  text=$(sed "1{/^class:/d}" "$f"); row="| $(basename "$f" .txt) |"; declare -A g=()
  for e in $ENGINES; do
    s=$(ids "$e" "$small" "$text"); g[$e]=$(ids "$e" "$grown" "$text")
    r=$(first_diff "$s" "${g[$e]}"); [ "$r" = same ] || bad=1; row+=" $r |"
  done
  if [[ $ENGINES == *specdec* && $ENGINES == *llama* ]]; then row+=" $(first_diff "${g[specdec]}" "${g[llama]}") |"; else row+=" – |"; fi
  echo "$row"; unset g
done
echo "# $n greedy tokens per prompt; small $small, grown $grown"
exit $bad
