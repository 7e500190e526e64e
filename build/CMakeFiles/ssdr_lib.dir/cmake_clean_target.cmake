file(REMOVE_RECURSE
  "libssdr_lib.a"
)
