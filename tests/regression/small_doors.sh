#!/usr/bin/env bash
# The small doors of issue 47: each mistake is one line on stderr naming the option, file or
# label and what was expected, a non-zero exit (on every rank), and no output left behind.
# Usage: small_doors.sh SSDR_BINARY DATA_DIR   (MPIEXEC and SSDR_PYTHON from the environment)
set -u
SSDR="$1"
DATA="$(cd "$2" && pwd)"
source "$(dirname "${BASH_SOURCE[0]}")/common.bash"

# refuse NAME EXPECTED_TEXT [--absent TEXT] -- COMMAND...: non-zero exit, exactly one line on
# stderr holding EXPECTED_TEXT (and not the --absent text), nothing on stdout.
refuse() {
  local name="$1" want="$2" absent=""
  shift 2
  if [ "$1" = --absent ]; then absent="$2"; shift 2; fi
  [ "$1" = -- ] && shift
  if timeout 120 "$@" >"$tmp/out" 2>"$tmp/err"; then
    bad "$name: exit 0"
  elif [ "$(wc -l <"$tmp/err")" -ne 1 ] || ! grep -qF -- "$want" "$tmp/err"; then
    bad "$name: expected one line with '$want', got: $(head -c 400 "$tmp/err")"
  elif [ -n "$absent" ] && grep -qF -- "$absent" "$tmp/err"; then
    bad "$name: the line should not say '$absent': $(cat "$tmp/err")"
  elif [ -s "$tmp/out" ]; then
    bad "$name: wrote on stdout: $(head -c 200 "$tmp/out")"
  else
    ok "$name"
  fi
}

RUN=("$MPIEXEC" -n 2 "$SSDR")
SODA=(fit --method soda --data "$DATA/iris.csv" --labeled-per-class 5 --seed 1 -q)

# 1. ssdr's own PETSc options: a value of the wrong type names the option and what it expects
#    (not PETSc's source text, nor "another rank died"); nothing is written.
refuse "-lp_mixed_inner_rtol abc" "-lp_mixed_inner_rtol expects a finite number" \
  -- "${RUN[@]}" "${SODA[@]}" --report "$tmp/r1.json" -lp_mixed_inner_rtol abc
[ -e "$tmp/r1.json" ] && bad "-lp_mixed_inner_rtol abc left a report" || ok "-lp_mixed_inner_rtol abc: no report left"
refuse "-lp_reorder maybe" "-lp_reorder expects true or false" -- "${RUN[@]}" "${SODA[@]}" -lp_reorder maybe
refuse "-lp_mixed_precision 2" "-lp_mixed_precision expects true or false" \
  -- "${RUN[@]}" "${SODA[@]}" -lp_mixed_precision 2
SOGE=(fit --method soge --data "$DATA/iris.csv" --labeled-per-class 5 --seed 1 -q)
refuse "-soge_stiefel_tol x" "-soge_stiefel_tol expects a finite number" -- "${RUN[@]}" "${SOGE[@]}" -soge_stiefel_tol x
refuse "-soge_stiefel_max_it 1.5" "-soge_stiefel_max_it expects an integer" \
  -- "${RUN[@]}" "${SOGE[@]}" -soge_stiefel_max_it 1.5
refuse "-soge_stiefel_newton bad" "-soge_stiefel_newton expects true or false" \
  -- "${RUN[@]}" "${SOGE[@]}" -soge_stiefel_newton bad
if timeout 120 "${RUN[@]}" "${SODA[@]}" -lp_mixed_inner_rtol 1e-3 -lp_reorder -lp_mixed_precision yes \
    >"$tmp/out" 2>"$tmp/err"; then
  ok "valid values of the same options are taken"
else
  bad "valid -lp_mixed_inner_rtol 1e-3 -lp_reorder -lp_mixed_precision yes refused: $(head -c 300 "$tmp/err")"
fi

# 2. String labels that are not UTF-8 (NPY |S, HDF5): the file and the label, one line.
if "$PY" - "$DATA/iris.csv" "$tmp" <<'PY'
import sys
import numpy as np
t = np.loadtxt(sys.argv[1], delimiter=",")
np.save(sys.argv[2] + "/x.npy", t[:, 1:])
names = np.array([b"setosa", b"versicolor", b"virginica"])[t[:, 0].astype(int) - int(t[:, 0].min())]
names[7] = b"vers\xffcolor"
np.save(sys.argv[2] + "/y.npy", names)
try:
    import h5py
except ImportError:
    sys.exit(0)
names[7] = names[8]
names[100] = b"vir\xc3\x28nica"  # a lead byte without its continuation
with h5py.File(sys.argv[2] + "/d.h5", "w") as f:
    f["X"] = t[:, 1:]
    f["y"] = names
PY
then
  refuse "NPY |S label not UTF-8" "y.npy: label 8 is not valid UTF-8 (byte 0xff at offset 4)" \
    -- "${RUN[@]}" fit --method lda --data "$tmp/x.npy" --labels "$tmp/y.npy" --labeled-per-class 5 -q
  if [ -e "$tmp/d.h5" ]; then
    refuse "HDF5 string label not UTF-8" "d.h5:/y: label 101 is not valid UTF-8 (byte 0xc3 at offset 3)" \
      -- "${RUN[@]}" fit --method lda --data "$tmp/d.h5" --labeled-per-class 5 -q
  else
    echo "skip: HDF5 string labels (no h5py for $PY)"
  fi
else
  bad "could not write the NPY labels with $PY (numpy)"
fi

# 3. A propagation that does not converge advises only what is not already in effect.
refuse "GMRES + Jacobi at alpha 0.999999" "try a -lp_ksp_max_it above 20 or an --alpha-u below 0.999999" \
  --absent "ksp_type gmres" \
  -- "${RUN[@]}" "${SODA[@]}" --alpha-u 0.999999 -lp_ksp_type gmres -lp_pc_type jacobi -lp_ksp_max_it 20
grep -qF "pc_type jacobi" "$tmp/err" && bad "GMRES + Jacobi: advises -lp_pc_type jacobi: $(cat "$tmp/err")" ||
  ok "GMRES + Jacobi: no -lp_pc_type jacobi advised"
refuse "block CG (CG + Jacobi) at alpha 0.999999" "try -lp_ksp_type gmres, a -lp_ksp_max_it above 5" \
  --absent "pc_type jacobi" -- "${RUN[@]}" "${SODA[@]}" --alpha-u 0.999999 -lp_ksp_max_it 5
refuse "GMRES + ILU at alpha 0.999999" "try -lp_pc_type jacobi, a -lp_ksp_max_it above 3" --absent "ksp_type gmres" \
  -- "$SSDR" "${SODA[@]}" --alpha-u 0.999999 -lp_ksp_type gmres -lp_pc_type ilu -lp_ksp_max_it 3

# 4. An argument that the command does not take is refused, after --version and --help too.
refuse "--version --bogus" "unexpected argument '--bogus': ssdr --version takes no other argument" \
  -- "${RUN[@]}" --version --bogus
refuse "version bogus" "unexpected argument 'bogus'" -- "$SSDR" version bogus
refuse "--help --bogus" "unexpected argument '--bogus': ssdr --help" -- "${RUN[@]}" --help --bogus
refuse "-h --bogus" "unexpected argument '--bogus': ssdr -h" -- "$SSDR" -h --bogus
refuse "methods --bogus" "unexpected argument '--bogus': ssdr methods takes only --markdown" \
  -- "${RUN[@]}" methods --bogus
refuse "methods --markdown --bogus" "unexpected argument '--bogus'" -- "$SSDR" methods --markdown --bogus
refuse "methods --markdown --markdown" "ssdr methods takes one of --markdown and --help" \
  -- "$SSDR" methods --markdown --markdown
refuse "help fit --bogus" "unexpected argument '--bogus'" -- "$SSDR" help fit --bogus

# 5. A write error on standard output (a full disk, a closed descriptor) is one line and a
#    non-zero exit. ssdr run directly (one rank): under mpiexec the ranks write to mpiexec's
#    pipe, and mpiexec's own writes are Open MPI's to check.
if [ -w /dev/full ]; then
  for args in "methods --markdown" "methods" "--version" "--help" "fit --help"; do
    # shellcheck disable=SC2086
    if "$SSDR" $args >/dev/full 2>"$tmp/err"; then
      bad "ssdr $args > /dev/full: exit 0"
    elif [ "$(wc -l <"$tmp/err")" -ne 1 ] ||
      ! grep -qF "ssdr: error: cannot write standard output: No space left on device" "$tmp/err"; then
      bad "ssdr $args > /dev/full: $(head -c 300 "$tmp/err")"
    else
      ok "ssdr $args > /dev/full: one line, exit non-zero"
    fi
  done
  if "$SSDR" fit --method lda --data "$DATA/iris.csv" --labeled-per-class 5 -q >/dev/full 2>"$tmp/err"; then
    bad "ssdr fit > /dev/full: exit 0"
  elif ! grep -qF "cannot write standard output" "$tmp/err" || [ "$(wc -l <"$tmp/err")" -ne 1 ]; then
    bad "ssdr fit > /dev/full: $(head -c 300 "$tmp/err")"
  else
    ok "ssdr fit > /dev/full: one line, exit non-zero"
  fi
else
  echo "skip: /dev/full is not writable here"
fi
if "$SSDR" --version >&- 2>"$tmp/err"; then
  bad "ssdr --version with stdout closed: exit 0"
elif ! grep -qF "cannot write standard output: Bad file descriptor" "$tmp/err"; then
  bad "ssdr --version with stdout closed: $(head -c 300 "$tmp/err")"
else
  ok "ssdr --version with stdout closed: one line, exit non-zero"
fi
if "$SSDR" --version >"$tmp/version" 2>"$tmp/err" && [ -s "$tmp/version" ] && [ ! -s "$tmp/err" ]; then
  ok "ssdr --version to a file: exit 0, nothing on stderr"
else
  bad "ssdr --version to a file: $(head -c 300 "$tmp/err")"
fi

finish
