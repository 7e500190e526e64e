CMakeFiles/ssdr.dir/src/app/main.cpp.o: /work/main/src/app/main.cpp \
 /usr/include/stdc-predef.h
