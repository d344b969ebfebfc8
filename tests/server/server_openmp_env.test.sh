#!/usr/bin/env bash
# The OpenMP wait settings specdec gives itself (src/cli/main.c): libgomp
# spins only 100 iterations at a barrier when a process holds more OpenMP
# threads than cores and no wait policy is set, and `serve` holds two
# thread pools, so it must run with OMP_WAIT_POLICY=active and
# GOMP_SPINCOUNT=1000 (both spins 1000). A policy the user set is kept.
source "$(dirname "$0")/lib.sh"
fail() { echo "FAIL: $*"; exit 1; }
env_of() { tr '\0' '\n' < "/proc/$1/environ"; }
[ -r /proc/self/environ ] || { echo "SKIP: no /proc/PID/environ"; exit 77; }

# no policy given: both set (the process re-executed itself with them)
( unset OMP_WAIT_POLICY GOMP_SPINCOUNT; start_server -m models/fixture-target.gguf -t 2 -c 256 --parallel 1
  curl -sf "$BASE/health" > /dev/null || fail "no /health"
  e=$(env_of "$SERVER_PID")
  grep -qx 'OMP_WAIT_POLICY=active' <<< "$e" || fail "serve runs without OMP_WAIT_POLICY=active"
  grep -qx 'GOMP_SPINCOUNT=1000' <<< "$e" || fail "serve runs without GOMP_SPINCOUNT=1000"
  stop_server "$SERVER_PID" ) || exit 1

# the user's policy is left alone, and no spin count is added to it
( export OMP_WAIT_POLICY=passive; unset GOMP_SPINCOUNT; start_server -m models/fixture-target.gguf -t 2 -c 256 --parallel 1
  e=$(env_of "$SERVER_PID")
  grep -qx 'OMP_WAIT_POLICY=passive' <<< "$e" || fail "the user's OMP_WAIT_POLICY was changed"
  ! grep -q '^GOMP_SPINCOUNT=' <<< "$e" || fail "GOMP_SPINCOUNT added to the user's policy"
  stop_server "$SERVER_PID" ) || exit 1

# the user's spin count is left alone too
( unset OMP_WAIT_POLICY; export GOMP_SPINCOUNT=5000; start_server -m models/fixture-target.gguf -t 2 -c 256 --parallel 1
  e=$(env_of "$SERVER_PID")
  grep -qx 'GOMP_SPINCOUNT=5000' <<< "$e" || fail "the user's GOMP_SPINCOUNT was changed"
  ! grep -q '^OMP_WAIT_POLICY=' <<< "$e" || fail "OMP_WAIT_POLICY added to the user's spin count"
  stop_server "$SERVER_PID" ) || exit 1
echo "PASS: serve runs with OMP_WAIT_POLICY=active GOMP_SPINCOUNT=1000 unless the user chose"
