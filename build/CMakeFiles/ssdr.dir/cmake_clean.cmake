file(REMOVE_RECURSE
  "CMakeFiles/ssdr.dir/src/app/main.cpp.o"
  "CMakeFiles/ssdr.dir/src/app/main.cpp.o.d"
  "ssdr"
  "ssdr.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang CXX)
  include(CMakeFiles/ssdr.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
