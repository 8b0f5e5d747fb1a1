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
	X(getrandom) X(rseq) X(fadvise64) \
	X(statfs) X(fstatfs) X(statx) X(getxattr) \
	X(copy_file_range) X(utimensat) X(time) X(gettimeofday) X(setitimer) X(getitimer) \
	X(clock_nanosleep) X(nanosleep) X(timerfd_settime) X(timerfd_gettime) \
	X(timer_create) X(timer_settime) X(timer_gettime) X(sysinfo) X(getrusage) X(clone3) \
	X(sched_getaffinity) X(sched_setaffinity) X(sigaltstack) X(rt_sigtimedwait) \
	X(epoll_ctl) X(epoll_wait) X(ppoll) X(socketpair) X(sendto) \
	X(sendmsg) X(setsockopt) X(getsockname) X(getresuid) X(getgroups) X(waitid) X(flock) X(fallocate) \
	X(sendfile) X(mremap) X(shutdown) X(getrlimit) X(times) \
	X(rt_sigpending) X(signalfd4) X(select) X(personality) X(sched_getparam) X(sched_setscheduler) \
	X(preadv) X(splice) X(getpriority) X(rt_sigqueueinfo) \
	X(capget) X(getcpu) X(openat2)

#define ZV_DECLARE_DECODER(n) zv_decoder zv_dec_##n;
ZV_DECODERS(ZV_DECLARE_DECODER)
/* results (systab.c: ret '=' or after) */
zv_decoder zv_dec_poll_ret, zv_dec_fcntl_ret, zv_dec_time_ret, zv_dec_prctl_ret,
	zv_dec_signal_ret, zv_dec_personality_ret, zv_dec_policy_ret, zv_dec_select_ret;

/* Pieces the decoders share. OK: the call returned and did not fail, so
 * what it wrote may be shown; SEP: strace's argument separator. */
#define OK(c) ((c)->exiting && ((c)->ret >= 0 || (c)->ret <= -4096))
#define SEP(b) tb_puts(b, ", ")
void zv_dec_stat_struct(struct zv_tb *b, uint64_t p, int ok);
void zv_dec_args(struct zv_tb *b, const struct zv_tcall *c, const char *sig); /* signature letters */
void zv_dec_arg(struct zv_tb *b, const struct zv_tcall *c, int i, char kind); /* argument i */
void zv_dec_mode_type(struct zv_tb *b, uint32_t mode);                  /* S_IFREG|0644 */
void zv_dec_iovec(struct zv_tb *b, uint64_t p, long cnt, long filled);  /* [{iov_base=...}] */
void zv_dec_rlimit(struct zv_tb *b, uint64_t p, const char *inf);      /* {rlim_cur=..., rlim_max=...} */
void zv_dec_rusage(struct zv_tb *b, uint64_t p);                        /* {ru_utime=..., ...} */
void zv_dec_termios(struct zv_tb *b, uint64_t p);                       /* {c_iflag=..., ...} */
void zv_dec_iso_time(struct zv_tb *b, int64_t t, long nsec);          /* 2026-11-23T06:16:13+0000 */
void zv_dec_loff(struct zv_tb *b, uint64_t p);                          /* [offset] */
void zv_dec_fd_offsets(struct zv_tb *b, const struct zv_tcall *c);      /* fd, [off], fd, [off] */
#endif
