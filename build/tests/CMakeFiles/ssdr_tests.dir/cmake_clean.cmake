file(REMOVE_RECURSE
  "CMakeFiles/ssdr_tests.dir/main.cpp.o"
  "CMakeFiles/ssdr_tests.dir/main.cpp.o.d"
  "CMakeFiles/ssdr_tests.dir/support.cpp.o"
  "CMakeFiles/ssdr_tests.dir/support.cpp.o.d"
  "CMakeFiles/ssdr_tests.dir/unit/core_test.cpp.o"
  "CMakeFiles/ssdr_tests.dir/unit/core_test.cpp.o.d"
  "ssdr_tests"
  "ssdr_tests.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang CXX)
  include(CMakeFiles/ssdr_tests.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
