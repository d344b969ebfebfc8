#!/usr/bin/env bash
# Runs a test program with SPECDEC_ISA=$1 (the kernel path), or exits 77
# (ctest: skipped) when this machine cannot run that path, or when that path
# is the one this CPU takes by default: the test's own default run has then
# already run exactly this.
# usage: with_isa.sh ISA PROGRAM [ARGS...]; needs SD_SPECDEC_BIN.
set -euo pipefail
isa=$1
shift
default=$(env -u SPECDEC_ISA "$SD_SPECDEC_BIN" inspect --cpu | sed -n 's/^in use: //p')
if [ "$default" = "$isa" ]; then
  echo "SKIPPED: $isa is this CPU's default kernel path, which the test's default run already took"
  exit 77
fi
export SPECDEC_ISA=$isa
if ! "$SD_SPECDEC_BIN" inspect --cpu | grep -qx "in use: $isa"; then
  echo "SKIPPED: this machine cannot run the $isa kernels"
  exit 77
fi
exec "$@"
