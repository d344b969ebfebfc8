#!/usr/bin/env bash
# Two `specdec serve` replicas behind nginx (deploy/, docs/SCALE_OUT.md),
# nginx started by the test as an unprivileged user with its own prefix and
# config on free ports: conversation affinity (cache_n > 0 on turn 2 of each
# conversation), a replica killed mid-run (its in-flight stream ends in an
# error, everything after is served by the other, answers unchanged), and a
# SIGTERM drain behind the balancer (tests/server/scaleout_client.py).
# Skips (77) only when nginx is not installed (scripts/deps.sh --test).
source "$(dirname "$0")/lib.sh"
NGINX=$(command -v nginx || ls /usr/sbin/nginx 2>/dev/null || true)
[ -n "$NGINX" ] || { echo "SKIPPED: nginx not installed (missing package nginx)"; exit 77; }
fail() { echo "FAIL: $*"; [ -f "$LBDIR/error.log" ] && tail -20 "$LBDIR/error.log"; exit 1; }

read -r LB P0 P1 < <(python3 -c '
import socket
ss = [socket.socket() for _ in range(3)]
for s in ss: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in ss])')
# nginx's own directory, which an unprivileged user can write.
LBDIR=$(mktemp -d /tmp/specdec-lb.XXXXXX)
deploy/render-nginx-conf.sh "$LBDIR" "127.0.0.1:$LB" "127.0.0.1:$P0" "127.0.0.1:$P1" -- 2 >/dev/null
RUN=()
if [ "$(id -u)" = 0 ]; then # never as root: as nobody, owning its prefix
  chmod 755 "$LBDIR"; chown -R nobody "$LBDIR"
  RUN=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
fi
"${RUN[@]}" "$NGINX" -p "$LBDIR" -c "$LBDIR/nginx.conf" -e "$LBDIR/error.log" &
NGINX_PID=$!
trap 'kill -QUIT $NGINX_PID 2>/dev/null; wait $NGINX_PID 2>/dev/null; rm -rf "$LBDIR"; cleanup' EXIT
for i in $(seq 1 100); do # a TCP connect only: a request would mark the replicas (not started yet) failed
  (exec 3<>"/dev/tcp/127.0.0.1/$LB") 2>/dev/null && break
  kill -0 $NGINX_PID 2>/dev/null || fail "nginx exited"
  sleep 0.05
done
python3 tests/server/scaleout_client.py "$BIN" "$LB" "$P0" "$P1" "$TMP" || fail "scale-out scenario"
echo "scale-out behind nginx: ok"
