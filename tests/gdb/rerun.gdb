# the program run again while it runs: gdb kills it and starts another
# (its vfork child's TRACEME, then exec)
break g
run
run
bt 1
continue
