# Sourced by the shell tests that count failed checks instead of stopping at
# the first: a scratch directory $tmp (removed on exit), fail MESSAGE, and
# finish, which reports and exits with the number of failures.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
finish() {
  [ "$fails" = 0 ] && echo "$(basename "$0"): all checks passed"
  exit "$fails"
}
