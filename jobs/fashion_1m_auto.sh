#!/usr/bin/env bash
# Issue 49 at scale: `--method auto` on the augmented Fashion-MNIST of 1 050 000 samples
# (jobs/make_fashion_1m.sh, written first when missing) with NN-descent, 20 labeled samples per
# class, transductive fraction F (rest unseen), against one default SODA fit of the same
# protocol measured in the same run (time and peak memory per rank, from the reports).
# Usage: jobs/fashion_1m_auto.sh [RANKS] [TRANSDUCTIVE_FRACTION] [extra ssdr/PETSc options]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
ranks="${1:-2}"
fraction="${2:-0.2}"
shift $(( $# > 2 ? 2 : $# ))
data="${SSDR_DATA:-$HOME/ssdr-data}/fashion-1m"
[ -e "$data/train-images-idx3-ubyte" ] || bash "$SSDR_ROOT/jobs/make_fashion_1m.sh" "$data"
out="${SSDR_OUT:-$SSDR_ROOT/results}"
mkdir -p "$out"
run() {  # METHOD REPORT
  mpiexec -n "$ranks" "$SSDR_BUILD/ssdr" fit --method "$1" --data "$data" --format idx \
    --labeled-per-class 20 --transductive-fraction "$fraction" --seed 1 --knn-method nndescent \
    --report "$2" "${@:3}"
}
soda="$out/fashion_1m_soda_np${ranks}_f${fraction}.json"
auto="$out/fashion_1m_auto_np${ranks}_f${fraction}.json"
run soda "$soda" "$@"
run auto "$auto" "$@"
"${SSDR_PYTHON:-/usr/bin/python3}" - "$soda" "$auto" <<'PY'
import json, sys
soda, auto = (json.load(open(p)) for p in sys.argv[1:3])
def peak(r):
    return "%.0f" % r["peak_memory_mib"]["max"]
ts, ta = soda["timings_s"]["total"], auto["timings_s"]["total"]
sel = auto["info"]["selection"]
print("fashion_1m_auto: one SODA fit %.0f s, peak %s MiB/rank; auto %.0f s (%.1fx), peak %s MiB/rank; chose %s"
      % (ts, peak(soda), ta, ta / ts, peak(auto), json.dumps(sel["chosen"])))
print("fashion_1m_auto: unlabeled accuracy SODA %.4f, auto %.4f; unseen SODA %s, auto %s"
      % (soda["accuracy"]["unlabeled"], auto["accuracy"]["unlabeled"], soda["accuracy"].get("unseen"), auto["accuracy"].get("unseen")))
PY
