# a crash (SIGSEGV) with its backtrace and siginfo
run crash
bt
info signals SIGSEGV
print $_siginfo.si_signo
