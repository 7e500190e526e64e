# Sourced by the benchmark scripts: bench_build TARGET configures $BUILD (Release, benchmarks
# on, tests off) and builds TARGET, printing the log's tail only when a step fails.
bench_build() {
  local target="$1"
  mkdir -p "$BUILD"
  cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DSSDR_BUILD_BENCHMARKS=ON \
    -DSSDR_BUILD_TESTS=OFF > "$BUILD/$target.cmake.log" 2>&1 || { cat "$BUILD/$target.cmake.log"; exit 1; }
  make -C "$BUILD" -j"$(nproc)" "$target" > "$BUILD/$target.make.log" 2>&1 || { tail -40 "$BUILD/$target.make.log"; exit 1; }
}
