#!/usr/bin/env bash
# Installs everything ssdr needs on a bare Debian 12 machine (run as root or with sudo).
set -euo pipefail
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends \
  build-essential cmake pkg-config git ca-certificates \
  openmpi-bin libopenmpi-dev \
  petsc-dev slepc-dev libscalapack-openmpi-dev \
  libopenblas0-serial libopenblas-serial-dev libopenblas-dev liblapack-dev \
  libboost-serialization-dev libboost-program-options-dev \
  libgtest-dev libbenchmark-dev zlib1g-dev libhdf5-openmpi-dev nlohmann-json3-dev \
  libyaml-cpp-dev gnuplot-nox python3 dataset-fashion-mnist iproute2 \
  python3-numpy python3-faiss python3-pynndescent python3-hnswlib \
  python3-dev pybind11-dev python3-pybind11 python3-mpi4py python3-sklearn python3-scipy \
  python3-pandas python3-matplotlib python3-h5py-mpi slurm-wlm munge >/dev/null
# Debian's reference BLAS is 20x slower than OpenBLAS; PETSc, SLEPc, ScaLAPACK and ssdr all
# load libblas.so.3/liblapack.so.3 through these alternatives: point them at the serial
# OpenBLAS (one MPI rank per core, no hidden threads).
arch="$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)"
$SUDO update-alternatives --set "libblas.so.3-$arch" "/usr/lib/$arch/openblas-serial/libblas.so.3" >/dev/null
$SUDO update-alternatives --set "liblapack.so.3-$arch" "/usr/lib/$arch/openblas-serial/liblapack.so.3" >/dev/null
# Some of PETSc's own dependencies (SuperLU_dist, Trilinos) load libopenblas.so.0 by name:
# the serial build as well, so no BLAS in the process starts threads of its own. The link-time
# names (libblas.so, liblapack.so, libopenblas.so) must then be the serial ones too: the
# threaded libblas.so needs the threaded libopenblas.so.0's internal symbols.
for name in libopenblas.so.0 libblas.so liblapack.so libopenblas.so; do
  target="/usr/lib/$arch/openblas-serial/$name"
  if [ -e "$target" ] && update-alternatives --list "$name-$arch" >/dev/null 2>&1; then
    $SUDO update-alternatives --set "$name-$arch" "$target" >/dev/null
  fi
done
echo "ssdr dependencies installed (BLAS: $(readlink -f /usr/lib/$arch/libblas.so.3))"
