#!/usr/bin/env bash
# specdec chat in a real terminal (tmux, a private server socket):
# 1. on the fixture with every default, 5 messages in a row are all answered
#    (the oldest turns are dropped when the 512-token context fills);
# 2. Ctrl-C in the middle of a long answer stops it and keeps the conversation:
#    the next message is answered on the cached history; then two Ctrl-C at the
#    prompt quit with status 0.
set -u
BIN=$(realpath "${SD_SPECDEC_BIN:-build/specdec}")
cd "${SD_SOURCE_DIR:-$(dirname "$0")/../..}"
command -v tmux >/dev/null || { echo "tmux missing: run scripts/deps.sh --test"; exit 1; }
# one tmux server per chat start: a new session on a socket whose server is still
# shutting down after kill-server can fail with "server exited unexpectedly"
SOCK=specdec-test-$$-0
N_STARTS=0
TMP=$(mktemp -d)
trap 'tmux -L "$SOCK" kill-server 2>/dev/null; rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*"; echo "--- screen"; screen | tail -40; exit 1; }

screen() { tmux -L "$SOCK" capture-pane -p -J -S -5000 -t chat; }
answers() { screen | grep -c '^\[ .* tok/s' || true; }
# wait_for COMMAND... : until it succeeds (at most ~300 s: the machine may be
# loaded); gives up at once if the tmux server is gone
wait_for() {
  local i
  for i in $(seq 1 3000); do
    "$@" && return 0
    tmux -L "$SOCK" has-session -t chat 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}
answers_are() { [ "$(answers)" -ge "$1" ]; }
on_screen() { screen | grep -q -- "$1"; }
# after_has LINE-REGEX REGEX: a line below the last line matching LINE-REGEX matches REGEX
after_has() { screen | tac | sed "/$1/q" | tac | sed 1d | grep -q -- "$2"; }
start_chat() {
  tmux -L "$SOCK" kill-server 2>/dev/null
  N_STARTS=$((N_STARTS + 1)); SOCK=specdec-test-$$-$N_STARTS
  tmux -L "$SOCK" new-session -d -s chat -x 250 -y 50 \
    "bash -c '\"$BIN\" chat $*; echo EXITED \$?; sleep 600'" ||
    { echo "FAIL: tmux could not start a session"; exit 1; }
  wait_for on_screen "^specdec chat:" || fail "chat did not start"
}
say() { tmux -L "$SOCK" send-keys -t chat -l "$1"; tmux -L "$SOCK" send-keys -t chat Enter; }

# 1. Defaults: five messages, five answers, no error.
start_chat ""
msgs=("Hello." "Write a parser in Python." "Now add error handling." "And a test for it." "Thanks, one more time.")
for i in "${!msgs[@]}"; do
  say "${msgs[$i]}"
  wait_for answers_are $((i + 1)) || fail "message $((i + 1)) was not answered"
done
screen | grep -q '^specdec: ' && fail "an error line on screen"
on_screen EXITED && fail "the chat exited"
echo "ok  5 messages on the defaults, 5 answers$(on_screen 'dropped the oldest' && echo ' (oldest turns dropped)')"

# 2. Ctrl-C mid-answer: greedy, a context long enough for a long answer.
start_chat "-t 1 -c 4096 -n -1 --temp 0"
say "Write a long story."
# the answer has begun: a line with text below the message
wait_for after_has "Write a long story" '[a-z]' || fail "the answer did not start"
tmux -L "$SOCK" send-keys -t chat C-c
wait_for on_screen '^(stopped)' || fail "Ctrl-C did not stop the answer"
wait_for answers_are 1 || fail "no status line after the stopped answer"
on_screen EXITED && fail "Ctrl-C during an answer quit the chat"
n1=$(screen | grep '^\[ .* tok/s' | sed -n 1p | sed 's/.*| \([0-9]*\) tokens.*/\1/')
[ "$n1" -lt 4000 ] || fail "the stopped answer has $n1 tokens: it was not stopped"
say "Go on."
wait_for after_has "^> Go on" '[a-z]' || fail "the message after Ctrl-C was not answered"
tmux -L "$SOCK" send-keys -t chat C-c # stops it too if still going (else a Ctrl-C at the prompt)
wait_for answers_are 2 || fail "no status line for the message after Ctrl-C"
# its prompt holds the stopped answer: the conversation was kept
read -r new cached < <(screen | grep '^\[ .* tok/s' | sed -n 2p | sed 's/.*prompt \([0-9]*\) new + \([0-9]*\) cached.*/\1 \2/')
[ $((new + cached)) -gt $((n1 / 2)) ] ||
  fail "the next prompt has $((new + cached)) tokens: the stopped answer of $n1 tokens is not in the conversation"
echo "ok  Ctrl-C stopped an answer after $n1 tokens; the next prompt held it ($((new + cached)) tokens, $cached cached)"
# at the prompt: the first Ctrl-C warns, the second quits cleanly (a command line
# first, so an earlier Ctrl-C that found the answer already over does not count)
say "/spec on"
wait_for on_screen '^speculation on' || fail "/spec on was not read"
warnings() { screen | grep -c 'Ctrl-C again' || true; }
w0=$(warnings)
tmux -L "$SOCK" send-keys -t chat C-c
more_warnings() { [ "$(warnings)" -gt "$w0" ]; }
wait_for more_warnings ||
  fail "no warning after a Ctrl-C at the prompt"
on_screen EXITED && fail "one Ctrl-C at the prompt quit"
tmux -L "$SOCK" send-keys -t chat C-c
wait_for on_screen '^EXITED' || fail "a second Ctrl-C at the prompt did not quit"
on_screen '^EXITED 0' || fail "the chat exited with $(screen | grep '^EXITED')"
echo "ok  two Ctrl-C at the prompt quit with status 0"
