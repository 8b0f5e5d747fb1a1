/* What execve resets and what it keeps (execve(2), fs/exec.c): each item is
 * set before an exec of /proc/self/exe and checked in the new image, which
 * prints one line per item. The same lines natively, with zvisor's
 * in-process exec and with the host's (--exec=host).
 *
 * Modes: (none) every item of a single-threaded process; threads: three
 * more threads at the exec (in pause, spinning, blocked in a read); personality:
 * ADDR_NO_RANDOMIZE kept; vfork: a vfork child's exec (the parent's memory
 * goes on); chain: five execs in a row, each image checking again; maps:
 * the new image's /proc/self/maps without addresses and its status. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/shm.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "errname.h"

extern char **environ;
extern const unsigned int __rseq_size __attribute__((weak)); /* glibc 2.35+: registered */

struct shared {
	pthread_mutex_t m;
	volatile int waiting;
};

static void on_usr1(int sig) { (void)sig; }

static const char *handler_name(void (*h)(int))
{
	return h == SIG_DFL ? "default" : h == SIG_IGN ? "ignored" : "handled";
}

/* /proc/self/status's value of field, or "?" */
static void status_field(const char *field, char *out, size_t n)
{
	char line[256];
	snprintf(out, n, "?");
	FILE *f = fopen("/proc/self/status", "r");
	while (f && fgets(line, sizeof line, f))
		if (!strncmp(line, field, strlen(field)) && line[strlen(field)] == ':') {
			char *v = line + strlen(field) + 1;
			while (*v == ' ' || *v == '\t')
				v++;
			v[strcspn(v, "\n")] = 0;
			snprintf(out, n, "%s", v);
		}
	if (f)
		fclose(f);
}

/* Whether the NUL-separated text of /proc/self/NAME is v[0..]'s strings. */
static int proc_matches(const char *name, char **v)
{
	char path[64], buf[65536];
	snprintf(path, sizeof path, "/proc/self/%s", name);
	int fd = open(path, O_RDONLY);
	ssize_t got = 0, r;
	while (fd >= 0 && got < (ssize_t)sizeof buf && (r = read(fd, buf + got, sizeof buf - got)) > 0)
		got += r;
	close(fd);
	ssize_t at = 0;
	for (int i = 0; v[i]; i++) {
		size_t l = strlen(v[i]) + 1;
		if (at + (ssize_t)l > got || memcmp(buf + at, v[i], l))
			return 0;
		at += l;
	}
	return at == got;
}

static void *sleeper(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

static void *spinner(void *arg)
{
	for (volatile unsigned long *n = arg;;)
		(*n)++;
	return NULL;
}

static void *reader(void *arg)
{
	char c;
	read(*(int *)arg, &c, 1); /* never written */
	return NULL;
}

/* ---- the new image ------------------------------------------------------ */

static void check(char **argv)
{
	/* argv: check MODE SHMID FD_CLOEXEC FD_KEPT FD_SETCLOEXEC PIPE_R AIOCTX RANDOM_HEX ROUND */
	const char *mode = argv[2];
	int shmid = atoi(argv[3]), fd_ce = atoi(argv[4]), fd_kept = atoi(argv[5]), fd_set = atoi(argv[6]);
	int pipe_r = atoi(argv[7]);
	unsigned long aio = strtoul(argv[8], NULL, 16);
	int round = atoi(argv[10]);
	printf("== image %d after exec (%s)\n", round, mode);

	static const int sigs[] = { SIGUSR1, SIGUSR2, SIGHUP, SIGWINCH, SIGTERM, SIGCHLD, SIGSYS };
	for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
		struct sigaction sa;
		sigaction(sigs[i], NULL, &sa);
		int mask_has_int = sigismember(&sa.sa_mask, SIGINT);
		printf("signal %d: %s, flags %#x, mask has SIGINT %d\n", sigs[i], handler_name(sa.sa_handler),
		       (unsigned)(sa.sa_flags & ~0x04000000 /* SA_RESTORER */), mask_has_int);
	}
	sigset_t pend, cur;
	sigpending(&pend);
	sigprocmask(SIG_BLOCK, NULL, &cur);
	printf("pending SIGTERM %d SIGUSR1 %d, blocked SIGTERM %d SIGUSR1 %d\n", sigismember(&pend, SIGTERM),
	       sigismember(&pend, SIGUSR1), sigismember(&cur, SIGTERM), sigismember(&cur, SIGUSR1));
	stack_t ss;
	sigaltstack(NULL, &ss);
	printf("altstack disabled %d\n", (ss.ss_flags & SS_DISABLE) != 0);

	struct itimerspec its;
	errno = 0;
	int tr = syscall(SYS_timer_gettime, 0, &its), te = errno;
	printf("POSIX timer 0 after exec: %d %s\n", tr, errname(te));
	char timers[64];
	int tfd = open("/proc/self/timers", O_RDONLY);
	ssize_t tn = tfd < 0 ? -1 : read(tfd, timers, sizeof timers);
	close(tfd);
	printf("/proc/self/timers empty %d\n", tn == 0);
	struct itimerval itv;
	getitimer(ITIMER_REAL, &itv);
	printf("ITIMER_REAL kept %d\n", itv.it_value.tv_sec > 0 && itv.it_interval.tv_sec == 3000);

	struct shmid_ds ds;
	if (shmid >= 0 && shmctl(shmid, IPC_STAT, &ds) == 0) {
		printf("shm attached %lu\n", (unsigned long)ds.shm_nattch);
		shmctl(shmid, IPC_RMID, NULL);
	} else {
		printf("shm attached 0\n");
	}

	static const char *const fd_what[] = { "close-on-exec fd", "plain fd", "fd made close-on-exec", "O_CLOEXEC pipe" };
	int fds[] = { fd_ce, fd_kept, fd_set, pipe_r };
	for (int i = 0; i < 4; i++) {
		errno = 0;
		int r = fcntl(fds[i], F_GETFD);
		printf("%s: %d %s\n", fd_what[i], r, errname(errno));
	}

	if (aio) {
		errno = 0;
		long r = syscall(SYS_io_destroy, aio);
		int e = errno;
		printf("aio context after exec: %ld %s\n", r, errname(e));
	} else {
		printf("aio context after exec: -1 EINVAL\n");
	}

	char comm[32] = "";
	int cfd = open("/proc/self/comm", O_RDONLY);
	ssize_t cn = cfd < 0 ? 0 : read(cfd, comm, sizeof comm - 1);
	close(cfd);
	comm[cn > 0 ? cn - 1 : 0] = 0;
	printf("comm %s\n", comm);
	printf("dumpable %d\n", prctl(PR_GET_DUMPABLE));
	int pdeath = 0;
	prctl(PR_GET_PDEATHSIG, &pdeath);
	printf("pdeath_signal %d\n", pdeath);
	printf("no_new_privs %d\n", prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0));
	printf("personality %#x\n", personality(0xffffffff));

	char vmlck[64], threads[64];
	void *p = mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	memset(p, 1, 1 << 16);
	status_field("VmLck", vmlck, sizeof vmlck);
	printf("VmLck %s\n", vmlck);
	status_field("Threads", threads, sizeof threads);
	printf("threads %s\n", threads);

	printf("rseq registered %d\n", &__rseq_size ? __rseq_size > 0 : 1);
	printf("AT_SECURE %lu\n", getauxval(AT_SECURE));
	printf("AT_EXECFN %s\n", (const char *)getauxval(AT_EXECFN));
	const unsigned char *rnd = (const unsigned char *)getauxval(AT_RANDOM);
	char hex[40];
	for (int i = 0; i < 16; i++)
		sprintf(hex + 2 * i, "%02x", rnd[i]);
	printf("AT_RANDOM new %d\n", strcmp(hex, argv[9]) != 0);
	printf("AT_SYSINFO_EHDR an ELF %d\n",
	       getauxval(AT_SYSINFO_EHDR) && !memcmp((void *)getauxval(AT_SYSINFO_EHDR), "\177ELF", 4));
	char exe[4096];
	ssize_t en = readlink("/proc/self/exe", exe, sizeof exe - 1);
	exe[en > 0 ? en : 0] = 0;
	printf("/proc/self/exe is this program %d\n", en > 0 && !strcmp(exe, argv[11]));
	printf("/proc/self/cmdline is argv %d\n", proc_matches("cmdline", argv));
	printf("/proc/self/environ is the environment %d\n", proc_matches("environ", environ));
	extern char end[];
	char *brk0 = sbrk(0);
	printf("break after the program %d\n", brk0 >= end && brk0 - end < (2L << 30));
	struct timespec ts;
	printf("clock_gettime %d\n", clock_gettime(CLOCK_MONOTONIC, &ts));
	unsigned long fs = 0;
	printf("fs base set %d\n", syscall(SYS_arch_prctl, 0x1003 /* ARCH_GET_FS */, &fs) == 0 && fs != 0);

	if (!strcmp(mode, "maps")) {
		/* the image's own view of itself, addresses left out */
		char line[512];
		FILE *f = fopen("/proc/self/maps", "r");
		while (f && fgets(line, sizeof line, f)) {
			char *sp = strchr(line, ' ');
			printf("maps:%s", sp ? sp : line);
		}
		if (f)
			fclose(f);
		static const char *const fields[] = { "Name", "Umask", "State", "Uid", "Gid", "FDSize", "Groups",
						      "NStgid", "Threads", "SigQ", "SigPnd", "ShdPnd", "SigBlk",
						      "SigIgn", "SigCgt", "CapInh", "CapPrm", "CapEff", "CapBnd",
						      "CapAmb", "NoNewPrivs", "Seccomp", "Seccomp_filters",
						      "Speculation_Store_Bypass", "Cpus_allowed_list", "THP_enabled" };
		for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
			char v[256];
			status_field(fields[i], v, sizeof v);
			if (!strcmp(fields[i], "NStgid") || !strcmp(fields[i], "SigQ"))
				snprintf(v, sizeof v, "%s", strchr(v, '/') ? strchr(v, '/') : "n");
			printf("status:%s: %s\n", fields[i], v);
		}
	}
	int status = 0;
	if (!strcmp(mode, "all") && round == 1) {
		pid_t w = wait(&status);
		printf("robust mutex waiter: %s\n", w > 0 && WIFEXITED(status) ? errname(WEXITSTATUS(status)) : "?");
	}
	fflush(stdout);
	if (round < (!strcmp(mode, "chain") ? 5 : 1)) {
		char next[16];
		snprintf(next, sizeof next, "%d", round + 1);
		argv[10] = next;
		argv[9] = hex;
		execv("/proc/self/exe", argv);
		printf("exec failed: %s\n", errname(errno));
	}
	exit(0);
}

/* ---- the old image ------------------------------------------------------- */

int main(int argc, char **argv)
{
	if (argc > 11 && !strcmp(argv[1], "check")) {
		check(argv);
		return 0;
	}
	const char *mode = argc > 1 ? argv[1] : "all";
	if (!strcmp(mode, "personality"))
		personality(ADDR_NO_RANDOMIZE);

	struct sigaction sa = { .sa_handler = on_usr1, .sa_flags = SA_RESTART | SA_ONSTACK };
	sigaddset(&sa.sa_mask, SIGINT);
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	struct sigaction ign = { .sa_handler = SIG_IGN, .sa_flags = SA_RESTART };
	sigaddset(&ign.sa_mask, SIGINT);
	sigaction(SIGUSR2, &ign, NULL);
	sigaction(SIGWINCH, &ign, NULL);
	sigaction(SIGSYS, &ign, NULL); /* (the kernel's signal on the host: carried as the guest's) */
	sigset_t block;
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGUSR1);
	sigprocmask(SIG_BLOCK, &block, NULL);
	raise(SIGTERM);
	raise(SIGUSR1);
	static char altstack[1 << 16];
	stack_t ss = { .ss_sp = altstack, .ss_size = sizeof altstack };
	sigaltstack(&ss, NULL);

	timer_t tid;
	struct sigevent sev = { .sigev_notify = SIGEV_NONE };
	struct itimerspec its = { .it_value = { 100, 0 } };
	if (timer_create(CLOCK_MONOTONIC, &sev, &tid) == 0)
		timer_settime(tid, 0, &its, NULL);
	struct itimerval itv = { .it_interval = { 3000, 0 }, .it_value = { 3000, 0 } };
	setitimer(ITIMER_REAL, &itv, NULL);

	int shmid = shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600);
	void *shm = shmid >= 0 ? shmat(shmid, NULL, 0) : (void *)-1;
	if (shmid >= 0 && shm == (void *)-1) {
		shmctl(shmid, IPC_RMID, NULL);
		shmid = -1;
	}

	int fd_ce = open("/dev/null", O_RDONLY | O_CLOEXEC);
	int fd_kept = open("/dev/null", O_RDONLY);
	int fd_set = dup(fd_kept);
	fcntl(fd_set, F_SETFD, FD_CLOEXEC);
	int pp[2];
	pipe2(pp, O_CLOEXEC);

	unsigned long aio = 0;
	if (syscall(SYS_io_setup, 1, &aio) != 0)
		aio = 0;

	prctl(PR_SET_NAME, "oldname");
	prctl(PR_SET_DUMPABLE, 0);
	prctl(PR_SET_PDEATHSIG, SIGUSR2);
	prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
	mlockall(MCL_FUTURE);

	/* A robust mutex in shared memory, held at the exec: a waiter in a child
	 * gets EOWNERDEAD. */
	if (!strcmp(mode, "all")) {
		struct shared *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		pthread_mutexattr_t ma;
		pthread_mutexattr_init(&ma);
		pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
		pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
		pthread_mutex_init(&sh->m, &ma);
		pthread_mutex_lock(&sh->m);
		pid_t c = fork();
		if (c == 0) {
			if (shm != (void *)-1)
				shmdt(shm); /* the new image counts the exec'ing process's attachment only */
			sh->waiting = 1;
			int e = pthread_mutex_lock(&sh->m);
			_exit(e);
		}
		while (!sh->waiting)
			usleep(1000);
		usleep(20000); /* most likely asleep on the lock by now; either way it sees the owner dead */
	}
	if (!strcmp(mode, "threads")) {
		/* asleep in pause, spinning in its own code, blocked in a read */
		static volatile unsigned long spins;
		static int never[2];
		pipe(never);
		pthread_t th;
		pthread_create(&th, NULL, sleeper, NULL);
		pthread_create(&th, NULL, spinner, (void *)&spins);
		pthread_create(&th, NULL, reader, never);
		while (!spins)
			usleep(100);
	}

	char hex[40];
	const unsigned char *rnd = (const unsigned char *)getauxval(AT_RANDOM);
	for (int i = 0; i < 16; i++)
		sprintf(hex + 2 * i, "%02x", rnd[i]);
	char a[8][32];
	snprintf(a[0], 32, "%d", shmid);
	snprintf(a[1], 32, "%d", fd_ce);
	snprintf(a[2], 32, "%d", fd_kept);
	snprintf(a[3], 32, "%d", fd_set);
	snprintf(a[4], 32, "%d", pp[0]);
	snprintf(a[5], 32, "%lx", aio);
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	self[n > 0 ? n : 0] = 0;
	char *nargv[] = { "execreset", "check", (char *)mode, a[0], a[1], a[2], a[3], a[4], a[5], hex, "1", self, NULL };
	fflush(stdout);
	if (!strcmp(mode, "vfork")) {
		pid_t c = vfork();
		if (c == 0) {
			execv("/proc/self/exe", nargv);
			_exit(127);
		}
		int status;
		waitpid(c, &status, 0);
		printf("vfork parent goes on: child %s %d\n", WIFEXITED(status) ? "exit" : "signal",
		       WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
		return 0;
	}
	execv("/proc/self/exe", nargv);
	printf("exec failed: %s\n", errname(errno));
	return 1;
}
