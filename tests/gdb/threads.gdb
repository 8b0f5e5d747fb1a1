# a breakpoint hit in a second thread, info threads
break g
run threads
info threads
bt
thread 1
kill
