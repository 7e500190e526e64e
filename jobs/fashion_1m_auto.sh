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
out="${SSDR_OUT:-$SSDR_ROOT/results}"
# The same protocol for both (jobs/fashion_1m_soda.sh with SSDR_METHOD), SODA first.
SSDR_METHOD=soda bash "$SSDR_ROOT/jobs/fashion_1m_soda.sh" "$ranks" "$fraction" "$@"
SSDR_METHOD=auto bash "$SSDR_ROOT/jobs/fashion_1m_soda.sh" "$ranks" "$fraction" "$@"
soda="$out/fashion_1m_soda_np${ranks}_f${fraction}.json"
auto="$out/fashion_1m_auto_np${ranks}_f${fraction}.json"
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
