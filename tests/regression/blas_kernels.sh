#!/usr/bin/env bash
# OpenBLAS's kernels: `ssdr` started without OPENBLAS_CORETYPE runs the kernels the CPU's
# features call for, not OpenBLAS's generic fallback for a CPU model it does not know
# (src/core/blas_kernels.cpp restarts the process), on 1 and 2 ranks; a user's
# OPENBLAS_CORETYPE is kept. The report's provenance names the kernels.
# Usage: blas_kernels.sh SSDR_BINARY DATA_DIR   (MPIEXEC and SSDR_PYTHON from the environment)
set -u
SSDR="$1"
DATA="$(cd "$2" && pwd)"
source "$(dirname "${BASH_SOURCE[0]}")/common.bash"

flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
has() { for f in "$@"; do [[ $flags == *" $f "* ]] || return 1; done; }
want=""
if has avx512f avx512cd avx512bw avx512dq avx512vl; then want=SkylakeX; elif has avx2 fma; then want=Haswell; fi

# kernels RANKS [ENV...]: the report's blas_kernels of a fit of iris (or "failed: …").
kernels() {
  local ranks="$1"
  shift
  rm -f "$tmp/r.json"
  if ! env "$@" "$MPIEXEC" -n "$ranks" "$SSDR" fit --data "$DATA/iris.csv" --method lda \
    --labeled-per-class 5 --report "$tmp/r.json" --quiet >/dev/null 2>"$tmp/err"; then
    echo "failed: $(head -c 300 "$tmp/err")"
    return
  fi
  "$PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["provenance"]["libraries"]["blas_kernels"])' "$tmp/r.json"
}

for ranks in 1 2; do
  got="$(kernels "$ranks" -u OPENBLAS_CORETYPE)"
  case "$got" in
    failed:*) bad "$ranks rank(s): the fit $got" ;;
    "") ok "$ranks rank(s): not OpenBLAS (the Debian alternative names another BLAS): nothing to check" ;;
    Prescott | Core2 | Penryn | Dunnington | Nehalem | Katmai | Coppermine | Northwood | Atom | Unknown)
      if [ -n "$want" ]; then bad "$ranks rank(s): OpenBLAS runs its generic $got kernels on a CPU with $want's features"
      else ok "$ranks rank(s): $got on a CPU without AVX2"; fi ;;
    *) ok "$ranks rank(s): OpenBLAS runs $got kernels" ;;
  esac
done
# A user's choice is kept (Sandybridge: AVX without FMA, on every x86-64 CPU this runs on).
got="$(kernels 1 OPENBLAS_CORETYPE=Sandybridge)"
if [ "$got" = "" ] || [ "$got" = Sandybridge ]; then ok "OPENBLAS_CORETYPE=Sandybridge kept ($got)"
else bad "OPENBLAS_CORETYPE=Sandybridge: the report says $got"; fi
finish
