/* zvisor trace: strace's interface on the kernel's interception.
 *
 * options.c parses strace's options; layer.c hooks every guest call (a
 * layer, see sys/layer.h) and decides what is shown (-e trace=,
 * status=failed, the traced threads); output.c writes one line per call,
 * signal and exit; args.c prints argument lists from each call's row
 * (sys/sysent.c); tfmt.c prints values as strace does; decoders for
 * structures live in decode_*.c. */
#ifndef ZV_TRACE_TRACE_H
#define ZV_TRACE_TRACE_H
#include <stdint.h>
#include "trace/tfmt.h"
#include "sys/sysdesc.h" /* the trace column of each call's row */
#include "trace/state.h"

struct zv_thread;
struct zv_ucontext;

/* One call as the decoders see it (trace_call sets each field itself: a
 * new field needs its line there). */
struct zv_tcall {
	long nr;
	long a[6];
	long ret;      /* valid when exiting */
	int exiting;   /* 0: on entry (execve only), 1: the call returned */
	int vdso;      /* made through the vDSO */
	uint64_t sp;   /* the guest's stack pointer at the call (rt_sigreturn's frame) */
	long pre;      /* a value-result length as it was on entry (socklen_t), or -1 */
	uint64_t sets[3]; /* select: fds 0-63 of each set on entry (the call rewrites them) */
	int killed;    /* the thread was ended in the call (another thread's exit_group): "= ?" */
	int quiet;     /* judged before the call (outbuf.c): its line may wait in the buffer */
};

typedef void zv_decoder(struct zv_tb *b, const struct zv_tcall *c);

/* Parses one strace-style option of zvisor trace/run. Returns the number of
 * argv words it took (1 or 2), 0 if argv[0] is not a trace option, -1 after
 * printing one line on stderr for a bad one. */
int zv_trace_option(int argc, char **argv);
/* After the options: opens -o, sets defaults. 0 or -1 (message printed). */
int zv_trace_setup(void);
int zv_trace_parse_set(const char *v, uint64_t *set);
int zv_inject_parse(const char *spec);
void zv_decode_siginfo(struct zv_tb *b, const void *siginfo);
void zv_count_time(long nr, int vdso, int64_t ns);

/* The exec state's X= (output.c: the output fd, whether the thread is
 * traced) and Y= (options.c: the options' text). */
struct zv_exec_carry;
int zv_trace_encode_out(char *buf, unsigned long n, const struct zv_exec_carry *x);
const char *zv_trace_decode_out(const char *s, struct zv_exec_carry *x);
int zv_trace_encode_opts(char *buf, unsigned long n, const struct zv_exec_carry *x);
const char *zv_trace_decode_opts(const char *s, struct zv_exec_carry *x);

/* execve is printed before the image is replaced. */
void zv_trace_exec(struct zv_thread *t, long nr, const long *a, long ret);
/* Signals delivered to the guest and its exits. */
void zv_trace_signal(struct zv_thread *t, int sig, const void *siginfo);
void zv_trace_exit(struct zv_thread *t, int code, int sig);
#endif
