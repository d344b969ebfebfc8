#!/usr/bin/env bash
# specdec chat: a Ctrl-C (SIGINT) that lands while the answer's write to stdout
# is blocked (a slow reader: the terminal under load, here a 4 KiB pipe nobody
# reads yet) stops the answer and nothing else: the chat goes on to /quit and
# exits 0. Before the fix the interrupted write failed with EINTR, stdio kept
# that as an error on stdout and the exit said "cannot write the output",
# status 1 (the chat_tmux flake under load).
set -u
BIN=$(realpath "${SD_SPECDEC_BIN:-build/specdec}")
cd "${SD_SOURCE_DIR:-$(dirname "$0")/../..}"
TMP=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*"; echo "--- stderr"; tail -20 "$TMP/err"; exit 1; }

# the reader shrinks the pipe to one page, reads nothing until told (a file
# appears), then everything
cat > "$TMP/reader.py" <<'PY'
import fcntl, os, sys, time
fcntl.fcntl(0, 1031, 4096)  # F_SETPIPE_SZ
while not os.path.exists(sys.argv[1]):
    time.sleep(0.05)
n = 0
while True:
    b = os.read(0, 65536)
    if not b:
        break
    n += len(b)
print(n)
PY
mkfifo "$TMP/in" "$TMP/out"
python3 "$TMP/reader.py" "$TMP/go" < "$TMP/out" > "$TMP/nread" &
reader=$!
"$BIN" chat --temp 0 -c 4096 -n 3000 < "$TMP/in" > "$TMP/out" 2> "$TMP/err" &
pid=$!
exec 3> "$TMP/in"
echo "Write a long story." >&3

# wait (up to ~60 s: the machine may be loaded) until the chat blocks writing to the full pipe
# (the kernel's wait channel names the pipe write; where it is hidden, the syscall
# in progress: write(1, ...), number 1 on x86-64, 64 on aarch64)
in_write() {
  grep -q pipe_write "/proc/$pid/wchan" 2>/dev/null && return 0
  local nr fd rest
  read -r nr fd rest < "/proc/$pid/syscall" 2>/dev/null || return 1
  { [ "$nr" = 1 ] || [ "$nr" = 64 ]; } && [ "$fd" = 0x1 ]
}
blocked=""
for _ in $(seq 600); do
  in_write && { blocked=1; break; }
  sleep 0.1
done
[ -n "$blocked" ] || fail "the chat never blocked writing its answer to a full pipe"
kill -INT "$pid"
sleep 0.3
touch "$TMP/go" # the reader drains: the write goes on, sees the stop
for _ in $(seq 600); do grep -q '^(stopped)' "$TMP/err" && break; sleep 0.1; done
grep -q '^(stopped)' "$TMP/err" || fail "the Ctrl-C did not stop the answer"
echo "/quit" >&3
exec 3>&-
wait "$pid"; rc=$?
wait "$reader"
grep -q "cannot write" "$TMP/err" && fail "the chat reported unwritable output after the Ctrl-C"
[ "$rc" = 0 ] || fail "the chat exited with status $rc"
echo "ok  a Ctrl-C during a blocked write stopped the answer ($(cat "$TMP/nread") bytes read); /quit exited 0"
