#!/usr/bin/env bash
# Writes an nginx.conf for `specdec serve` replicas from nginx-specdec.conf.in.
#   deploy/render-nginx-conf.sh PREFIX LISTEN REPLICA... [-- FAIL_TIMEOUT]
#   e.g. deploy/render-nginx-conf.sh /srv/specdec-lb 0.0.0.0:8080 127.0.0.1:8081 127.0.0.1:8082
# makes PREFIX (and its temp directories) and writes PREFIX/nginx.conf; run
#   nginx -p PREFIX -c PREFIX/nginx.conf -e PREFIX/error.log
# FAIL_TIMEOUT: seconds a replica that failed is left out (default 10).
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
PREFIX=$prefix LISTEN=$listen SERVERS=$servers LOCS=$locations python3 - "$tmpl" "$prefix/nginx.conf" <<'PY'
import os, sys
t = open(sys.argv[1]).read()
for k, v in (("@PREFIX@", "PREFIX"), ("@LISTEN@", "LISTEN"), ("@SERVERS@", "SERVERS"),
             ("@REPLICA_LOCATIONS@", "LOCS")):
    t = t.replace(k, os.environ[v].rstrip("\n"))
open(sys.argv[2], "w").write(t)
PY
echo "$prefix/nginx.conf"
