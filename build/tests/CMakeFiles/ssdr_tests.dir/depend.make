# Empty dependencies file for ssdr_tests.
# This may be replaced when dependencies are built.
