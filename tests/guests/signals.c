/* Guest signal handling (DESIGN 5.6, 5.11). Each case is a function; run one
 * with `signals CASE`, all with no argument, list them with `--list`.
 * Handlers print with write() so the output order is deterministic. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

static int failed;
#define CHECK(cond, ...)                                          \
	do {                                                      \
		if (!(cond)) {                                    \
			printf("  FAIL: " __VA_ARGS__);           \
			printf("\n");                             \
			failed = 1;                               \
		}                                                 \
	} while (0)

static void say(const char *s) { write(1, s, strlen(s)); }

static const char *errname(int e)
{
	switch (e) {
	case 0: return "0";
	case EINTR: return "EINTR";
	case EAGAIN: return "EAGAIN";
	case EINVAL: return "EINVAL";
	default: return "other";
	}
}

static void handle(int sig, void (*fn)(int), int flags)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fn;
	sa.sa_flags = flags;
	sigaction(sig, &sa, NULL);
}

static void handle_info(int sig, void (*fn)(int, siginfo_t *, void *), int flags)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = fn;
	sa.sa_flags = flags | SA_SIGINFO;
	sigaction(sig, &sa, NULL);
}

static void timer_ms(int ms) /* one-shot ITIMER_REAL */
{
	struct itimerval it = { { 0, 0 }, { ms / 1000, (ms % 1000) * 1000 } };
	setitimer(ITIMER_REAL, &it, NULL);
}

static volatile sig_atomic_t hits;
static void count_hit(int sig) { hits++; }
static void say_hit(int sig) { hits++; say("  handler ran\n"); }

/* --- SA_SIGINFO: si_signo, si_code and si_pid as the host fills them --- */
static siginfo_t last_si;
static void save_info(int sig, siginfo_t *si, void *uc) { last_si = *si; hits++; }

static void case_siginfo(void)
{
	handle_info(SIGUSR1, save_info, 0);
	kill(getpid(), SIGUSR1);
	CHECK(last_si.si_signo == SIGUSR1 && last_si.si_code == SI_USER &&
		      last_si.si_pid == getpid() && last_si.si_uid == getuid(),
	      "kill: signo %d code %d", last_si.si_signo, last_si.si_code);
	printf("kill: si_signo=SIGUSR1 %d, si_code=SI_USER %d, si_pid=self %d\n",
	       last_si.si_signo == SIGUSR1, last_si.si_code == SI_USER, last_si.si_pid == getpid());
	raise(SIGUSR1);
	printf("raise: si_code=SI_TKILL %d\n", last_si.si_code == SI_TKILL);
	union sigval v = { .sival_int = 1234 };
	sigqueue(getpid(), SIGUSR1, v);
	printf("sigqueue: si_code=SI_QUEUE %d, value %d\n", last_si.si_code == SI_QUEUE,
	       last_si.si_value.sival_int);
	timer_ms(10);
	handle_info(SIGALRM, save_info, 0);
	while (last_si.si_signo != SIGALRM)
		pause();
	printf("setitimer: si_code=SI_KERNEL %d\n", last_si.si_code == SI_KERNEL);
}

/* --- SA_RESTART: a read interrupted by SIGALRM restarts and gets the data a
 * child writes later; without SA_RESTART it fails with EINTR --- */
static void restart_case(int flags, const char *name)
{
	int p[2];
	pipe(p);
	hits = 0;
	handle(SIGALRM, say_hit, flags);
	pid_t pid = fork();
	if (pid == 0) {
		usleep(300000);
		write(p[1], "data", 4);
		_exit(0);
	}
	timer_ms(50);
	char buf[8] = "";
	ssize_t n = read(p[0], buf, sizeof(buf));
	int e = errno;
	if (n < 0)
		printf("%s: read -> -1 %s after %d signal(s)\n", name, errname(e), hits);
	else
		printf("%s: read -> %zd '%.*s' after %d signal(s)\n", name, n, (int)n, buf, hits);
	waitpid(pid, NULL, 0);
	close(p[0]);
	close(p[1]);
}
static void case_restart(void) { restart_case(SA_RESTART, "SA_RESTART"); }
static void case_norestart(void) { restart_case(0, "no SA_RESTART"); }

/* --- SA_ONSTACK + sigaltstack: the handler runs on the alternate stack --- */
static char *alt;
static size_t altsz = 64 * 1024;
static int on_alt, ss_onstack;
static void alt_handler(int sig)
{
	char local;
	stack_t cur;
	on_alt = &local >= alt && &local < alt + altsz;
	sigaltstack(NULL, &cur);
	ss_onstack = (cur.ss_flags & SS_ONSTACK) != 0;
}

static void case_altstack(void)
{
	alt = malloc(altsz);
	stack_t ss = { .ss_sp = alt, .ss_size = altsz, .ss_flags = 0 }, old;
	sigaltstack(&ss, NULL);
	handle(SIGUSR1, alt_handler, SA_ONSTACK);
	raise(SIGUSR1);
	printf("SA_ONSTACK: handler on the alternate stack %d, SS_ONSTACK reported %d\n", on_alt,
	       ss_onstack);
	handle(SIGUSR1, alt_handler, 0);
	raise(SIGUSR1);
	printf("without SA_ONSTACK: handler on the alternate stack %d\n", on_alt);
	sigaltstack(NULL, &old);
	printf("sigaltstack reports our stack %d, flags %d\n", old.ss_sp == alt && old.ss_size == altsz,
	       old.ss_flags);
	ss.ss_flags = SS_DISABLE;
	sigaltstack(&ss, NULL);
	CHECK(on_alt == 0, "handler ran on the alternate stack without SA_ONSTACK");
}

/* --- nested signals: a handler raising another (and itself with SA_NODEFER) --- */
static volatile int depth, maxdepth, calls;
static void inner(int sig) { say("  SIGUSR2 handler\n"); }
static void outer(int sig)
{
	say("  SIGUSR1 handler begins\n");
	raise(SIGUSR2);
	say("  SIGUSR1 handler ends\n");
}
static void recursive(int sig)
{
	if (++depth > maxdepth)
		maxdepth = depth;
	if (++calls < 5)
		raise(SIGUSR1);
	depth--;
}

static void case_nested(void)
{
	handle(SIGUSR1, outer, 0);
	handle(SIGUSR2, inner, 0);
	raise(SIGUSR1);
	/* without SA_NODEFER the raise inside the handler waits until it returns */
	handle(SIGUSR1, recursive, 0);
	raise(SIGUSR1);
	printf("no SA_NODEFER: %d calls, max depth %d\n", calls, maxdepth);
	maxdepth = calls = 0;
	handle(SIGUSR1, recursive, SA_NODEFER);
	raise(SIGUSR1);
	printf("SA_NODEFER: %d calls, max depth %d\n", calls, maxdepth);
}

/* --- SA_RESETHAND: the first delivery resets the action to SIG_DFL --- */
static void resethand_info(int sig, siginfo_t *si, void *uc)
{
	hits++;
}

static void case_resethand(void)
{
	hits = 0;
	handle(SIGUSR1, count_hit, SA_RESETHAND);
	raise(SIGUSR1);
	struct sigaction cur;
	sigaction(SIGUSR1, NULL, &cur);
	printf("SA_RESETHAND: handler ran %d time(s), action now SIG_DFL %d\n", hits,
	       cur.sa_handler == SIG_DFL);
	/* Only the handler is reset: the flags read back as they were set
	 * (LTP sigaction01). */
	handle_info(SIGUSR1, resethand_info, SA_RESETHAND | SA_RESTART);
	raise(SIGUSR1);
	sigaction(SIGUSR1, NULL, &cur);
	printf("SA_RESETHAND with SA_SIGINFO: action now SIG_DFL %d, flags SA_SIGINFO %d SA_RESETHAND %d "
	       "SA_RESTART %d\n", cur.sa_handler == SIG_DFL, !!(cur.sa_flags & SA_SIGINFO),
	       !!(cur.sa_flags & SA_RESETHAND), !!(cur.sa_flags & SA_RESTART));
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		handle(SIGUSR1, count_hit, SA_RESETHAND);
		raise(SIGUSR1);
		raise(SIGUSR1); /* default action: terminate */
		_exit(0);
	}
	int st;
	waitpid(pid, &st, 0);
	printf("second signal kills the child: %d\n", WIFSIGNALED(st) && WTERMSIG(st) == SIGUSR1);
}

/* --- a signal arriving while the thread is inside a long host syscall --- */
static void case_timer_in_syscall(void)
{
	int p[2];
	pipe(p);
	handle(SIGALRM, say_hit, 0);
	char c;

	timer_ms(50);
	ssize_t n = read(p[0], &c, 1);
	printf("read: %zd %s\n", n, errname(n < 0 ? errno : 0));

	timer_ms(50);
	struct timespec ts = { 10, 0 }, rem = { 0, 0 };
	int r = nanosleep(&ts, &rem);
	printf("nanosleep: %d %s, remaining > 8s %d\n", r, errname(r ? errno : 0), rem.tv_sec >= 8);

	timer_ms(50);
	r = pause();
	printf("pause: %d %s\n", r, errname(errno));

	sigset_t empty;
	sigemptyset(&empty);
	timer_ms(50);
	r = sigsuspend(&empty);
	printf("sigsuspend: %d %s\n", r, errname(errno));

	struct pollfd pfd = { .fd = p[0], .events = POLLIN };
	timer_ms(50);
	r = poll(&pfd, 1, 10000);
	printf("poll: %d %s\n", r, errname(r < 0 ? errno : 0));

	pid_t pid = fork();
	if (pid == 0) {
		usleep(500000);
		_exit(4);
	}
	timer_ms(50);
	int st;
	r = waitpid(pid, &st, 0);
	printf("waitpid: %d %s\n", r == pid ? 0 : r, errname(r < 0 ? errno : 0));
	waitpid(pid, &st, 0);

	/* SA_RESTART for the same calls: read restarts; nanosleep never does */
	handle(SIGALRM, say_hit, SA_RESTART);
	timer_ms(50);
	pid = fork();
	if (pid == 0) {
		usleep(200000);
		write(p[1], "x", 1);
		_exit(0);
	}
	n = read(p[0], &c, 1);
	printf("read with SA_RESTART: %zd '%c'\n", n, n == 1 ? c : '?');
	waitpid(pid, &st, 0);
	timer_ms(50);
	r = nanosleep(&ts, &rem);
	printf("nanosleep with SA_RESTART: %d %s\n", r, errname(r ? errno : 0));
	close(p[0]);
	close(p[1]);
}

/* --- SIGSYS is the kernel's, but a SIGSYS the guest sends itself reaches the
 * guest's own handler, and sigaction reports the guest's handler --- */
static void case_sigsys_kill(void)
{
	struct sigaction cur;
	sigaction(SIGSYS, NULL, &cur);
	printf("initial SIGSYS action is SIG_DFL: %d\n", cur.sa_handler == SIG_DFL);
	memset(&last_si, 0, sizeof(last_si));
	handle_info(SIGSYS, save_info, 0);
	sigaction(SIGSYS, NULL, &cur);
	printf("sigaction reports our SIGSYS handler: %d, SA_SIGINFO %d\n",
	       cur.sa_sigaction == save_info, (cur.sa_flags & SA_SIGINFO) != 0);
	kill(getpid(), SIGSYS);
	printf("kill(self, SIGSYS): handler got signo=SIGSYS %d, si_code=SI_USER %d, si_pid=self %d\n",
	       last_si.si_signo == SIGSYS, last_si.si_code == SI_USER, last_si.si_pid == getpid());
	memset(&last_si, 0, sizeof(last_si));
	raise(SIGSYS);
	printf("raise(SIGSYS): handler got signo=SIGSYS %d, si_code=SI_TKILL %d\n",
	       last_si.si_signo == SIGSYS, last_si.si_code == SI_TKILL);
	/* the default action still kills with SIGSYS */
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		signal(SIGSYS, SIG_DFL);
		kill(getpid(), SIGSYS);
		_exit(0);
	}
	int st;
	waitpid(pid, &st, 0);
	printf("default SIGSYS action kills the child: %d\n", WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS);
	signal(SIGSYS, SIG_DFL);
}

/* --- a SIGSYS sent to a new thread before it ran comes at its first
 * instruction, right after clone's `syscall`: the handler runs there and the
 * thread then starts with clone's 0 (the SIGSYS platforms must not take it
 * for a trap the host dropped and make a call there). One CPU and
 * SCHED_BATCH (no wakeup preemption) let the creator send it first. --- */
#define NEWTHREADS 20
static volatile int newthread_ran, newthread_sigsys;
static void newthread_handler(int sig, siginfo_t *si, void *uc)
{
	__atomic_add_fetch(&newthread_sigsys, si->si_code == SI_TKILL, __ATOMIC_RELAXED);
}
static int newthread_fn(void *arg)
{
	__atomic_add_fetch(&newthread_ran, 1, __ATOMIC_RELAXED);
	while (__atomic_load_n(&newthread_sigsys, __ATOMIC_RELAXED) < (int)(long)arg)
		syscall(SYS_sched_yield); /* ends only once its signal came */
	return 0; /* the clone wrapper's exit: no TLS of its own is needed */
}
static void case_sigsys_newthread(void)
{
	static char stack[64 * 1024] __attribute__((aligned(16)));
	cpu_set_t one, old;
	sched_getaffinity(0, sizeof old, &old);
	CPU_ZERO(&one);
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &old)) {
			CPU_SET(c, &one);
			break;
		}
	sched_setaffinity(0, sizeof one, &one);
	struct sched_param sp = { 0 };
	int policy = sched_getscheduler(0);
	sched_setscheduler(0, SCHED_BATCH, &sp);
	handle_info(SIGSYS, newthread_handler, 0);
	int started = 0;
	for (int i = 0; i < NEWTHREADS; i++) {
		volatile pid_t ctid = 0; /* the tid until the thread has ended */
		int tid = clone(newthread_fn, stack + sizeof stack,
				CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM |
					CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID,
				(void *)(long)(i + 1), &ctid, NULL, &ctid);
		if (tid <= 0)
			break;
		started++;
		syscall(SYS_tgkill, getpid(), tid, SIGSYS);
		struct timespec sec = { 1, 0 };
		for (int n = 0; ctid && n < 10; n++) {
			pid_t v = ctid;
			if (v)
				syscall(SYS_futex, &ctid, 0 /* FUTEX_WAIT */, v, &sec, NULL, 0);
		}
		if (ctid) {
			printf("  FAIL: new thread %d did not end within 10 s\n", i);
			fflush(stdout);
			_exit(1); /* it still uses the stack */
		}
	}
	signal(SIGSYS, SIG_DFL);
	sched_setscheduler(0, policy, &sp);
	sched_setaffinity(0, sizeof old, &old);
	printf("SIGSYS to %d new threads: %d handled, %d threads ran\n", started, newthread_sigsys, newthread_ran);
}

/* --- a guest that blocks every signal (SIGSYS too) keeps working, and
 * sigprocmask reports back exactly what it blocked --- */
static void print_mask(const char *what, const sigset_t *s)
{
	uint64_t bits = 0;
	for (int i = 1; i <= 64; i++)
		if (sigismember(s, i) == 1)
			bits |= 1ULL << (i - 1);
	printf("%s: %#018llx, SIGSYS %d\n", what, (unsigned long long)bits, sigismember(s, SIGSYS));
}

static void case_blockall(void)
{
	sigset_t all, cur, pend, old;
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, &old);
	print_mask("blocked", (sigprocmask(SIG_BLOCK, NULL, &cur), &cur));
	int p[2];
	pipe(p);
	write(p[1], "ok", 2);
	char buf[2];
	read(p[0], buf, 2);
	printf("syscalls with everything blocked: getppid>0 %d, pipe round trip %d\n", getppid() > 0,
	       !memcmp(buf, "ok", 2));
	/* a blocked signal stays pending until unblocked */
	hits = 0;
	handle(SIGUSR1, say_hit, 0);
	raise(SIGUSR1);
	sigpending(&pend);
	printf("SIGUSR1 pending %d, handled %d\n", sigismember(&pend, SIGUSR1), hits);
	fflush(stdout);
	/* raw rt_sigprocmask of the full 64-bit set, then read it back */
	uint64_t full = ~0ULL, back = 0;
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &full, NULL, 8);
	syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, &back, 8);
	printf("raw rt_sigprocmask all ones reads back %#llx\n", (unsigned long long)back);
	sigprocmask(SIG_SETMASK, &old, NULL);
	printf("after unblocking: handled %d\n", hits);
	/* a forked child inherits the mask and still works */
	sigprocmask(SIG_SETMASK, &all, NULL);
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		sigprocmask(SIG_BLOCK, NULL, &cur);
		printf("child inherits SIGSYS blocked %d and can print\n", sigismember(&cur, SIGSYS));
		exit(6);
	}
	int st;
	waitpid(pid, &st, 0);
	sigprocmask(SIG_SETMASK, &old, NULL);
	printf("child exit %d\n", WEXITSTATUS(st));
	close(p[0]);
	close(p[1]);
}

/* --- sigsuspend woken by a signal from another process --- */
static void case_sigsuspend(void)
{
	sigset_t block, old, wait;
	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	sigprocmask(SIG_BLOCK, &block, &old);
	hits = 0;
	handle(SIGUSR1, say_hit, 0);
	pid_t pid = fork();
	if (pid == 0) {
		usleep(50000);
		kill(getppid(), SIGUSR1);
		_exit(0);
	}
	sigemptyset(&wait);
	int r = sigsuspend(&wait);
	printf("sigsuspend: %d %s, handled %d\n", r, errname(errno), hits);
	sigset_t cur;
	sigprocmask(SIG_BLOCK, NULL, &cur);
	printf("mask restored after sigsuspend: SIGUSR1 blocked %d\n", sigismember(&cur, SIGUSR1));
	waitpid(pid, NULL, 0);
	/* sigwaitinfo takes a blocked signal without running the handler */
	raise(SIGUSR1);
	siginfo_t si;
	int s = sigwaitinfo(&block, &si);
	printf("sigwaitinfo: SIGUSR1 %d, si_code %d, handled %d\n", s == SIGUSR1, si.si_code, hits);
	sigprocmask(SIG_SETMASK, &old, NULL);
}

/* --- threads inherit the creator's mask; pthread_kill targets one thread --- */
static int thread_saw_blocked;
static pid_t handler_tid, target_tid;
static int target_pipe[2];
static void *mask_thread(void *arg)
{
	sigset_t cur;
	pthread_sigmask(SIG_BLOCK, NULL, &cur);
	thread_saw_blocked = sigismember(&cur, SIGUSR2);
	return NULL;
}
static void note_tid(int sig) { handler_tid = (pid_t)syscall(SYS_gettid); }
static void *reader_thread(void *arg)
{
	char c;
	target_tid = (pid_t)syscall(SYS_gettid);
	ssize_t n = read(target_pipe[0], &c, 1);
	return (void *)(long)(n < 0 ? errno : 0);
}

static void case_threads(void)
{
	sigset_t s, old;
	sigemptyset(&s);
	sigaddset(&s, SIGUSR2);
	sigprocmask(SIG_BLOCK, &s, &old);
	pthread_t t;
	pthread_create(&t, NULL, mask_thread, NULL);
	pthread_join(t, NULL);
	sigprocmask(SIG_SETMASK, &old, NULL);
	printf("new thread inherits SIGUSR2 blocked: %d\n", thread_saw_blocked);

	pipe(target_pipe);
	handle(SIGUSR1, note_tid, 0);
	pthread_create(&t, NULL, reader_thread, NULL);
	usleep(100000); /* let it block in read */
	pthread_kill(t, SIGUSR1);
	usleep(200000);
	write(target_pipe[1], "x", 1); /* never hang, even if the signal came early */
	void *ret;
	pthread_join(t, &ret);
	printf("pthread_kill: handler ran in the target thread %d, its read -> %s\n",
	       handler_tid == target_tid, errname((int)(long)ret));
	close(target_pipe[0]);
	close(target_pipe[1]);
}

/* what main found before any case ran: the guest must see the actions it
 * inherited, none of the kernel's */
static char initial_actions[200] = "none";
static void scan_initial_actions(void)
{
	size_t len = 0;
	for (int s = 1; s < 65; s++) {
		struct sigaction q;
		if (s == SIGKILL || s == SIGSTOP || sigaction(s, NULL, &q))
			continue;
		if (q.sa_handler != SIG_DFL && len < sizeof(initial_actions) - 8)
			len += snprintf(initial_actions + len, sizeof(initial_actions) - len, "%d%s ", s,
					q.sa_handler == SIG_IGN ? "(ignored)" : "");
	}
}

/* --- sigaction reads back what was set (flags, mask); SIGKILL refuses --- */
static void case_sigaction(void)
{
	struct sigaction sa, back;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = count_hit;
	sa.sa_flags = SA_RESTART | SA_NODEFER | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, SIGUSR2);
	sigaddset(&sa.sa_mask, SIGSYS);
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGUSR1, NULL, &back);
	printf("sigaction read back: handler %d, flags %#x, mask has SIGUSR2 %d SIGSYS %d SIGINT %d\n",
	       back.sa_handler == count_hit, (unsigned)back.sa_flags, sigismember(&back.sa_mask, SIGUSR2),
	       sigismember(&back.sa_mask, SIGSYS), sigismember(&back.sa_mask, SIGINT));
	int r = sigaction(SIGKILL, &sa, NULL);
	printf("sigaction(SIGKILL): %d %s\n", r, errname(r ? errno : 0));
	r = sigaction(65, &sa, NULL);
	printf("sigaction(65): %d %s\n", r, errname(r ? errno : 0));
	printf("signals with a non-default action at start: %s\n", initial_actions);
	signal(SIGUSR1, SIG_DFL);
}

/* --- a handler rewrites the interrupted context (skips a ud2 and sets rax);
 * the context shows the registers the guest had --- */
static void on_sigill(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	hits = uc->uc_mcontext.gregs[REG_RBX] == 0x1234567 && si->si_code == ILL_ILLOPN;
	uc->uc_mcontext.gregs[REG_RIP] += 2;
	uc->uc_mcontext.gregs[REG_RAX] = 77;
}

static void case_ucontext(void)
{
	handle_info(SIGILL, on_sigill, 0);
	long rax = 0;
	hits = 0;
	__asm__ volatile("mov $0x1234567, %%rbx\n xor %%eax, %%eax\n ud2\n"
			 : "=a"(rax) : : "rbx", "memory");
	printf("SIGILL handler saw rbx %d, resumed past ud2 with rax %ld\n", hits, rax);
	signal(SIGILL, SIG_DFL);
}

struct tcase {
	const char *name;
	void (*fn)(void);
};
static const struct tcase cases[] = {
	{ "siginfo", case_siginfo },
	{ "restart", case_restart },
	{ "norestart", case_norestart },
	{ "altstack", case_altstack },
	{ "nested", case_nested },
	{ "resethand", case_resethand },
	{ "timer_in_syscall", case_timer_in_syscall },
	{ "sigsys_kill", case_sigsys_kill },
	{ "sigsys_newthread", case_sigsys_newthread },
	{ "blockall", case_blockall },
	{ "sigsuspend", case_sigsuspend },
	{ "threads", case_threads },
	{ "sigaction", case_sigaction },
	{ "ucontext", case_ucontext },
};

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	scan_initial_actions();
	int ran = 0;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (argc > 1 && !strcmp(argv[1], "--list")) {
			printf("%s\n", cases[i].name);
			continue;
		}
		if (argc > 1 && strcmp(argv[1], cases[i].name))
			continue;
		printf("== %s\n", cases[i].name);
		cases[i].fn();
		fflush(stdout);
		ran++;
	}
	if (argc > 1 && strcmp(argv[1], "--list") && !ran) {
		fprintf(stderr, "unknown case %s\n", argv[1]);
		return 2;
	}
	return failed;
}
