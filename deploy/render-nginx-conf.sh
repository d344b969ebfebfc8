#!/usr/bin/env bash
# Writes an nginx.conf for `specdec serve` replicas from nginx-specdec.conf.in.
#   deploy/render-nginx-conf.sh PREFIX LISTEN REPLICA... [-- FAIL_TIMEOUT]
#   e.g. deploy/render-nginx-conf.sh /srv/specdec-lb 0.0.0.0:8080 127.0.0.1:8081 127.0.0.1:8082
# makes PREFIX (and its temp directories) and writes PREFIX/nginx.conf; run
#   nginx -p PREFIX -c PREFIX/nginx.conf -e PREFIX/error.log
# FAIL_TIMEOUT: seconds a replica that failed is left out (default 10).
# TLS: with TLS_CERT=FILE.pem TLS_KEY=FILE.key in the environment the listener
# speaks HTTPS only (TLS 1.2 and 1.3); specdec stays plain HTTP behind it, on
# 127.0.0.1 or a private network, and checks the API keys itself
# (nginx passes Authorization through; docs/SECURITY.md).
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: $0 PREFIX LISTEN REPLICA... [-- FAIL_TIMEOUT]" >&2; exit 2; }
prefix=$1 listen=$2; shift 2
replicas=() fail_timeout=10
while [ $# -gt 0 ]; do
  if [ "$1" = -- ]; then fail_timeout=${2:?}; break; fi
  replicas+=("$1"); shift
done
servers="" locations=""
for i in "${!replicas[@]}"; do
  r=${replicas[$i]}
  servers+="        server $r max_fails=1 fail_timeout=${fail_timeout}s;"$'\n'
  locations+="        location /replica/$i/ { proxy_pass http://$r/; proxy_buffering off; }"$'\n'
done
mkdir -p "$prefix"/{client_body,proxy,fastcgi,uwsgi,scgi}
tmpl=$(dirname "$0")/nginx-specdec.conf.in
listen_ssl="" tls=""
if [ -n "${TLS_CERT:-}" ]; then
  [ -r "$TLS_CERT" ] && [ -r "${TLS_KEY:?TLS_CERT needs TLS_KEY}" ] || { echo "$0: cannot read TLS_CERT or TLS_KEY" >&2; exit 2; }
  listen_ssl=" ssl"
  tls=$'\n'"        ssl_certificate $(realpath "$TLS_CERT");"$'\n'
  tls+="        ssl_certificate_key $(realpath "$TLS_KEY");"$'\n'
  tls+="        ssl_protocols TLSv1.2 TLSv1.3;"$'\n'
  tls+="        ssl_session_cache shared:specdec_tls:1m;"
fi
PREFIX=$prefix LISTEN=$listen SERVERS=$servers LOCS=$locations LISTEN_SSL=$listen_ssl TLS=$tls \
  python3 - "$tmpl" "$prefix/nginx.conf" <<'PY'
import os, sys
t = open(sys.argv[1]).read()
for k, v in (("@PREFIX@", "PREFIX"), ("@LISTEN@", "LISTEN"), ("@SERVERS@", "SERVERS"),
             ("@REPLICA_LOCATIONS@", "LOCS"), ("@LISTEN_SSL@", "LISTEN_SSL"), ("@TLS@", "TLS")):
    t = t.replace(k, os.environ[v].rstrip("\n"))
open(sys.argv[2], "w").write(t)
PY
echo "$prefix/nginx.conf"
