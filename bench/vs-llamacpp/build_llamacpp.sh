#!/usr/bin/env bash
# Builds llama.cpp's own tools once from the source node-llama-cpp ships
# (node_modules/node-llama-cpp/llama/gitRelease.bundle), for the race of
# speculative modes and for reference files (quantized GGUFs, imatrix files):
#   llama-server, llama-speculative-simple, llama-quantize, llama-imatrix,
#   llama-cli (plain decoding).
# No network: the bundle is a git bundle installed by `npm ci --ignore-scripts`
# in this folder; CMake is configured without curl. Native CPU flags.
# Output: cache/llama.cpp/<commit>/build/bin/, rebuilt only when the bundle's
# commit changes; the last line printed is that bin/ folder. Not run by CI.
#   bash bench/vs-llamacpp/build_llamacpp.sh [-j N]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd); root=$(cd "$here/../.." && pwd)
jobs=$(nproc)
case "${1:-}" in
  -j) jobs=${2:?-j needs a number} ;;
  "") ;;
  *) echo "usage: build_llamacpp.sh [-j N]" >&2; exit 2 ;;
esac
bundle=$here/node_modules/node-llama-cpp/llama/gitRelease.bundle
if [ ! -s "$bundle" ]; then
  echo "build_llamacpp.sh: no $bundle (run: cd bench/vs-llamacpp && npm ci --ignore-scripts)" >&2
  exit 1
fi
commit=$(git bundle list-heads "$bundle" | awk '$2 == "HEAD" {print $1; exit}')
[ -n "$commit" ] || { echo "build_llamacpp.sh: the bundle names no HEAD commit" >&2; exit 1; }
dest=$root/cache/llama.cpp/$commit
bin=$dest/build/bin
tools=(llama-server llama-speculative-simple llama-quantize llama-imatrix llama-cli)
have_all=true
for t in "${tools[@]}"; do [ -x "$bin/$t" ] || have_all=false; done
if $have_all; then
  echo "build_llamacpp.sh: llama.cpp $commit already built"
  echo "$bin"; exit 0
fi
if [ ! -d "$dest/src/.git" ]; then
  rm -rf "$dest/src"; mkdir -p "$dest"
  git clone -q "$bundle" "$dest/src"
  git -C "$dest/src" -c advice.detachedHead=false checkout -q "$commit"
fi
echo "build_llamacpp.sh: building llama.cpp $commit ($(git -C "$dest/src" log -1 --format=%cs)) with $jobs jobs; ~15 min on 2 cores" >&2
t0=$SECONDS
cmake -S "$dest/src" -B "$dest/build" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DLLAMA_CURL=OFF \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=ON -DLLAMA_BUILD_SERVER=ON -DBUILD_SHARED_LIBS=OFF >/dev/null
cmake --build "$dest/build" -j "$jobs" --target "${tools[@]}" 2>&1 | grep -E '^\[ *[0-9]+%\] (Linking|Built target)|error' >&2 || true
for t in "${tools[@]}"; do
  [ -x "$bin/$t" ] || { echo "build_llamacpp.sh: $t was not built (see $dest/build)" >&2; exit 1; }
done
echo "build_llamacpp.sh: built llama.cpp $commit in $((SECONDS - t0)) s" >&2
echo "$bin"
