#!/usr/bin/env bash
# The SLURM and PBS batch scripts (jobs/slurm, jobs/pbs), run here without a batch system:
# bash -n on every job script; the #SBATCH/#PBS directives where sbatch/qsub read them (before
# the first command), with -N/--exclusive for strong scaling and both the PBS Pro (select) and
# the Torque (nodes:ppn) resource lines; then every script run with srun, mpiexec and qsig
# stubs first on PATH and SSDR_BIN a stub that records its arguments (and, for experiment,
# waits for a signal): the exact command lines, the defaults under the submit directory, the
# SSDR_BIN/SSDR_DATA/SSDR_OUT/SSDR_PETSC_OPTIONS/SSDR_ROOT overrides, the old SSDR= name, a
# missing binary, the rank counts and node counts of strong scaling with its speedup table and
# plot, and SIGUSR1/SIGTERM passed on to the ranks with the experiment's exit status. ~5 s.
# Usage: batch.sh SSDR_BINARY DATA_DIR   (the binary is not used: nothing here runs ssdr)
set -u
ROOT="$(cd "$2/../.." && pwd)"
source "$(dirname "${BASH_SOURCE[0]}")/common.bash"
SLURM_DIR="$ROOT/jobs/slurm"
PBS_DIR="$ROOT/jobs/pbs"
export STUB_DIR="$tmp/stub"
mkdir -p "$STUB_DIR" "$tmp/bin"

# --- stubs -------------------------------------------------------------------------------
# srun/mpiexec: record their own arguments, then exec the program (so a signal sent to the
# launcher's PID reaches the stub, as srun and Open MPI's mpiexec forward SIGUSR1).
cat >"$tmp/bin/srun" <<'EOF'
#!/bin/bash
{ printf 'srun'; printf ' %s' "$@"; printf '\n'; } >>"$STUB_DIR/launch.log"
n="${SLURM_NTASKS:-1}"
while [ $# -gt 0 ] && [ "${1#-}" != "$1" ]; do
  case "$1" in --ntasks=*) n="${1#*=}" ;; esac
  shift
done
STUB_RANKS="$n" exec "$@"
EOF
cat >"$tmp/bin/mpiexec" <<'EOF'
#!/bin/bash
{ printf 'mpiexec'; printf ' %s' "$@"; printf '\n'; } >>"$STUB_DIR/launch.log"
n=1
while [ $# -gt 0 ]; do
  case "$1" in
    -n | -np) n="$2"; shift 2 ;;
    *) if [ -f "$1" ] && [ -x "$1" ]; then break; fi; shift ;;
  esac
done
STUB_RANKS="$n" exec "$@"
EOF
# qsig -s SIG JOBID: PBS sends the signal to the job's session leader, the batch script; here
# the job id is the script's PID.
cat >"$tmp/bin/qsig" <<'EOF'
#!/bin/bash
[ "$1" = -s ] && kill -s "$2" "$3"
EOF
# ssdr: one "CALL ranks=N cwd=DIR" line, then its arguments one per line; a fit writes a
# report whose times scale like an imperfect code (knn_graph 40/p, propagation 20/sqrt(p));
# with STUB_WAIT=1 it waits for SIGUSR1 (exit 138, as experiment does) or SIGTERM (143).
cat >"$tmp/bin/ssdr" <<'EOF'
#!/bin/bash
{ echo "CALL ranks=${STUB_RANKS:-?} cwd=$PWD"; printf '%s\n' "$@"; } >>"$STUB_DIR/ssdr.log"
report="" prev=""
for a in "$@"; do [ "$prev" = --report ] && report="$a"; prev="$a"; done
if [ -n "$report" ]; then
  awk -v p="${STUB_RANKS:-1}" 'BEGIN {
    k = 40 / p; g = 20 / sqrt(p)
    printf "{\"method\": \"soda\", \"data\": \"fmnist\", \"n\": 70000, \"d\": 784, \"ranks\": %d, ", p
    printf "\"timings_s\": {\"read\": 0.5, \"knn_graph\": %.6f, \"propagation\": %.6f, \"evaluate\": 0, \"total\": %.6f}, ", k, g, k + g + 0.5
    printf "\"peak_memory_mib\": {\"max\": %d}}\n", 100 + 1000 / p }' >"$report"
fi
if [ "${STUB_WAIT:-0}" = 1 ]; then
  trap 'echo "got USR1" >>"$STUB_DIR/ssdr.log"; kill "$sl" 2>/dev/null; exit 138' USR1
  trap 'echo "got TERM" >>"$STUB_DIR/ssdr.log"; kill "$sl" 2>/dev/null; exit 143' TERM
  sleep 30 </dev/null >/dev/null 2>&1 &
  sl=$!
  touch "$STUB_DIR/ready"
  wait "$sl"
fi
exit 0
EOF
chmod +x "$tmp/bin/"*
STUB="$tmp/bin/ssdr"
export PATH="$tmp/bin:$PATH"
# A fake checkout as the submit directory: its build/ssdr is the stub.
mkdir -p "$tmp/root/build"
cp "$STUB" "$tmp/root/build/ssdr"
printf 'node1\nnode1\nnode1\n' >"$tmp/pbs_pro.nodes"               # select=1:ncpus=3:mpiprocs=3
printf 'node1\nnode1\nnode2\nnode2\n' >"$tmp/torque.nodes"         # nodes=2:ppn=2

# run NAME env [-u VAR | VAR=value]... bash SCRIPT [ARGS...]: runs the script in that
# environment (clean_env unsets everything the scripts read) with fresh stub logs; its
# stdout/stderr in $tmp/NAME.out/.err, its exit status returned.
run() {
  local name="$1"
  shift
  rm -f "$STUB_DIR"/*.log "$STUB_DIR/ready"
  timeout 20 "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
}
clean_env=(-u SLURM_JOB_ID -u SSDR -u SSDR_BIN -u SSDR_DATA -u SSDR_OUT -u SSDR_ROOT -u SSDR_PETSC_OPTIONS -u SSDR_GROUPS -u SSDR_RANKS
           -u SSDR_MPIEXEC -u SSDR_MPIEXEC_FLAGS -u SLURM_NTASKS -u SLURM_JOB_NUM_NODES -u SLURM_NNODES
           -u SLURM_NTASKS_PER_NODE -u SLURM_SUBMIT_DIR -u PBS_O_WORKDIR -u PBS_NODEFILE -u JOB -u FRACTION)
# expect NAME FILE LINES...: FILE holds exactly these lines.
expect() {
  local name="$1" file="$2"
  shift 2
  if [ "$(cat "$file" 2>/dev/null)" = "$(printf '%s\n' "$@")" ]; then
    ok "$name"
  else
    bad "$name"
    echo "  expected:"; printf '    %s\n' "$@"
    echo "  got:"; sed 's/^/    /' "$file" 2>/dev/null
    sed 's/^/  stderr: /' "$tmp/last.err" 2>/dev/null
  fi
}

# --- 1. syntax and directives ------------------------------------------------------------
scripts=("$SLURM_DIR"/*.sbatch "$PBS_DIR"/*.pbs)
[ "${#scripts[@]}" -eq 7 ] || bad "expected 4 SLURM and 3 PBS scripts, found ${#scripts[@]}"
for f in "${scripts[@]}" "$ROOT"/jobs/*.sh; do
  bash -n "$f" 2>"$tmp/syntax.err" || { bad "bash -n $(basename "$f")"; cat "$tmp/syntax.err"; }
done
ok "bash -n on ${#scripts[@]} batch scripts and $(ls "$ROOT"/jobs/*.sh | wc -l) job scripts"
for f in "${scripts[@]}"; do
  n=$(basename "$f")
  # sbatch and qsub stop reading directives at the first command.
  first_cmd=$(grep -n -v -E '^[[:space:]]*(#|$)' "$f" | head -1 | cut -d: -f1)
  last_dir=$(grep -n -E '^#(SBATCH|PBS) ' "$f" | tail -1 | cut -d: -f1)
  [ -n "$last_dir" ] && [ "$last_dir" -lt "$first_cmd" ] || bad "$n: a directive after the first command (line $last_dir)"
  grep -q -E '^# module load [a-z]' "$f" || bad "$n: no commented module load line"
  for v in SSDR_BIN SSDR_DATA SSDR_OUT SSDR_PETSC_OPTIONS SSDR_ROOT; do
    grep -q "^#   $v " "$f" || bad "$n: header does not document $v"
  done
  # Paths only as overridable defaults: no command hard-codes them.
  if grep -v '^#' "$f" | grep -E 'build/ssdr|/usr/share/datasets|jobs/petsc|results' |
     grep -v -E 'SSDR_BIN="\$\{SSDR_BIN:-|data="\$\{SSDR_DATA:-|\$\{SSDR_OUT:-\$SSDR_ROOT/results\}|petsc=\(-options_file "\$SSDR_ROOT/jobs/petsc/' >"$tmp/hard"; then
    bad "$n: hard-coded path: $(cat "$tmp/hard")"
  fi
done
grep -q '^#SBATCH --nodes=' "$SLURM_DIR/strong_scaling.sbatch" && grep -q '^#SBATCH --exclusive$' "$SLURM_DIR/strong_scaling.sbatch" &&
  grep -q '^#SBATCH --signal=B:USR1@300$' "$SLURM_DIR/experiment.sbatch" &&
  ok "SLURM directives: strong scaling --nodes and --exclusive, experiment --signal=B:USR1@300" ||
  bad "SLURM directives"
for f in "$PBS_DIR"/*.pbs; do
  pro=$(grep -c -E '^#PBS -l select=[0-9]+:ncpus=[0-9]+:mpiprocs=[0-9]+$' "$f")
  torque=$(grep -c -E '^##PBS -l nodes=[0-9]+:ppn=[0-9]+$' "$f")
  if [ "$pro" -eq 1 ] && [ "$torque" -eq 1 ] && ! grep -q -E '^#PBS -l nodes=' "$f"; then
    # The Torque variant as the header says to make it: the other line commented.
    sed -e 's/^#PBS -l select=/##PBS -l select=/' -e 's/^##PBS -l nodes=/#PBS -l nodes=/' "$f" >"$tmp/$(basename "$f" .pbs).torque.pbs"
    t="$tmp/$(basename "$f" .pbs).torque.pbs"
    if bash -n "$t" && [ "$(grep -c -E '^#PBS -l (select|nodes)=' "$t")" -eq 1 ] && grep -q -E '^#PBS -l nodes=' "$t"; then
      ok "$(basename "$f"): PBS Pro select line active, Torque nodes:ppn line commented (and swappable)"
    else
      bad "$(basename "$f"): Torque variant"
    fi
  else
    bad "$(basename "$f"): select=$pro torque=$torque resource lines"
  fi
done

# --- 2. soda_fashion_mnist.sbatch ----------------------------------------------------------
run sbatch_defaults env "${clean_env[@]}" SLURM_SUBMIT_DIR="$tmp/root" SLURM_NTASKS=4 \
  bash "$SLURM_DIR/soda_fashion_mnist.sbatch" 0.3
cp "$tmp/sbatch_defaults.err" "$tmp/last.err"
expect "soda_fashion_mnist.sbatch defaults: srun, the submit directory's build/ssdr, results/ and jobs/petsc" \
  "$STUB_DIR/launch.log" "srun --mpi=pmix --cpu-bind=cores $tmp/root/build/ssdr fit --method soda --data /usr/share/datasets/fashion-mnist --labeled-per-class 20 --transductive-fraction 0.3 --seed 1 --report $tmp/root/results/soda_fmnist_4r_f0.3.json -options_file $tmp/root/jobs/petsc/soda.opts -log_view :$tmp/root/results/soda_fmnist_4r_f0.3.log_view.txt"
run sbatch_override env "${clean_env[@]}" SLURM_SUBMIT_DIR="$tmp/root" SLURM_NTASKS=4 SSDR_ROOT="$ROOT" \
  SSDR_BIN="$STUB" SSDR_DATA="$tmp/fm.h5" SSDR_OUT="$tmp/o u t" \
  bash "$SLURM_DIR/soda_fashion_mnist.sbatch"
cp "$tmp/sbatch_override.err" "$tmp/last.err"
expect "soda_fashion_mnist.sbatch: SSDR_BIN, SSDR_DATA, SSDR_OUT (with a blank), SSDR_ROOT's options file" \
  "$STUB_DIR/ssdr.log" "CALL ranks=4 cwd=$tmp/root" fit --method soda --data "$tmp/fm.h5" --labeled-per-class 20 \
  --transductive-fraction 0.2 --seed 1 --report "$tmp/o u t/soda_fmnist_4r_f0.2.json" -options_file "$ROOT/jobs/petsc/soda.opts" \
  -log_view ":$tmp/o u t/soda_fmnist_4r_f0.2.log_view.txt"
run sbatch_petsc env "${clean_env[@]}" SLURM_SUBMIT_DIR="$tmp/root" SLURM_NTASKS=2 SSDR="$STUB" \
  SSDR_PETSC_OPTIONS="-lp_ksp_type cg  -tr_eps_type lapack" bash "$SLURM_DIR/soda_fashion_mnist.sbatch"
cp "$tmp/sbatch_petsc.err" "$tmp/last.err"
expect "soda_fashion_mnist.sbatch: SSDR_PETSC_OPTIONS replaces the options file; the old SSDR= still works" \
  "$STUB_DIR/ssdr.log" "CALL ranks=2 cwd=$tmp/root" fit --method soda --data /usr/share/datasets/fashion-mnist \
  --labeled-per-class 20 --transductive-fraction 0.2 --seed 1 --report "$tmp/root/results/soda_fmnist_2r_f0.2.json" \
  -lp_ksp_type cg -tr_eps_type lapack -log_view ":$tmp/root/results/soda_fmnist_2r_f0.2.log_view.txt"
if [ "$(cat "$tmp/sbatch_petsc.err")" = "ssdr job: SSDR= is deprecated, use SSDR_BIN=" ]; then
  ok "SSDR= prints one deprecation line"
else
  bad "SSDR= deprecation line: $(cat "$tmp/sbatch_petsc.err")"
fi
run sbatch_nobin env "${clean_env[@]}" SLURM_SUBMIT_DIR="$tmp" SLURM_NTASKS=2 bash "$SLURM_DIR/soda_fashion_mnist.sbatch"
rc=$?
if [ "$rc" -eq 2 ] && [ ! -e "$STUB_DIR/launch.log" ] && grep -q "'$tmp/build/ssdr' is not an executable: build ssdr or set SSDR_BIN" "$tmp/sbatch_nobin.err"; then
  ok "a missing binary is one line and exit 2 before srun ($(cat "$tmp/sbatch_nobin.err"))"
else
  bad "missing binary: rc=$rc"; cat "$tmp/sbatch_nobin.err"
fi

# --- 3. strong_scaling.sbatch --------------------------------------------------------------
run strong env "${clean_env[@]}" SLURM_SUBMIT_DIR="$tmp/root" SLURM_NTASKS=6 SLURM_JOB_NUM_NODES=2 SLURM_NTASKS_PER_NODE=3 \
  SSDR_ROOT="$ROOT" SSDR_BIN="$STUB" SSDR_DATA="$tmp/fm" SSDR_OUT="$tmp/out" bash "$SLURM_DIR/strong_scaling.sbatch" 0.5
cp "$tmp/strong.err" "$tmp/last.err"
expect "strong_scaling.sbatch: 1, 2, 4 and all 6 ranks on the fewest nodes" "$STUB_DIR/launch.log" \
  "srun --mpi=pmix --nodes=1 --ntasks=1 --cpu-bind=cores $STUB fit --method soda --data $tmp/fm --labeled-per-class 20 --transductive-fraction 0.5 --seed 1 -q --report $tmp/out/strong/soda_f0.5_np1.json" \
  "srun --mpi=pmix --nodes=1 --ntasks=2 --cpu-bind=cores $STUB fit --method soda --data $tmp/fm --labeled-per-class 20 --transductive-fraction 0.5 --seed 1 -q --report $tmp/out/strong/soda_f0.5_np2.json" \
  "srun --mpi=pmix --nodes=2 --ntasks=4 --cpu-bind=cores $STUB fit --method soda --data $tmp/fm --labeled-per-class 20 --transductive-fraction 0.5 --seed 1 -q --report $tmp/out/strong/soda_f0.5_np4.json" \
  "srun --mpi=pmix --nodes=2 --ntasks=6 --cpu-bind=cores $STUB fit --method soda --data $tmp/fm --labeled-per-class 20 --transductive-fraction 0.5 --seed 1 -q --report $tmp/out/strong/soda_f0.5_np6.json"
# The table and the plot's data: speedup T(1)/T(p), efficiency S/p, per stage too.
if "$PY" - "$tmp/out/strong/soda_f0.5_scaling.dat" "$tmp/strong.out" <<'PY'
import math, sys
rows = [l.split() for l in open(sys.argv[1]) if not l.startswith("#")]
cols = [l for l in open(sys.argv[1]) if l.startswith("# columns:")][0].split()[2:]
# read (0.5 s, under 2 % of the total) and evaluate (0 s) are left out.
assert cols == ["ranks", "total_s", "speedup", "efficiency", "peak_mib_per_rank",
                "knn_graph_s", "knn_graph_efficiency", "propagation_s", "propagation_efficiency"], cols
T = lambda p: 40 / p + 20 / math.sqrt(p) + 0.5
assert [int(r[0]) for r in rows] == [1, 2, 4, 6], rows
for r in rows:
    p = int(r[0])
    assert abs(float(r[2]) - T(1) / T(p)) < 1e-4 and abs(float(r[3]) - T(1) / T(p) / p) < 1e-4, r
    assert abs(float(r[6]) - 1.0) < 1e-4 and abs(float(r[8]) - 1 / math.sqrt(p)) < 1e-4, r  # knn 40/p, propagation 20/sqrt(p)
out = open(sys.argv[2]).read()
assert "speedup and efficiency over 1 rank(s)" in out and "\n    6    70000 " in out, out  # ranks, n
PY
then
  if ! command -v gnuplot >/dev/null || [ -s "$tmp/out/strong/soda_f0.5_scaling.png" ]; then
    ok "strong scaling: table, speedup and efficiency (whole fit and per stage) in .dat/.gp$(command -v gnuplot >/dev/null && echo ' and .png')"
  else
    bad "strong scaling: no PNG"; cat "$tmp/strong.out"
  fi
else
  bad "strong scaling summary"; cat "$tmp/strong.out" "$tmp/strong.err"
fi
run strong_ranks env "${clean_env[@]}" SLURM_SUBMIT_DIR="$tmp/root" SLURM_NTASKS=8 SLURM_JOB_NUM_NODES=2 \
  SSDR_ROOT="$ROOT" SSDR_BIN="$STUB" SSDR_OUT="$tmp/out2" SSDR_RANKS="2 8" SSDR_PETSC_OPTIONS="-log_view" \
  bash "$SLURM_DIR/strong_scaling.sbatch"
if [ "$(cut -d' ' -f1-4 "$STUB_DIR/launch.log" | tr '\n' ' ')" = "srun --mpi=pmix --nodes=1 --ntasks=2 srun --mpi=pmix --nodes=2 --ntasks=8 " ] &&
   [ "$(grep -c -x -- -log_view "$STUB_DIR/ssdr.log")" -eq 2 ] && grep -q "over 2 rank(s)" "$tmp/strong_ranks.out"; then
  ok "strong scaling: SSDR_RANKS, SSDR_PETSC_OPTIONS, speedup over the smallest count"
else
  bad "strong scaling SSDR_RANKS"; cat "$STUB_DIR/launch.log" "$tmp/strong_ranks.out" "$tmp/strong_ranks.err"
fi

# --- 4. soda_fashion_mnist.pbs (PBS Pro and Torque node files) -----------------------------
run pbs_defaults env "${clean_env[@]}" PBS_O_WORKDIR="$tmp/root" PBS_NODEFILE="$tmp/pbs_pro.nodes" FRACTION=0.5 \
  bash "$PBS_DIR/soda_fashion_mnist.pbs"
cp "$tmp/pbs_defaults.err" "$tmp/last.err"
expect "soda_fashion_mnist.pbs defaults: mpiexec -n (node file lines) --hostfile --bind-to core" "$STUB_DIR/launch.log" \
  "mpiexec -n 3 --hostfile $tmp/pbs_pro.nodes --bind-to core $tmp/root/build/ssdr fit --method soda --data /usr/share/datasets/fashion-mnist --labeled-per-class 20 --transductive-fraction 0.5 --seed 1 --report $tmp/root/results/soda_fmnist_3r_f0.5.json -options_file $tmp/root/jobs/petsc/soda.opts"
run pbs_torque env "${clean_env[@]}" PBS_O_WORKDIR="$tmp/root" PBS_NODEFILE="$tmp/torque.nodes" SSDR_BIN="$STUB" \
  SSDR_ROOT="$ROOT" SSDR_DATA="$tmp/fm" SSDR_OUT="$tmp/pbsout" SSDR_PETSC_OPTIONS= SSDR_MPIEXEC_FLAGS="-f $tmp/torque.nodes" \
  bash "$tmp/soda_fashion_mnist.torque.pbs"
cp "$tmp/pbs_torque.err" "$tmp/last.err"
expect "soda_fashion_mnist.pbs, Torque header: overrides, SSDR_PETSC_OPTIONS= for none, SSDR_MPIEXEC_FLAGS" "$STUB_DIR/launch.log" \
  "mpiexec -n 4 -f $tmp/torque.nodes $STUB fit --method soda --data $tmp/fm --labeled-per-class 20 --transductive-fraction 0.2 --seed 1 --report $tmp/pbsout/soda_fmnist_4r_f0.2.json"

# --- 4b. fit.sbatch and fit.pbs: one's own data, outputs in one folder -------------------------
run fit_sbatch env "${clean_env[@]}" SLURM_JOB_ID=7 SLURM_SUBMIT_DIR="$tmp/root" SLURM_NTASKS=2 SSDR_PETSC_OPTIONS="-log_view" \
  bash "$SLURM_DIR/fit.sbatch" "my data/iris.v2.csv" soda "$tmp/o u t" --label-column species --dim 2
cp "$tmp/fit_sbatch.err" "$tmp/last.err"
expect "fit.sbatch DATA METHOD OUTDIR OPTIONS: report, model, CSV embedding and plot named after the data, options passed as they are" \
  "$STUB_DIR/ssdr.log" "CALL ranks=2 cwd=$tmp/root" fit --method soda --data "my data/iris.v2.csv" --report "$tmp/o u t/iris_soda.json" \
  --model "$tmp/o u t/iris_soda.model" --embedding "$tmp/o u t/iris_soda.csv" --plot "$tmp/o u t/iris_soda.png" \
  --label-column species --dim 2 -log_view
grep -q "^srun " "$STUB_DIR/launch.log" && ok "fit.sbatch under SLURM (SLURM_JOB_ID): srun" ||
  bad "fit.sbatch under SLURM: not srun: $(cat "$STUB_DIR/launch.log")"
# Without SLURM (no SLURM_JOB_ID: bash on a workstation): mpiexec with SSDR_RANKS ranks.
run fit_nosl env "${clean_env[@]}" SSDR_RANKS=3 SSDR_ROOT="$tmp/root" \
  bash "$SLURM_DIR/fit.sbatch" iris.csv lda "$tmp/ws" --dim 1
cp "$tmp/fit_nosl.err" "$tmp/last.err"
expect "fit.sbatch without SLURM: mpiexec -n SSDR_RANKS" "$STUB_DIR/launch.log" \
  "mpiexec -n 3 $tmp/root/build/ssdr fit --method lda --data iris.csv --report $tmp/ws/iris_lda.json --model $tmp/ws/iris_lda.model --embedding $tmp/ws/iris_lda.csv --plot $tmp/ws/iris_lda.png --dim 1"
run pbs_nopbs env "${clean_env[@]}" SSDR_ROOT="$tmp/root" SSDR_DATA=iris.csv SSDR_METHOD=lda SSDR_OUT="$tmp/wp" SSDR_PLOT=0 \
  bash "$PBS_DIR/fit.pbs"
cp "$tmp/pbs_nopbs.err" "$tmp/last.err"
expect "fit.pbs without PBS (no PBS_NODEFILE): mpiexec -n 2, no hostfile" "$STUB_DIR/launch.log" \
  "mpiexec -n 2 $tmp/root/build/ssdr fit --method lda --data iris.csv --report $tmp/wp/iris_lda.json --model $tmp/wp/iris_lda.model --embedding $tmp/wp/iris_lda.csv"
run fit_sbatch_usage env "${clean_env[@]}" SLURM_SUBMIT_DIR="$tmp/root" bash "$SLURM_DIR/fit.sbatch" data.csv
if [ -s "$tmp/fit_sbatch_usage.err" ] && grep -q "usage: sbatch jobs/slurm/fit.sbatch DATA METHOD OUTDIR" "$tmp/fit_sbatch_usage.err" &&
   [ ! -s "$STUB_DIR/ssdr.log" ]; then
  ok "fit.sbatch without METHOD and OUTDIR: its usage line, nothing run"
else
  bad "fit.sbatch usage"; cat "$tmp/fit_sbatch_usage.err"
fi
run fit_pbs env "${clean_env[@]}" PBS_O_WORKDIR="$tmp/root" PBS_NODEFILE="$tmp/pbs_pro.nodes" SSDR_DATA="$tmp/x.npy" \
  SSDR_METHOD=lda SSDR_OUT="$tmp/po" SSDR_PLOT=0 SSDR_FIT_OPTIONS="--labels $tmp/y.npy --labeled-per-class 3" \
  bash "$PBS_DIR/fit.pbs"
cp "$tmp/fit_pbs.err" "$tmp/last.err"
expect "fit.pbs: SSDR_DATA, SSDR_METHOD, SSDR_OUT, SSDR_FIT_OPTIONS, SSDR_PLOT=0" "$STUB_DIR/launch.log" \
  "mpiexec -n 3 --hostfile $tmp/pbs_pro.nodes --bind-to core $tmp/root/build/ssdr fit --method lda --data $tmp/x.npy --report $tmp/po/x_lda.json --model $tmp/po/x_lda.model --embedding $tmp/po/x_lda.csv --labels $tmp/y.npy --labeled-per-class 3"

# --- 5. experiment: arguments and the stop signals --------------------------------------------
# signal_run NAME SIGNAL SENDER env ... bash SCRIPT...: starts the script with the waiting stub, sends SIGNAL
# to the script once the stub runs (SENDER: kill or qsig), and reports the script's exit status
# and what the stub received.
signal_run() {
  local name="$1" sig="$2" sender="$3"
  shift 3
  rm -f "$STUB_DIR"/*.log "$STUB_DIR/ready"
  # No timeout(1) here: the signal must reach the script itself (env execs bash, so $! is the
  # script); a watchdog kills it after 20 s instead.
  STUB_WAIT=1 "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" &
  local pid=$!
  (for _ in $(seq 1 200); do sleep 0.1; kill -0 "$pid" 2>/dev/null || exit 0; done; kill -KILL "$pid") \
    </dev/null >/dev/null 2>&1 &
  for _ in $(seq 1 200); do [ -e "$STUB_DIR/ready" ] && break; sleep 0.05; done
  if [ "$sender" = qsig ]; then qsig -s "$sig" "$pid"; else kill -s "$sig" "$pid"; fi
  wait "$pid"
  local rc=$?
  echo "rc=$rc $(grep '^got ' "$STUB_DIR/ssdr.log" | tr '\n' ' ')"
}
job="$ROOT/jobs/experiments/smoke.yaml"
got=$(signal_run exp_usr1 USR1 kill env "${clean_env[@]}" SLURM_SUBMIT_DIR="$tmp/root" SLURM_NTASKS=4 SSDR_OUT="$tmp/res" \
  SSDR_DATA=/x SSDR_PETSC_OPTIONS="-log_view" bash "$SLURM_DIR/experiment.sbatch" "$job" 2)
if [ "$got" = "rc=138 got USR1 " ] &&
   [ "$(cat "$STUB_DIR/launch.log")" = "srun --mpi=pmix --cpu-bind=cores $tmp/root/build/ssdr experiment $job --groups 2 --output $tmp/res/smoke -log_view" ] &&
   grep -q "SSDR_DATA is not used by experiment" "$tmp/exp_usr1.err"; then
  ok "experiment.sbatch: srun experiment JOB --groups G --output \$SSDR_OUT/NAME; SIGUSR1 (--signal=B:USR1) reaches the ranks, exit 138"
else
  bad "experiment.sbatch SIGUSR1: $got"; cat "$STUB_DIR/launch.log" "$tmp/exp_usr1.err"
fi
got=$(signal_run exp_term TERM kill env "${clean_env[@]}" SLURM_SUBMIT_DIR="$tmp/root" SLURM_NTASKS=4 SSDR_BIN="$STUB" \
  SSDR_GROUPS=3 bash "$SLURM_DIR/experiment.sbatch" "$job")
if [ "$got" = "rc=138 got USR1 " ] && [ "$(cat "$STUB_DIR/launch.log")" = "srun --mpi=pmix --cpu-bind=cores $STUB experiment $job --groups 3" ]; then
  ok "experiment.sbatch: SIGTERM (scancel) passed on as SIGUSR1, SSDR_GROUPS, the job file's own output"
else
  bad "experiment.sbatch SIGTERM: $got"; cat "$STUB_DIR/launch.log" "$tmp/exp_term.err"
fi
got=$(signal_run pbs_usr1 USR1 qsig env "${clean_env[@]}" PBS_O_WORKDIR="$tmp/root" PBS_NODEFILE="$tmp/pbs_pro.nodes" JOB="$job" \
  SSDR_GROUPS=3 SSDR_BIN="$STUB" SSDR_OUT="$tmp/res" bash "$PBS_DIR/experiment.pbs")
if [ "$got" = "rc=138 got USR1 " ] &&
   [ "$(cat "$STUB_DIR/launch.log")" = "mpiexec -n 3 --hostfile $tmp/pbs_pro.nodes --bind-to core $STUB experiment $job --groups 3 --output $tmp/res/smoke" ]; then
  ok "experiment.pbs: mpiexec experiment JOB; qsig -s USR1 reaches the ranks, exit 138"
else
  bad "experiment.pbs qsig -s USR1: $got"; cat "$STUB_DIR/launch.log" "$tmp/pbs_usr1.err"
fi
got=$(signal_run pbs_term TERM qsig env "${clean_env[@]}" PBS_O_WORKDIR="$tmp/root" PBS_NODEFILE="$tmp/torque.nodes" JOB="$job" \
  bash "$tmp/experiment.torque.pbs")
if [ "$got" = "rc=138 got USR1 " ] &&
   [ "$(cat "$STUB_DIR/launch.log")" = "mpiexec -n 4 --hostfile $tmp/torque.nodes --bind-to core $tmp/root/build/ssdr experiment $job --groups 1" ]; then
  ok "experiment.pbs, Torque header: SIGTERM (qdel, walltime) passed on as SIGUSR1, exit 138"
else
  bad "experiment.pbs SIGTERM: $got"; cat "$STUB_DIR/launch.log" "$tmp/pbs_term.err"
fi
# A step that ends by itself: its exit status is the script's.
run exp_plain env "${clean_env[@]}" SLURM_SUBMIT_DIR="$tmp/root" SLURM_NTASKS=1 bash "$SLURM_DIR/experiment.sbatch" "$job"
rc=$?
run exp_nojob env "${clean_env[@]}" SLURM_SUBMIT_DIR="$tmp/root" SLURM_NTASKS=1 bash "$SLURM_DIR/experiment.sbatch"
rc2=$?
if [ "$rc" -eq 0 ] && [ "$rc2" -ne 0 ] && grep -q "usage: sbatch jobs/slurm/experiment.sbatch JOB.yaml" "$tmp/exp_nojob.err"; then
  ok "experiment.sbatch: exit 0 when the step succeeds; no job file is a usage line"
else
  bad "experiment.sbatch exit status: rc=$rc rc2=$rc2"
fi

finish
