# Empty compiler generated dependencies file for ssdr_lib.
# This may be replaced when dependencies are built.
