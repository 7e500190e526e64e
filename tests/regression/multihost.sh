#!/usr/bin/env bash
# Nothing in ssdr may assume that all ranks share one host: runs jobs/multihost_test.sh, which
# makes "hosts" out of Linux network namespaces (shared memory off, ranks talk over TCP across
# the namespaces), with 2 hosts x 1 rank and 2 hosts x 2 ranks. Each run checks that the ranks
# really sit in distinct namespaces, that a fit across the hosts equals the one-host fit with
# the same rank count bit for bit, and that a rank killed on the second host ends the job
# within seconds with one clear line. Without root / network namespaces the job script exits
# 77: this prints its skip line and passes (ctest has no skip code configured).
# Usage: multihost.sh SSDR_BINARY DATA_DIR   (MPIEXEC from the environment)
set -u
SSDR="$1"
DATA="$2"
# shellcheck source=tests/regression/common.bash
source "$(dirname "${BASH_SOURCE[0]}")/common.bash"
job="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../jobs" && pwd)/multihost_test.sh"
export MPIEXEC

for layout in "2 1" "2 2"; do
  read -r hosts rph <<<"$layout"
  timeout 240 bash "$job" "$SSDR" "$DATA" "$hosts" "$rph" >"$tmp/job.out" 2>&1
  rc=$?
  if [ "$rc" -eq 77 ]; then
    grep -m1 'skipped' "$tmp/job.out"
    echo "skipped: multihost (network namespaces unavailable)"
    exit 0
  fi
  # The job's own ok:/FAILED: lines become this script's cases; other lines pass through.
  while IFS= read -r line; do
    case "$line" in
      ok:\ *) ok "${line#ok: }" ;;
      FAILED:\ *) bad "${line#FAILED: }" ;;
      *) echo "$line" ;;
    esac
  done <"$tmp/job.out"
  if [ "$rc" -ne 0 ] && ! grep -q '^FAILED:' "$tmp/job.out"; then
    bad "multihost_test.sh $hosts $rph exited $rc$([ "$rc" -eq 124 ] && echo ' (timeout)')"
  fi
done
finish
