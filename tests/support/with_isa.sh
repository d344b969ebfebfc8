#!/usr/bin/env bash
# Runs a test program with SPECDEC_ISA=$1 (the kernel path), or exits 77
# (ctest: skipped) when this machine cannot run that path.
# usage: with_isa.sh ISA PROGRAM [ARGS...]; needs SD_SPECDEC_BIN.
set -euo pipefail
isa=$1
shift
export SPECDEC_ISA=$isa
if ! "$SD_SPECDEC_BIN" inspect --cpu | grep -qx "in use: $isa"; then
  echo "SKIPPED: this machine cannot run the $isa kernels"
  exit 77
fi
exec "$@"
