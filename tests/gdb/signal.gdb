# a signal's delivery stepped into (the step ends at the handler's first
# instruction) and the handler's sigreturn stepped over
handle SIGUSR1 stop print
set print frame-arguments none
run signal
stepi
bt 2
finish
next
bt 1
continue
