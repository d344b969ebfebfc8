#!/usr/bin/env bash
# The library holds the engine and its public API only: the bench and the
# oracle drafter it measures against (bench/src/) are a developer tool linked
# into the specdec executable, so no symbol of theirs is in libspecdec, static
# or shared (nm reads every symbol, the hidden ones too). The pattern is
# checked on the bench's own library first, so it cannot pass by matching
# nothing anywhere.
set -u
build="${SD_BUILD_DIR:?}"
pattern='bench|oracle'
bad=0
count() { nm "$1" 2>/dev/null | grep -ciE " [a-z] [^ ]*($pattern)"; }
[ "$(count "$build/libspecdec_bench.a")" -gt 0 ] ||
  { echo "lib-symbols: no /$pattern/ symbol in libspecdec_bench.a: the check would see nothing"; exit 1; }
for lib in "$build/libspecdec.a" "$build/libspecdec.so"; do
  [ -e "$lib" ] || { echo "lib-symbols: $lib is missing"; bad=1; continue; }
  total=$(nm "$lib" 2>/dev/null | grep -c " [TtDdBbRr] ")
  [ "$total" -gt 100 ] || { echo "lib-symbols: nm found only $total symbols in $lib"; bad=1; continue; }
  found=$(count "$lib")
  if [ "$found" -gt 0 ]; then
    echo "lib-symbols: $lib holds $found bench or oracle symbols:"
    nm "$lib" | grep -iE " [a-z] [^ ]*($pattern)" | head -n 5
    bad=1
  else
    echo "lib-symbols: $lib: $total symbols, none of /$pattern/"
  fi
done
exit $bad
