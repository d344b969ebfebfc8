#!/usr/bin/env bash
# Makes the realistic-shape models used for speed measurements into
# cache/models/ (git-ignored), skipping files that exist:
#   SHAPE:TYPE         random weights (ARCHITECTURE.md §9.3), cache/models/SHAPE-TYPE.gguf
#   grown-SHAPE:TYPE   a trained fixture grown to SHAPE (sd-genmodel --grow, same
#                      function): models/fixture-draft.gguf for SHAPE=draft, else
#                      models/fixture-target.gguf; cache/models/grown-SHAPE-TYPE.gguf
#                      SHAPE=qwen35-0.8b|2b|9b|27b: the hybrid models/fixture-q35-target.gguf;
#                      SHAPE=qwen35-draft: models/fixture-q35-draft.gguf in the qwen35-0.8b shape.
#                      SHAPE=qwen35-35b-a3b-L4|qwen35-35b-a3b: the same hybrid as a qwen35moe
#                      (256 experts, top-8; tools/grow/grow_moe.c); -L4 is 4 layers (4.5 GB
#                      at q8_0), the full 40-layer shape takes 23 GB even at q4_k: check
#                      free -g and df before asking for it.
#                      Before each grown file: its size (sd-genmodel --dry-run), the free
#                      disk and an estimated time; it refuses when the disk lacks the
#                      size + 2 GB, and shows the file growing while it is written.
#   SHAPE:TYPE+XTYPE   one of the *-a3b MoE shapes (qwen3-30b-a3b[-L4], qwen35-35b-a3b[-L4]) whose
#                      ffn_*_exps tensors are XTYPE and the rest TYPE (as a Q3_K_M file mixes
#                      types; SHAPE:TYPE alone: all TYPE). These shapes draw their expert rows
#                      from a pool of 4096 (sd-genmodel --expert-pool): minutes, not half an hour.
#   bench/models.sh qwen3-30b-a3b:q4_k+q3_k qwen35-35b-a3b:q4_k+q3_k    (13.4 / 15.7 GB, ~2.5 / 3.5 min)
#   bench/models.sh qwen3-30b-a3b:q4_k+iq2_xxs qwen3-30b-a3b:q4_k+iq3_xxs qwen35-35b-a3b:q4_k+iq3_s
#                   (experts in an importance-matrix type as the low-bit files have them; pool of 256 rows)
#   bench/models.sh                 # the default set below
#   bench/models.sh qwen3-0.6b:q8_0 grown-draft:q8_0 ...
#   bench/models.sh qwen35-0.8b:q8_0 qwen35-0.8b:q4_k qwen35-2b:q8_0 qwen35-draft:q8_0   (Qwen3.5 hybrids)
#   bench/models.sh grown-qwen35-27b:q4_k grown-qwen35-draft:q8_0     (~14.6 GB + 0.8 GB, ~3 min)
#   bench/models.sh grown-qwen35-35b-a3b-L4:q8_0                      (~4.5 GB, ~1 min)
# Needs the sd-genmodel tool: cmake --build build --target sd-genmodel
set -euo pipefail
cd "$(dirname "$0")/.."
gen=${SD_BUILD_DIR:-build}/sd-genmodel
[ -x "$gen" ] || { echo "models.sh: $gen not built (cmake --build build --target sd-genmodel)" >&2; exit 1; }
mkdir -p cache/models
specs=("$@")
[ ${#specs[@]} -gt 0 ] || specs=(qwen3-0.6b:q8_0 qwen3-0.6b:q4_k draft:q8_0 draft:q4_k
  grown-qwen3-0.6b:q8_0 grown-draft:q8_0 grown-qwen3-0.6b:q4_k grown-draft:q4_k
  qwen35-0.8b:q8_0 qwen35-0.8b:q4_k qwen35-draft:q8_0 qwen35-draft:q4_k)
for spec in "${specs[@]}"; do
  shape=${spec%%:*} type=${spec#*:}
  out=cache/models/$shape-$type.gguf
  if [ -s "$out" ]; then echo "models.sh: $out exists"; continue; fi
  case $shape in
    grown-qwen35-*)
      small=models/fixture-q35-target.gguf gshape=${shape#grown-}
      [ "$gshape" = qwen35-draft ] && small=models/fixture-q35-draft.gguf gshape=qwen35-0.8b
      gb=$("$gen" --grow "$small" --shape "$gshape" --type "$type" --dry-run 2>&1 | sed -n 's/.*the file will take \([0-9.]*\) GB.*/\1/p')
      [ -n "$gb" ] || { echo "models.sh: cannot plan $spec" >&2; exit 1; }
      free_gb=$(df -k --output=avail cache/models/ | tail -1 | awk '{printf "%.1f", $1 / 1e6}')
      # ~100 MB/s measured for sd-genmodel --grow (quantize + write) on a 2-core VM
      echo "models.sh: $out will take $gb GB of disk ($free_gb GB free) and about $(awk -v g="$gb" 'BEGIN{printf "%.0f", g * 10 + 5}') s"
      awk -v g="$gb" -v f="$free_gb" 'BEGIN{exit !(f < g + 2)}' && { echo "models.sh: not enough disk for $out" >&2; exit 1; }
      "$gen" --grow "$small" --shape "$gshape" --type "$type" -o "$out.part" &
      pid=$! t0=$SECONDS
      while kill -0 "$pid" 2>/dev/null; do
        sleep 10
        f=$(ls "$out.part.tmp" "$out.part" 2>/dev/null | head -1 || true) # the writer's temp name, then renamed (ls fails before either exists)
        if [ -n "$f" ]; then echo "models.sh: ... $(du -m "$f" | cut -f1) MB of ${gb} GB written ($((SECONDS - t0)) s)"
        else echo "models.sh: ... placing the small model's layers ($((SECONDS - t0)) s)"; fi
      done
      wait "$pid" || { rm -f "$out.part"; echo "models.sh: sd-genmodel failed for $spec" >&2; exit 1; }
      mv "$out.part" "$out"
      echo "models.sh: $out made in $((SECONDS - t0)) s"
      continue ;;
  esac
  echo "models.sh: making $out"
  case $shape in
    grown-draft) "$gen" --grow models/fixture-draft.gguf --shape draft --type "$type" -o "$out" ;;
    grown-*) "$gen" --grow models/fixture-target.gguf --shape "${shape#grown-}" --type "$type" -o "$out" ;;
    *a3b*) # the IQ quantizers search grids (~0.5 M values/s per core): a smaller pool keeps them to minutes
      pool=4096; case ${type#*+} in iq*) pool=256 ;; esac
      "$gen" --shape "$shape" --type "${type%+*}" --expert-type "${type#*+}" --expert-pool "$pool" -o "$out" ;;
    *) "$gen" --shape "$shape" --type "$type" -o "$out" ;;
  esac
done
