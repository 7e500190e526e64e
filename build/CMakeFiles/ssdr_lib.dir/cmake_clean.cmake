file(REMOVE_RECURSE
  "CMakeFiles/ssdr_lib.dir/src/core/dense.cpp.o"
  "CMakeFiles/ssdr_lib.dir/src/core/dense.cpp.o.d"
  "CMakeFiles/ssdr_lib.dir/src/core/error.cpp.o"
  "CMakeFiles/ssdr_lib.dir/src/core/error.cpp.o.d"
  "CMakeFiles/ssdr_lib.dir/src/core/lapack.cpp.o"
  "CMakeFiles/ssdr_lib.dir/src/core/lapack.cpp.o.d"
  "CMakeFiles/ssdr_lib.dir/src/core/petsc.cpp.o"
  "CMakeFiles/ssdr_lib.dir/src/core/petsc.cpp.o.d"
  "CMakeFiles/ssdr_lib.dir/src/core/progress.cpp.o"
  "CMakeFiles/ssdr_lib.dir/src/core/progress.cpp.o.d"
  "libssdr_lib.a"
  "libssdr_lib.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang CXX)
  include(CMakeFiles/ssdr_lib.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
