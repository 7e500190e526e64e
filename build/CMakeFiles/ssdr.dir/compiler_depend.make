# Empty compiler generated dependencies file for ssdr.
# This may be replaced when dependencies are built.
