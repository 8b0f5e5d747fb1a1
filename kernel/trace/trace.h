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

struct zv_thread;
struct zv_ucontext;

/* Syscall classes, as strace's %file, %process, ... */
enum {
	ZV_TC_FILE = 1 << 0,    /* takes a file name */
	ZV_TC_PROCESS = 1 << 1, /* process management */
	ZV_TC_NETWORK = 1 << 2,
	ZV_TC_SIGNAL = 1 << 3,
	ZV_TC_IPC = 1 << 4,
	ZV_TC_DESC = 1 << 5,    /* file descriptors */
	ZV_TC_MEMORY = 1 << 6,
	ZV_TC_CREDS = 1 << 7,
	ZV_TC_CLOCK = 1 << 8,
	ZV_TC_STAT = 1 << 9,    /* %stat, %lstat, %fstat, %statfs... share one bit here */
	ZV_TC_PURE = 1 << 10,   /* no arguments, never fail */
};

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

/* Argument kinds for struct zv_sysdesc.sig, one character per argument:
 *   d int    D long    u unsigned int    U unsigned long (size)   x hex
 *   p pointer    f fd    a dirfd (AT_FDCWD)    s path    S string (-s)
 *   m mode    o open flags    b buffer the call filled (length = result)
 *   w buffer the call read (length = next argument)    c clock id
 *   P mmap prot    F mmap flags    A AT_ flags    k access mode
 *   h sigprocmask how    g sigset (size = argument 4)    t timespec
 *   e signal number    T timespec the call filled (when it succeeded)
 * ret: 0 decimal, 'x' hex (mmap, brk), 'o' octal (umask), '?' never returns,
 *   '=' the after decoder prints a successful result itself. */
struct zv_sysdesc {
	uint8_t nargs;
	uint16_t classes;
	const char *sig;     /* NULL: all arguments in hex */
	zv_decoder *decode;  /* the whole argument list, instead of sig */
	char ret;
	zv_decoder *after;   /* printed after a successful result: " ([...])" */
	const struct zv_names *flags; /* with sig: one more argument, flags by these names */
};
extern const struct zv_sysdesc zv_sysdesc[512];

struct zv_trace {
	int on;                 /* tracing calls (not only -c) */
	int summary;            /* -c (1) or -C (2) */
	int follow;             /* -f; -ff is follow 2 */
	int failed_only;        /* -e status=failed, -Z */
	int tstamp;             /* -t 1, -tt 2, -ttt 3 */
	int show_time;          /* -T */
	int relative;           /* -r */
	int json;               /* --json */
	int decode_fds;         /* -y */
	int raw;                /* -X raw: numbers instead of names */
	int fd;                 /* where lines go (hidden), -1 before -ff opens it */
	int inject;             /* -e inject= rules exist (trace/inject.c) */
	int restoring;          /* re-reading the options after execve */
	char opts[2048];        /* the options as given, words separated by 0x1f */
	struct { int pid, fd; } ff[8]; /* -ff: each process's FILE.PID (a vfork child shares this memory) */
	uint64_t set[512 / 64]; /* -e trace=: which calls are shown */
	int vdso_shown;         /* -e trace names a vDSO function: show those calls */
	char path[512];         /* -o FILE (for -ff: FILE.PID) */
	int exec_traced;        /* the thread that exec'd this image was traced */
};

/* The trace's state of one thread (a member of struct zv_thread). */
struct zv_trace_thread {
	int traced;             /* zvisor trace shows this thread's calls */
	int injected;           /* the current call's result was injected (trace/inject.c) */
	int fd;                 /* -y: the fd whose path was read before the call (close) */
	int slot;               /* trace/live.c: this thread's slot + 1, or 0 */
	char fd_path[256];      /* that path */
};

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

/* execve is printed before the image is replaced. */
void zv_trace_exec(struct zv_thread *t, long nr, const long *a, long ret);
/* Signals delivered to the guest and its exits. */
void zv_trace_signal(struct zv_thread *t, int sig, const void *siginfo);
void zv_trace_exit(struct zv_thread *t, int code, int sig);
#endif
