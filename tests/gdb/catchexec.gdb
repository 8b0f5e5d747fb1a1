# catch fork and exec, following the child: the new program's path is the
# one it runs (gdb reads it from the tracee's /proc/PID/exe)
set follow-fork-mode child
catch fork
catch exec
run exec
continue
info proc exe
continue
