# cmake.method_families: the generator of the method list (cmake/SsdrMethods.cmake) lists
# exactly the files of its folder, by name: a file added is a family listed, a file deleted is
# a family gone, and a file name that cannot name a function stops the configuration with a
# line naming the file. Run as `cmake -DWORK=<empty dir> -P method_families_test.cmake`.
cmake_minimum_required(VERSION 3.25)
include(${CMAKE_CURRENT_LIST_DIR}/../../cmake/SsdrMethods.cmake)
if(NOT WORK)
  message(FATAL_ERROR "method_families_test: pass -DWORK=<a scratch folder>")
endif()
set(dir ${WORK}/impls)
set(out ${WORK}/families.cpp)
file(REMOVE_RECURSE ${dir})
file(MAKE_DIRECTORY ${dir})

function(expect_listed want)  # want: the stems, in order
  file(READ ${out} text)
  string(REGEX MATCHALL "\\{\"[A-Za-z0-9_]+\", &ssdr_method_family_[A-Za-z0-9_]+\\}" entries "${text}")
  set(got "")
  foreach(e IN LISTS entries)
    string(REGEX REPLACE "^\\{\"([A-Za-z0-9_]+)\", &ssdr_method_family_([A-Za-z0-9_]+)\\}$" "\\1;\\2" pair "${e}")
    list(GET pair 0 stem)
    list(GET pair 1 fn)
    if(NOT stem STREQUAL fn)
      message(FATAL_ERROR "method_families_test: entry '${e}' names ${stem} and calls the family of ${fn}")
    endif()
    list(APPEND got ${stem})
  endforeach()
  if(NOT "${got}" STREQUAL "${want}")
    message(FATAL_ERROR "method_families_test: listed '${got}', expected '${want}'")
  endif()
  foreach(stem IN LISTS want)
    string(FIND "${text}" "SSDR_METHOD_FAMILY(${stem});" at)
    if(at LESS 0)
      message(FATAL_ERROR "method_families_test: ${stem} is listed but not declared")
    endif()
  endforeach()
endfunction()

file(WRITE ${dir}/tca.cpp "")
file(WRITE ${dir}/soda.cpp "")
file(WRITE ${dir}/notes.txt "")  # not a .cpp: not a family
ssdr_write_method_families(${dir} ${out})
expect_listed("soda;tca")
file(READ ${out} text)
if(NOT text MATCHES "std::vector<FamilyEntry> method_families\\(\\)")
  message(FATAL_ERROR "method_families_test: the default function is not method_families()")
endif()

file(WRITE ${dir}/first_coordinates.cpp "")  # a method added: one new file
ssdr_write_method_families(${dir} ${out} test_families)
expect_listed("first_coordinates;soda;tca")
file(READ ${out} text)
if(NOT text MATCHES "std::vector<FamilyEntry> test_families\\(\\)")
  message(FATAL_ERROR "method_families_test: the function name argument was not used")
endif()

file(REMOVE ${dir}/tca.cpp)  # a family deleted: its file only
ssdr_write_method_families(${dir} ${out})
expect_listed("first_coordinates;soda")

file(REMOVE ${dir}/first_coordinates.cpp ${dir}/soda.cpp)  # no family: an empty list, still a valid file
ssdr_write_method_families(${dir} ${out})
expect_listed("")
# A file name that cannot name a function: the configuration stops, naming the file.
file(WRITE ${dir}/bad-name.cpp "")
file(WRITE ${WORK}/bad.cmake "include(${CMAKE_CURRENT_LIST_DIR}/../../cmake/SsdrMethods.cmake)\n"
                             "ssdr_write_method_families(${dir} ${WORK}/bad.cpp)\n")
execute_process(COMMAND ${CMAKE_COMMAND} -P ${WORK}/bad.cmake RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_QUIET)
string(REGEX REPLACE "[ \n]+" " " err "${err}")  # CMake wraps its message at the terminal's width
if(rc EQUAL 0 OR NOT err MATCHES "bad-name.cpp: a method family's file name must be a C identifier")
  message(FATAL_ERROR "method_families_test: bad-name.cpp was accepted (rc ${rc}): ${err}")
endif()
if(EXISTS ${WORK}/bad.cpp)
  message(FATAL_ERROR "method_families_test: a list was written for a folder with a bad file name")
endif()
message(STATUS "method_families_test: passed")
