# follow-fork-mode child with a conditional breakpoint
set follow-fork-mode child
break g if x == 3
run fork
print x
bt
continue
