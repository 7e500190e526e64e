#!/usr/bin/env bash
# Packaging: installs the build into a temporary prefix and uses it as another project would.
#  1. `cmake --install BUILD --prefix P` and the tree: bin/ssdr, lib/libssdr.a, the public
#     headers with version.hpp (no private *_internal.hpp, none named by an installed header),
#     lib/cmake/ssdr/ssdrConfig*.cmake, lib/pkgconfig/ssdr.pc;
#  2. P/bin/ssdr --version runs without LD_LIBRARY_PATH (its RUNPATH) and ldd finds every library;
#  3. examples/ (find_package(ssdr), ssdr::ssdr) configured and built against P alone, run
#     under MPI on 1 and 2 ranks: exit 0, one line of output (quiet), the same accuracy;
#  3b. the Python package: installed under P's Python path (ssdr/__init__.py, ssdr/_ssdr*.so);
#     examples/ssdr_example.py run from outside the build tree with PYTHONPATH at P alone on 1
#     and 2 ranks prints the C++ example's line, and its embedding and predictions equal, bit
#     for bit, those of P/bin/ssdr fit --split (the script's split) --embedding and ssdr predict;
#  4. ssdr.pc: the same program and every installed header compiled with
#     `pkg-config --cflags --libs ssdr` only, run on 1 rank: the same line again;
#  5. the tree still works once moved elsewhere (RPATH and .pc prefix are relative).
# Usage: install.sh BUILD_DIR SOURCE_DIR
# Environment (set by tests/CMakeLists.txt): CMAKE, SSDR_CC, SSDR_CXX, MPIEXEC,
# MPIEXEC_NUMPROC_FLAG, MPIEXEC_PREFLAGS, MPIEXEC_POSTFLAGS, SSDR_PETSC_PKG_CONFIG_DIRS,
# SSDR_PYTHON (the interpreter) and SSDR_PYTHON_DIR (the package's folder under the prefix;
# empty when the build has no Python package: 3b is skipped with a line).
set -u
BUILD="$(cd "$1" && pwd)"
SRC="$(cd "$2" && pwd)"
# shellcheck source=tests/regression/common.bash
source "$(dirname "${BASH_SOURCE[0]}")/common.bash"
CMAKE="${CMAKE:-cmake}"
CC_="${SSDR_CC:-cc}"
CXX_="${SSDR_CXX:-c++}"
NP_FLAG="${MPIEXEC_NUMPROC_FLAG:--n}"
read -r -a PRE <<<"${MPIEXEC_PREFLAGS:-}"
read -r -a POST <<<"${MPIEXEC_POSTFLAGS:-}"
DATA="$SRC/tests/data/iris.csv"
prefix="$tmp/prefix"
unset LD_LIBRARY_PATH

# run_mpi NAME RANKS PROGRAM: runs PROGRAM on DATA under mpiexec; the output in $tmp/NAME.{out,err}.
run_mpi() {
  timeout 120 "$MPIEXEC" "$NP_FLAG" "$2" "${PRE[@]}" "$3" "${POST[@]}" "$DATA" >"$tmp/$1.out" 2>"$tmp/$1.err"
}
# check_run NAME: exit status 0 (in $rc), exactly one line on stdout, nothing on stderr.
check_run() {
  if [ "$rc" -eq 0 ] && [ "$(wc -l <"$tmp/$1.out")" -eq 1 ] && [ ! -s "$tmp/$1.err" ] &&
    grep -q 'accuracy unlabeled [0-9.]*$' "$tmp/$1.out"; then
    ok "$1: $(cat "$tmp/$1.out")"
  else
    bad "$1: exit $rc, stdout:"; cat "$tmp/$1.out"; echo "stderr:"; cat "$tmp/$1.err"
  fi
}

# 1. Install and look at the tree.
if ! "$CMAKE" --install "$BUILD" --prefix "$prefix" >"$tmp/install.log" 2>&1; then
  bad "cmake --install $BUILD"; cat "$tmp/install.log"; finish; exit 1
fi
missing=""
for f in bin/ssdr lib/libssdr.a lib/cmake/ssdr/ssdrConfig.cmake lib/cmake/ssdr/ssdrConfigVersion.cmake \
  lib/cmake/ssdr/ssdrTargets.cmake lib/cmake/ssdr/SsdrPetsc.cmake lib/pkgconfig/ssdr.pc \
  include/ssdr/core/version.hpp include/ssdr/core/lapack.hpp include/ssdr/driver/pipeline.hpp; do
  [ -f "$prefix/$f" ] || missing="$missing $f"
done
[ -z "$missing" ] && ok "installed tree has bin, lib, headers, CMake package and .pc" || bad "not installed:$missing"
n_src=$(cd "$SRC/include" && find ssdr -name '*.hpp' | wc -l)
n_inst=$(cd "$prefix/include" && find ssdr -name '*.hpp' ! -path ssdr/core/version.hpp | wc -l)
[ "$n_src" -eq "$n_inst" ] && ok "all $n_src public headers installed (+ version.hpp)" ||
  bad "public headers: $n_src in include/, $n_inst installed"
private=$(find "$prefix" -name '*_internal*'; grep -rl '_internal\.hpp' "$prefix/include")
[ -z "$private" ] && ok "no private header installed or included" || bad "private headers: $private"

# 2. The installed command line runs from its own RUNPATH.
if out=$("$prefix/bin/ssdr" --version 2>&1) && [[ "$out" == "ssdr "* ]]; then
  ok "installed bin/ssdr --version without LD_LIBRARY_PATH: $out"
else
  bad "installed bin/ssdr --version: $out"
fi
runpath=$(readelf -d "$prefix/bin/ssdr" | grep -E 'RUNPATH|RPATH')
[[ "$runpath" == *'$ORIGIN/../lib'* ]] && ok "RUNPATH has \$ORIGIN/../lib" || bad "RUNPATH: $runpath"
notfound=$(ldd "$prefix/bin/ssdr" | grep 'not found')
[ -z "$notfound" ] && ok "ldd finds every library of bin/ssdr" || bad "ldd: $notfound"

# 3. A CMake project that finds the installed ssdr, on 1 and 2 ranks.
if "$CMAKE" -S "$SRC/examples" -B "$tmp/example" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_COMPILER="$CC_" \
  -DCMAKE_CXX_COMPILER="$CXX_" >"$tmp/example.log" 2>&1 &&
  "$CMAKE" --build "$tmp/example" >>"$tmp/example.log" 2>&1; then
  ok "examples/ configured and built against the installed tree ($(grep -o 'PETSc [0-9.]* at [^,]*' "$tmp/example.log"))"
  for np in 1 2; do
    run_mpi "cmake-np$np" "$np" "$tmp/example/ssdr_example"
    rc=$?
    check_run "cmake-np$np"
  done
  if [ -s "$tmp/cmake-np1.out" ] && cmp -s "$tmp/cmake-np1.out" "$tmp/cmake-np2.out"; then ok "same accuracy on 1 and 2 ranks"; else
    bad "1 and 2 ranks differ"; fi
else
  bad "examples/ against the installed tree"; cat "$tmp/example.log"
fi
# 3a. examples/ is a C++-only project (project(... LANGUAGES CXX)); a consumer enabling C as well
#     finds the package too.
if "$CMAKE" -S "$SRC/examples" -B "$tmp/example_c" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_COMPILER="$CC_" \
  -DCMAKE_CXX_COMPILER="$CXX_" -DSSDR_EXAMPLE_ENABLE_C=ON >"$tmp/example_c.log" 2>&1 &&
  "$CMAKE" --build "$tmp/example_c" >>"$tmp/example_c.log" 2>&1; then
  ok "a C and C++ consumer finds and links the installed ssdr as the C++-only examples/ does"
else
  bad "a C and C++ consumer of the installed tree"; cat "$tmp/example_c.log"
fi

# 3b. The Python package, from outside the build tree, against the installed command line.
PY="${SSDR_PYTHON:-}"
PYDIR="${SSDR_PYTHON_DIR:-}"
if [ -z "$PY" ] || [ -z "$PYDIR" ]; then
  echo "skipped: the Python package (not built: pybind11, Python headers or mpi4py missing)"
else
  if [ -f "$prefix/$PYDIR/ssdr/__init__.py" ] && compgen -G "$prefix/$PYDIR/ssdr/_ssdr*.so" >/dev/null; then
    ok "Python package installed in $PYDIR/ssdr"
  else
    bad "Python package not in $prefix/$PYDIR/ssdr"
  fi
  mkdir -p "$tmp/py" && cp "$SRC/examples/ssdr_example.py" "$tmp/py/"
  for np in 1 2; do
    name="python-np$np"
    (cd "$tmp/py" && PYTHONPATH="$prefix/$PYDIR" timeout 120 "$MPIEXEC" "$NP_FLAG" "$np" "${PRE[@]}" "$PY" "${POST[@]}" \
      ssdr_example.py "$DATA" --split-out "split$np.txt" --embedding "py$np.npy" --predictions "py$np.txt") \
      >"$tmp/$name.out" 2>"$tmp/$name.err"
    rc=$?
    check_run "$name"
    [ -s "$tmp/$name.out" ] && cmp -s "$tmp/$name.out" "$tmp/cmake-np1.out" && ok "$name prints the C++ example's line" ||
      bad "$name and the C++ example differ: $(cat "$tmp/$name.out") / $(cat "$tmp/cmake-np1.out" 2>/dev/null)"
    # The command line on the same data, split and seed, on as many ranks.
    if timeout 120 "$MPIEXEC" "$NP_FLAG" "$np" "${PRE[@]}" "$prefix/bin/ssdr" "${POST[@]}" fit --method soda --dim 2 --seed 1 \
      --data "$DATA" --split "$tmp/py/split$np.txt" --model "$tmp/py/cli$np.model" --embedding "$tmp/py/cli$np.npy" -q \
      >"$tmp/cli-fit$np.log" 2>&1 &&
      timeout 120 "$MPIEXEC" "$NP_FLAG" "$np" "${PRE[@]}" "$prefix/bin/ssdr" "${POST[@]}" predict --model "$tmp/py/cli$np.model" \
        --data "$DATA" --output "$tmp/py/cli$np.txt" -q >>"$tmp/cli-fit$np.log" 2>&1; then
      cmp -s "$tmp/py/py$np.txt" "$tmp/py/cli$np.txt" && ok "$name: predictions equal ssdr predict's" ||
        bad "$name: predictions differ from ssdr predict's"
      if "$PY" -c 'import sys, numpy as np; sys.exit(0 if np.array_equal(np.load(sys.argv[1]), np.load(sys.argv[2])) else 1)' \
        "$tmp/py/py$np.npy" "$tmp/py/cli$np.npy"; then ok "$name: embedding equals ssdr fit --embedding, bit for bit"; else
        bad "$name: embedding differs from ssdr fit --embedding"; fi
    else
      bad "installed ssdr fit/predict on the Python example's split"; cat "$tmp/cli-fit$np.log"
    fi
  done
  cmp -s "$tmp/py/py1.txt" "$tmp/py/py2.txt" && ok "Python: the same predictions on 1 and 2 ranks" ||
    bad "Python: predictions differ between 1 and 2 ranks"
fi

# 4. ssdr.pc: the same program, and every installed header, with pkg-config's flags alone.
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig:${SSDR_PETSC_PKG_CONFIG_DIRS:-}${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
if ! command -v pkg-config >/dev/null; then
  echo "skipped: ssdr.pc (no pkg-config)"
elif flags=$(pkg-config --cflags --libs ssdr 2>"$tmp/pc.err"); then
  includes=()
  while IFS= read -r h; do includes+=(-include "$h"); done < <(cd "$prefix/include" && find ssdr -name '*.hpp' | sort)
  # shellcheck disable=SC2086  # the flags are words
  if "$CXX_" -std=c++17 "${includes[@]}" "$SRC/examples/ssdr_example.cpp" -o "$tmp/pc_example" $flags \
    >"$tmp/pc.log" 2>&1; then
    ok "pkg-config --cflags --libs ssdr: $((${#includes[@]} / 2)) headers and examples/ssdr_example.cpp compile and link"
    run_mpi pc-np1 1 "$tmp/pc_example"
    rc=$?
    check_run pc-np1
    [ -s "$tmp/pc-np1.out" ] && cmp -s "$tmp/cmake-np1.out" "$tmp/pc-np1.out" && ok "pkg-config build prints the same" || bad "pkg-config build differs"
  else
    bad "compiling with pkg-config --cflags --libs ssdr ($flags)"; cat "$tmp/pc.log"
  fi
else
  bad "pkg-config --cflags --libs ssdr"; cat "$tmp/pc.err"
fi

# 5. Relocated: the RUNPATH and the .pc prefix are relative to where the files lie.
mv "$prefix" "$tmp/moved"
if out=$("$tmp/moved/bin/ssdr" --version 2>&1); then ok "moved bin/ssdr runs"; else bad "moved bin/ssdr: $out"; fi
if [ -n "$PY" ] && [ -n "$PYDIR" ]; then
  if out=$(cd "$tmp" && PYTHONPATH="$tmp/moved/$PYDIR" timeout 60 "$PY" -c 'import ssdr; print(ssdr.__version__)' 2>&1); then
    ok "moved Python package imports (ssdr $out)"; else bad "moved Python package: $out"; fi
fi
if command -v pkg-config >/dev/null; then
  pc_prefix=$(PKG_CONFIG_PATH="$tmp/moved/lib/pkgconfig" pkg-config --variable=prefix ssdr 2>/dev/null)
  [ "$(cd "$pc_prefix" 2>/dev/null && pwd)" = "$(cd "$tmp/moved" && pwd)" ] && ok "moved ssdr.pc points at its new prefix" ||
    bad "moved ssdr.pc prefix: $pc_prefix"
fi
finish
