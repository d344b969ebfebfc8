#!/usr/bin/env bash
# TLS in front of specdec (docs/SECURITY.md): a self-signed certificate made
# with openssl, nginx from deploy/render-nginx-conf.sh with TLS_CERT/TLS_KEY
# (run unprivileged), one `specdec serve --api-key` replica behind it on
# 127.0.0.1. Over HTTPS: /health without a key 200; /v1/models without a key
# and with a wrong one 401 (checked by specdec behind nginx), with the key
# 200; a streamed chat answer arrives whole; the certificate verifies against
# itself; plain HTTP to the TLS port gets no API answer.
# Skips (77) only when nginx or openssl is not installed (scripts/deps.sh --test).
source "$(dirname "$0")/lib.sh"
NGINX=$(command -v nginx || ls /usr/sbin/nginx 2>/dev/null || true)
[ -n "$NGINX" ] && command -v openssl >/dev/null || { echo "nginx or openssl not installed: skipped"; exit 77; }
fail() { echo "FAIL: $*"; [ -f "$LBDIR/error.log" ] && tail -20 "$LBDIR/error.log"; exit 1; }
KEY=sk-tls-3c9d0e

LB=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
start_server -m models/fixture-target.gguf -t 1 -c 1024 --parallel 1 --api-key "$KEY"
LBDIR=$(mktemp -d /tmp/specdec-tls.XXXXXX)
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
  -keyout "$LBDIR/key.pem" -out "$LBDIR/cert.pem" 2>/dev/null || fail "openssl req"
TLS_CERT=$LBDIR/cert.pem TLS_KEY=$LBDIR/key.pem deploy/render-nginx-conf.sh "$LBDIR" "127.0.0.1:$LB" "127.0.0.1:$PORT" >/dev/null
RUN=()
if [ "$(id -u)" = 0 ]; then # never as root: as nobody, owning its prefix
  chmod 755 "$LBDIR"; chown -R nobody "$LBDIR"
  RUN=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
fi
"${RUN[@]}" "$NGINX" -p "$LBDIR" -c "$LBDIR/nginx.conf" -e "$LBDIR/error.log" &
NGINX_PID=$!
trap 'kill -QUIT $NGINX_PID 2>/dev/null; wait $NGINX_PID 2>/dev/null; rm -rf "$LBDIR"; cleanup' EXIT
for i in $(seq 1 100); do
  (exec 3<>"/dev/tcp/127.0.0.1/$LB") 2>/dev/null && break
  kill -0 $NGINX_PID 2>/dev/null || fail "nginx exited"
  sleep 0.05
done
S=https://127.0.0.1:$LB
C=(curl -s --cacert "$LBDIR/cert.pem" -o "$TMP/body" -w '%{http_code}')
code=$("${C[@]}" "$S/health"); [ "$code" = 200 ] || fail "/health over TLS: $code"
code=$("${C[@]}" "$S/v1/models"); [ "$code" = 401 ] || fail "/v1/models without a key over TLS: $code"
grep -q invalid_api_key "$TMP/body" || fail "the 401 is not specdec's: $(cat "$TMP/body")"
code=$("${C[@]}" -H "Authorization: Bearer ${KEY}x" "$S/v1/models"); [ "$code" = 401 ] || fail "wrong key over TLS: $code"
code=$("${C[@]}" -H "Authorization: Bearer $KEY" "$S/v1/models"); [ "$code" = 200 ] || fail "right key over TLS: $code"
echo "ok  over TLS: /health 200, no key 401, wrong key 401, right key 200 (checked by specdec behind nginx)"
code=$("${C[@]}" -H "Authorization: Bearer $KEY" "$S/v1/chat/completions" \
  -d '{"messages":[{"role":"user","content":"def add(a, b):"}],"max_tokens":8,"temperature":0,"stream":true}')
[ "$code" = 200 ] && tail -c 200 "$TMP/body" | grep -q 'data: \[DONE\]' || fail "stream over TLS: $code $(tail -c 200 "$TMP/body")"
echo "ok  a streamed answer over TLS ends with [DONE]"
code=$(curl -s -o /dev/null -w '%{http_code}' "$S/health" || true)
[ "$code" = 000 ] || fail "an unverified self-signed certificate was accepted without --cacert: $code"
code=$(curl -s -o "$TMP/body" -w '%{http_code}' -H "Authorization: Bearer $KEY" "http://127.0.0.1:$LB/v1/models" || true)
[ "$code" != 200 ] || fail "plain HTTP to the TLS port got an API answer"
echo "ok  the certificate verifies only against itself; plain HTTP to the TLS port: $code, no API answer"
stop_server "$SERVER_PID"
