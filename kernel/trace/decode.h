/* Decoders of argument lists that need more than a signature (systab.c):
 * each prints the arguments of one call, without the parentheses, as
 * strace 6.1 does. */
#ifndef ZV_TRACE_DECODE_H
#define ZV_TRACE_DECODE_H
#include "trace/trace.h"

#define ZV_DECODERS(X) \
	X(open) X(openat) X(stat) X(fstat) X(newfstatat) X(poll) X(lseek) X(rt_sigaction) \
	X(rt_sigreturn) X(rt_sigsuspend) X(ioctl) X(readv) X(writev) X(pipe) X(pipe2) X(madvise) \
	X(socket) X(connect) X(clone) X(execve) X(execveat) X(wait4) X(uname) X(fcntl) X(getcwd) \
	X(readlink) X(readlinkat) X(prctl) X(arch_prctl) X(futex) X(getdents64) X(prlimit64) \
	X(getrandom) X(rseq) X(fadvise64)

#define ZV_DECLARE_DECODER(n) zv_decoder zv_dec_##n;
ZV_DECODERS(ZV_DECLARE_DECODER)
zv_decoder zv_dec_poll_ret; /* after the result */

/* Pieces the decoders share. */
void zv_dec_stat_struct(struct zv_tb *b, uint64_t p, int ok);
void zv_dec_args(struct zv_tb *b, const struct zv_tcall *c, const char *sig); /* signature letters */
void zv_dec_arg(struct zv_tb *b, const struct zv_tcall *c, int i, char kind); /* argument i */
#endif
