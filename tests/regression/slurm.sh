#!/usr/bin/env bash
# The cluster door under a real SLURM: a single-node cluster on localhost (munged, slurmctld and
# slurmd from Debian's slurm-wlm, every file and port its own, MpiDefault=none as many sites
# have it), the project's batch scripts submitted as their headers show:
#   1. jobs/slurm/soda_fashion_mnist.sbatch (digits through SSDR_DATA) on 2 tasks: srun starts
#      the ranks with PMIx (the script's --mpi=pmix) and the report holds the fit's accuracy;
#      jobs/slurm/fit.sbatch on examples/my_iris.csv writes its report, model, CSV and PNG;
#   2. jobs/slurm/experiment.sbatch (jobs/experiments/kill_test.yaml) stopped by SIGUSR1 sent to
#      the batch script (scancel --signal=USR1 --batch, what --signal=B:USR1@300 does before the
#      time limit): the job ends with 138 after checkpointing; resubmitted, it resumes and ends
#      with exactly the configurations of an uninterrupted run, each once, with its accuracies.
# Needs root and slurm-wlm + munge (jobs/install_deps.sh installs them); skipped otherwise with
# one line. Everything it started is stopped and removed at exit.
# Usage: slurm.sh SSDR_BINARY DATA_DIR   (MPIEXEC, SSDR_PYTHON from the environment)
set -u
SSDR="$1"
DATA="$2"
ROOT="$(cd "$DATA/../.." && pwd)"
source "$(dirname "${BASH_SOURCE[0]}")/common.bash"
for tool in munged slurmctld slurmd sbatch squeue scontrol scancel; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "skipped: a real SLURM needs $tool (Debian: slurm-wlm, munge; jobs/install_deps.sh)"
    exit 0
  fi
done
if [ "$(id -u)" -ne 0 ]; then
  echo "skipped: starting slurmctld and slurmd on localhost needs root"
  exit 0
fi

S="$tmp/slurm"
mkdir -p "$S/state" "$S/spool" "$S/out"
pids=()
stop_cluster() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  rm -rf "$tmp"
}
trap stop_cluster EXIT

dd if=/dev/urandom of="$S/munge.key" bs=1 count=1024 2>/dev/null && chmod 400 "$S/munge.key"
# munged in the foreground as this script's child, so it is stopped and reaped like the others
# (a daemonised munged is reparented to init, which in a container may never reap it).
munged --foreground --force --key-file="$S/munge.key" --socket="$S/munge.sock" \
  --pid-file="$S/munged.pid" --log-file="$S/munged.log" --seed-file="$S/munged.seed" 2>"$S/munged.err" &
pids+=($!)
for _ in $(seq 1 40); do [ -S "$S/munge.sock" ] && break; sleep 0.25; done
if [ ! -S "$S/munge.sock" ]; then
  echo "skipped: munged would not start here ($(tail -n 1 "$S/munged.err" 2>/dev/null))"
  exit 0
fi
port=$((20000 + RANDOM % 20000))
cat >"$S/slurm.conf" <<EOF
ClusterName=ssdrtest
SlurmctldHost=localhost
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
AuthInfo=socket=$S/munge.sock
CredType=cred/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$S/state
SlurmdSpoolDir=$S/spool
SlurmctldPidFile=$S/slurmctld.pid
SlurmdPidFile=$S/slurmd.pid
SlurmctldLogFile=$S/slurmctld.log
SlurmdLogFile=$S/slurmd.log
MinJobAge=600
NodeName=localhost CPUs=2 State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF="$S/slurm.conf"
slurmctld -D -i -f "$SLURM_CONF" >"$S/slurmctld.out" 2>&1 &
pids+=($!)
sleep 1
slurmd -D -N localhost -f "$SLURM_CONF" >"$S/slurmd.out" 2>&1 &
pids+=($!)
up=0
for _ in $(seq 1 60); do
  if sinfo -h -o %T 2>/dev/null | grep -q idle; then up=1; break; fi
  sleep 0.5
done
if [ "$up" -ne 1 ]; then
  echo "skipped: the local SLURM did not come up ($(tail -n 1 "$S/slurmctld.log" 2>/dev/null))"
  exit 0
fi
ok "a single-node SLURM on localhost (MpiDefault=none)"

# The job's state and exit code once it has ended (scontrol keeps them MinJobAge seconds).
wait_job() {  # id, seconds
  local id="$1" limit="$2"
  for _ in $(seq 1 $((limit * 2))); do
    [ -z "$(squeue -h -j "$id" -o %T 2>/dev/null)" ] && break
    sleep 0.5
  done
  scontrol show job "$id" 2>/dev/null | grep -o 'JobState=[A-Z_]*\|ExitCode=[0-9:]*' | tr '\n' ' '
}
env_common="ALL,SSDR_BIN=$SSDR,SSDR_ROOT=$ROOT,OMPI_ALLOW_RUN_AS_ROOT=1,OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"

# 1. The main job's script, 2 tasks on one node, digits instead of Fashion-MNIST.
id=$(cd "$ROOT" && sbatch --parsable --nodes=1 --ntasks-per-node=2 -o "$S/soda.out" \
       --export="$env_common,SSDR_DATA=$DATA/digits.csv,SSDR_OUT=$S/out" jobs/slurm/soda_fashion_mnist.sbatch 0.5)
state=$(wait_job "$id" 120)
if echo "$state" | grep -q "JobState=COMPLETED ExitCode=0:0" &&
   "$PY" - "$S/out/soda_fmnist_2r_f0.5.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["ranks"] == 2 and 0.5 < r["accuracy"]["unlabeled"] <= 1, r["accuracy"]
PY
then
  ok "soda_fashion_mnist.sbatch under srun --mpi=pmix: 2 ranks, accuracy in the report"
else
  bad "soda_fashion_mnist.sbatch ($state)"; tail -n 5 "$S/soda.out"
fi

# 1b. One's own data: fit.sbatch DATA METHOD OUTDIR OPTIONS on 2 tasks (examples/my_iris.csv: a
#     header, names, empty labels; no split) writes the report, model, CSV and PNG.
id=$(cd "$ROOT" && sbatch --parsable --nodes=1 --ntasks-per-node=2 -o "$S/fit.out" \
       --export="$env_common" jobs/slurm/fit.sbatch examples/my_iris.csv soda "$S/own" --label-column species)
state=$(wait_job "$id" 120)
if echo "$state" | grep -q "JobState=COMPLETED ExitCode=0:0" && [ -s "$S/own/my_iris_soda.model" ] &&
   [ "$(head -1 "$S/own/my_iris_soda.csv")" = "id,label,y1,y2" ] &&
   [ "$(head -c 4 "$S/own/my_iris_soda.png" | od -An -tx1 | tr -d ' \n')" = 89504e47 ] &&
   "$PY" - "$S/own/my_iris_soda.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["ranks"] == 2 and r["class_names"] == ["setosa", "versicolor", "virginica"], r["class_names"]
assert r["split"]["unlabeled"] == 45 and r["accuracy"]["unlabeled"] is None, r["split"]
PY
then
  ok "fit.sbatch on your own data under srun: 2 ranks, report with the class names, model, CSV and PNG"
else
  bad "fit.sbatch ($state)"; tail -n 5 "$S/fit.out"
fi

# 2. experiment.sbatch stopped by SIGUSR1 to the batch script, then resumed.
"$MPIEXEC" -n 2 "$SSDR" experiment "$ROOT/jobs/experiments/kill_test.yaml" --output "$S/ref" -q >"$S/ref.out" 2>&1 ||
  bad "the uninterrupted reference run"
submit() {
  (cd "$ROOT" && sbatch --parsable --nodes=1 --ntasks-per-node=2 -o "$S/exp_$1.out" \
     --export="$env_common,SSDR_OUT=$S/out" jobs/slurm/experiment.sbatch jobs/experiments/kill_test.yaml 2)
}
id=$(submit 1)
for _ in $(seq 1 600); do
  lines=$(cat "$S"/out/kill_test/results*.jsonl 2>/dev/null | wc -l)
  [ "$lines" -ge 10 ] && break
  sleep 0.1
done
scancel --batch --signal=USR1 "$id"
state=$(wait_job "$id" 120)
done_before=$(cat "$S"/out/kill_test/results*.jsonl 2>/dev/null | wc -l)
if echo "$state" | grep -q "ExitCode=138:0" && grep -q "stopped by SIGUSR1" "$S/exp_1.out"; then
  ok "experiment.sbatch stopped by SIGUSR1: exit 138 with $done_before configurations checkpointed"
else
  bad "experiment.sbatch and SIGUSR1 ($state)"; tail -n 5 "$S/exp_1.out"
fi
id=$(submit 2)
state=$(wait_job "$id" 300)
if echo "$state" | grep -q "JobState=COMPLETED ExitCode=0:0" && grep -q "already done" "$S/exp_2.out" &&
   "$PY" - "$S/ref/results.json" "$S/out/kill_test/results.json" "$done_before" <<'PY'
import json, sys
ref = {x["key"]: x for x in json.load(open(sys.argv[1]))["results"]}
res = json.load(open(sys.argv[2]))["results"]
keys = [x["key"] for x in res]
assert len(keys) == len(set(keys)) == len(ref), (len(keys), len(set(keys)), len(ref))
assert 0 < int(sys.argv[3]) < len(ref), sys.argv[3]
for x in res:
    assert x["accuracy"] == ref[x["key"]]["accuracy"], x["key"]
PY
then
  ok "resubmitted, it resumed and ended with every configuration of the uninterrupted run once"
else
  bad "experiment.sbatch resumed ($state)"; tail -n 5 "$S/exp_2.out"
fi
finish
