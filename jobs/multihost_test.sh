#!/usr/bin/env bash
# Multi-host test on one machine: every "host" is a Linux network namespace.
#
# Why: ssdr must not assume that all of its ranks share one host. This script builds HOSTS
# network namespaces joined by a bridge (the bridge lives in a namespace of its own, so the
# machine's own network is never touched), starts mpiexec inside the first one and lets
# Open MPI start its daemons (orted) in the others through an rsh agent (the stand-in for
# ssh). Shared memory is off (--mca btl tcp,self): the ranks on different "hosts" talk over
# TCP across the namespaces, and Open MPI sees HOSTS separate nodes (local size =
# RANKS_PER_HOST), so MPI_COMM_TYPE_SHARED splits by "host". The filesystem is shared, so the
# binary and the data are reachable everywhere, as on a cluster with a shared file system.
#
# Checks:
#   1. the ranks run in HOSTS distinct network namespaces, RANKS_PER_HOST in each, and get
#      the forwarded environment;
#   2. a soda fit across the hosts gives the same embedding (bit for bit) and the same
#      accuracies as the same fit on one host (root namespace, shared memory allowed) with
#      the same number of ranks (ssdr is bit-identical for a fixed rank count);
#   3. killing (SIGKILL) an ssdr rank on the second host ends the whole job within
#      KILL_LIMIT seconds with a non-zero exit and one clear line from mpiexec.
#
# Usage: bash jobs/multihost_test.sh SSDR_BINARY DATA_DIR [HOSTS=2] [RANKS_PER_HOST=1]
# Needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN) and iproute2; exits 77 (skip) with one line when
# namespaces cannot be made, 0 when every check passes, 1 otherwise. Prints ok:/FAILED: lines.
# Everything it creates (namespaces, processes in them, temporary files) is removed on exit.
set -u
PY="${SSDR_PYTHON:-/usr/bin/python3}"  # Debian's, with numpy (a pyenv python3 on PATH may lack it)

if [ $# -lt 2 ]; then
  echo "usage: $0 SSDR_BINARY DATA_DIR [HOSTS=2] [RANKS_PER_HOST=1]" >&2
  exit 2
fi
SSDR="$(readlink -f "$1")"
DATA="$(readlink -f "$2")"
HOSTS="${3:-2}"
RPH="${4:-1}"
case "$HOSTS$RPH" in *[!0-9]*) echo "multihost: HOSTS and RANKS_PER_HOST must be integers" >&2; exit 2 ;; esac
if [ "$HOSTS" -lt 2 ] || [ "$HOSTS" -gt 200 ] || [ "$RPH" -lt 1 ]; then
  echo "multihost: need 2 <= HOSTS <= 200 and RANKS_PER_HOST >= 1" >&2
  exit 2
fi
NP=$((HOSTS * RPH))
TAG="${HOSTS}x${RPH}"
KILL_LIMIT="${KILL_LIMIT:-30}"
[ -x "$SSDR" ] || { echo "FAILED: $TAG: no executable $SSDR"; exit 1; }

# shellcheck source=jobs/env.sh
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/env.sh"
MPIEXEC="${MPIEXEC:-mpiexec}"
IP="$(command -v ip || echo /usr/sbin/ip)"

passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok: $TAG: $1"; }
bad() { failed=$((failed + 1)); echo "FAILED: $TAG: $1"; }
# shellcheck source=jobs/lib/netns_hosts.sh
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib/netns_hosts.sh"
cd "$work" || exit 1

# ---- 1. where the ranks run ------------------------------------------------------------
# One line per rank: namespace name, namespace inode, rank, local size, a forwarded variable.
# shellcheck disable=SC2016  # expanded by each rank's shell
probe='echo "$('"$IP"' netns identify) $(readlink /proc/self/ns/net) $OMPI_COMM_WORLD_RANK $OMPI_COMM_WORLD_LOCAL_SIZE ${OPENBLAS_NUM_THREADS:-unset}"'
if timeout 60 "${mh_mpiexec[@]}" sh -c "$probe" >"$work/where" 2>"$work/where.err"; then
  names=$(cut -d' ' -f1 "$work/where" | sort -u | paste -sd' ')
  inodes=$(cut -d' ' -f2 "$work/where" | sort -u | wc -l)
  ranks=$(wc -l <"$work/where")
  expected=$(printf '%s\n' "${NS[@]}" | sort | paste -sd' ')
  if [ "$ranks" -eq "$NP" ] && [ "$inodes" -eq "$HOSTS" ] && [ "$names" = "$expected" ] &&
     [ "$(awk -v r="$RPH" '$4 != r || $5 != 1' "$work/where" | wc -l)" -eq 0 ] &&
     [ "$(cut -d' ' -f1 "$work/where" | sort | uniq -c | awk -v r="$RPH" '$1 != r' | wc -l)" -eq 0 ]; then
    ok "$NP ranks in $inodes distinct network namespaces ($names), $RPH per host, environment forwarded"
  else
    bad "ranks not spread as expected over $HOSTS namespaces:"
    sed 's/^/  /' "$work/where"
  fi
else
  bad "mpiexec across the namespaces failed (rc $?):"
  sed 's/^/  /' "$work/where.err" | head -20
fi

# ---- 2. the same fit across hosts and on one host --------------------------------------
fit=(fit --method soda --data "$DATA/wine.csv" --labeled-per-class 3 --seed 1 -q)
t0=${EPOCHREALTIME/./}
timeout 120 "${mh_mpiexec[@]}" "$SSDR" "${fit[@]}" --report "$work/mh.json" --embedding "$work/mh.csv" \
  >"$work/mh.out" 2>"$work/mh.err"
rc_mh=$?
t1=${EPOCHREALTIME/./}
timeout 120 "$MPIEXEC" --oversubscribe -n "$NP" "$SSDR" "${fit[@]}" --report "$work/one.json" --embedding "$work/one.csv" \
  >"$work/one.out" 2>"$work/one.err"
rc_one=$?
if [ "$rc_mh" -ne 0 ]; then
  bad "soda fit across $HOSTS hosts failed (rc $rc_mh):"
  sed 's/^/  /' "$work/mh.err" | head -20
elif [ "$rc_one" -ne 0 ]; then
  bad "soda fit on one host failed (rc $rc_one):"
  sed 's/^/  /' "$work/one.err" | head -20
elif cmp -s "$work/mh.csv" "$work/one.csv" &&
     "$PY" - "$work/mh.json" "$work/one.json" <<'PY'
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
assert a["accuracy"] == b["accuracy"], (a["accuracy"], b["accuracy"])
assert a["ranks"] == b["ranks"], (a["ranks"], b["ranks"])
PY
then
  acc=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["accuracy"]["unlabeled"])' "$work/mh.json")
  ok "soda fit (wine, $NP ranks) across $HOSTS hosts equals the one-host fit bit for bit (embedding, accuracy $acc; $(( (t1 - t0) / 1000 )) ms)"
else
  diff=$("$PY" - "$work/mh.csv" "$work/one.csv" "$work/mh.json" "$work/one.json" <<'PY'
import json, sys
import numpy as np
a, b = (np.loadtxt(f, delimiter=",", ndmin=2) for f in sys.argv[1:3])
ra, rb = (json.load(open(f))["accuracy"] for f in sys.argv[3:5])
d = float(np.max(np.abs(a - b))) if a.shape == b.shape else float("nan")
print(f"embedding shapes {a.shape} vs {b.shape}, max |difference| {d:.3e}; accuracy {ra} vs {rb}")
PY
)
  bad "soda fit across $HOSTS hosts differs from the one-host fit: $diff"
fi

# ---- 3. a rank killed on another host ends the job -------------------------------------
# A fit that runs well beyond the kill (ksoda on digits: over a minute on 2 cores). mpiexec's
# own report is asked for (orte_execute_quiet 0; env.sh silences it, and a SIGKILLed rank
# cannot print anything itself).
victim_ns="${NS[1]}"
timeout 300 "${mh_mpiexec[@]}" --mca orte_execute_quiet 0 "$SSDR" fit --method ksoda \
  --data "$DATA/digits.csv" --labeled-per-class 3 --seed 1 -q >"$work/kill.out" 2>"$work/kill.err" &
bg_pid=$!
victim=""
for _ in $(seq 1 300); do  # up to 60 s for the rank to appear on the second host
  for pid in $("$IP" netns pids "$victim_ns" 2>/dev/null); do
    if [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$(basename "$SSDR" | cut -c1-15)" ]; then victim=$pid; break; fi
  done
  [ -n "$victim" ] && break
  kill -0 "$bg_pid" 2>/dev/null || break
  sleep 0.2
done
if [ -z "$victim" ]; then
  wait "$bg_pid"
  bad "no ssdr rank appeared in $victim_ns (mpiexec rc $?):"
  sed 's/^/  /' "$work/kill.err" | head -20
  bg_pid=""
else
  sleep 3  # let the fit get going (connections made, computing)
  if ! kill -0 "$bg_pid" 2>/dev/null; then
    wait "$bg_pid"
    bad "the ksoda fit ended (rc $?) before its rank could be killed"
  else
    t0=${EPOCHREALTIME/./}
    kill -9 "$victim"
    deadline=$((t0 + KILL_LIMIT * 1000000))
    while kill -0 "$bg_pid" 2>/dev/null && [ "${EPOCHREALTIME/./}" -lt "$deadline" ]; do sleep 0.05; done
    t1=${EPOCHREALTIME/./}
    if kill -0 "$bg_pid" 2>/dev/null; then
      bad "mpiexec still running ${KILL_LIMIT} s after rank PID $victim in $victim_ns was killed"
      kill -9 "$bg_pid" 2>/dev/null
      wait "$bg_pid" 2>/dev/null
    else
      wait "$bg_pid"
      rc=$?
      secs=$(awk -v us=$((t1 - t0)) 'BEGIN { printf "%.1f", us / 1e6 }')
      line=$(grep -m1 'exited on signal' "$work/kill.err")
      if [ "$rc" -eq 0 ]; then
        bad "mpiexec exited 0 after a rank was killed"
      elif [ -z "$line" ]; then
        bad "mpiexec exited (rc $rc) ${secs} s after the kill without naming the killed rank; stderr:"
        sed 's/^/  /' "$work/kill.err" | head -20
      else
        ok "SIGKILL of rank PID $victim in $victim_ns ended the job in ${secs} s (rc $rc): $line"
      fi
    fi
    # Nothing may be left running on any host.
    sleep 0.5
    left=""
    for ns in "${NS[@]}"; do left="$left$("$IP" netns pids "$ns" | tr '\n' ' ')"; done
    if [ -z "${left// /}" ]; then ok "no process left on any host after the abort"
    else bad "processes left after the abort: $left"; fi
  fi
  bg_pid=""
fi

echo "multihost: $TAG: $passed passed, $failed failed"
[ "$failed" -eq 0 ] || exit 1
exit 0
