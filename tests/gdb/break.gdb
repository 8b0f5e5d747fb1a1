# break, bt, finish, print, next, step, info frame
break f
run
bt
finish
print counter
delete
next
next
step
info frame
continue
