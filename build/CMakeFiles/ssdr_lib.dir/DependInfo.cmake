
# Consider dependencies only in project.
set(CMAKE_DEPENDS_IN_PROJECT_ONLY OFF)

# The set of languages for which implicit dependencies are needed:
set(CMAKE_DEPENDS_LANGUAGES
  )

# The set of dependency files which are needed:
set(CMAKE_DEPENDS_DEPENDENCY_FILES
  "/work/main/src/core/dense.cpp" "CMakeFiles/ssdr_lib.dir/src/core/dense.cpp.o" "gcc" "CMakeFiles/ssdr_lib.dir/src/core/dense.cpp.o.d"
  "/work/main/src/core/error.cpp" "CMakeFiles/ssdr_lib.dir/src/core/error.cpp.o" "gcc" "CMakeFiles/ssdr_lib.dir/src/core/error.cpp.o.d"
  "/work/main/src/core/lapack.cpp" "CMakeFiles/ssdr_lib.dir/src/core/lapack.cpp.o" "gcc" "CMakeFiles/ssdr_lib.dir/src/core/lapack.cpp.o.d"
  "/work/main/src/core/petsc.cpp" "CMakeFiles/ssdr_lib.dir/src/core/petsc.cpp.o" "gcc" "CMakeFiles/ssdr_lib.dir/src/core/petsc.cpp.o.d"
  "/work/main/src/core/progress.cpp" "CMakeFiles/ssdr_lib.dir/src/core/progress.cpp.o" "gcc" "CMakeFiles/ssdr_lib.dir/src/core/progress.cpp.o.d"
  )

# Targets to which this target links.
set(CMAKE_TARGET_LINKED_INFO_FILES
  )

# Fortran module output directory.
set(CMAKE_Fortran_TARGET_MODULE_DIR "")
