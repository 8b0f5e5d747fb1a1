/* clone3's argument checks, as LTP's clone302 makes them: the struct is
 * read at the size the caller gives, so a struct longer than the host
 * knows must have a zero tail (else E2BIG) that is readable (else EFAULT),
 * sizes below 64 are EINVAL and above a page E2BIG, and every bad field
 * gives the host's errno. Each call that succeeds makes a child that exits
 * at once with a known status. */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x1000
#endif
#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif

struct args { /* struct clone_args as of CLONE_ARGS_SIZE_VER2 (88 bytes) */
	uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls,
		set_tid, set_tid_size, cgroup;
};

/* clone3(p, size); a child exits at once with status 7, on whatever stack
 * it was given, without returning into C. */
static long clone3_exit7(void *p, size_t size)
{
	long ret;
	__asm__ volatile("mov $435, %%eax\n"
			 "syscall\n"
			 "test %%rax, %%rax\n"
			 "jnz 1f\n"
			 "mov $7, %%edi\n"
			 "mov $60, %%eax\n"
			 "syscall\n"
			 "hlt\n"
			 "1:\n"
			 : "=a"(ret) : "D"(p), "S"(size) : "rcx", "r11", "memory");
	return ret;
}

static const char *result(long r)
{
	static char buf[64];
	if (r > 0) {
		int st = 0;
		if (waitpid((pid_t)r, &st, __WALL) != r)
			return "child lost";
		snprintf(buf, sizeof buf, "child status %#x", st);
		return buf;
	}
	switch (-r) {
	case 0: return "0 (in the child?)";
	case EINVAL: return "EINVAL";
	case E2BIG: return "E2BIG";
	case EFAULT: return "EFAULT";
	case ENOSYS: return "ENOSYS";
	case EPERM: return "EPERM";
	case EBADF: return "EBADF";
	default:
		snprintf(buf, sizeof buf, "errno %ld", -r);
		return buf;
	}
}

static char *page;    /* two pages: read-write, then PROT_NONE */
static char *stack;

/* A zeroed struct of `size` bytes ending where the read-write page ends. */
static struct args *at_page_end(size_t size)
{
	memset(page + 4096 - size, 0, size);
	return (struct args *)(page + 4096 - size);
}

static void fresh(struct args *a)
{
	memset(a, 0, sizeof *a);
	a->exit_signal = SIGCHLD;
}

#define TRY(what, p, size) printf("%-44s %s\n", what ":", result(clone3_exit7(p, size)))

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	page = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	stack = mmap(NULL, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED || stack == MAP_FAILED || mprotect(page + 4096, 4096, PROT_NONE))
		return 1;
	static char big[8192] __attribute__((aligned(64)));
	struct args a, *e;

	fresh(&a);
	TRY("plain", &a, sizeof a);
	TRY("NULL struct", NULL, sizeof a);
	TRY("unreadable struct", page + 4096, sizeof a);
	TRY("size 0", &a, 0);
	TRY("size 63", &a, 63);
	TRY("size 64", &a, 64);
	TRY("size 4097", &a, 4097);
	TRY("size 4097, NULL struct", NULL, 4097);
	TRY("size 63, NULL struct", NULL, 63);

	/* a longer struct than the host knows: the tail must be zero */
	e = at_page_end(sizeof a + 1);
	fresh(e);
	TRY("size 89, zero tail ends the page", e, sizeof a + 1);
	TRY("size 90, tail crosses into PROT_NONE", e, sizeof a + 2);
	e = at_page_end(sizeof a + 8);
	fresh(e);
	((char *)e)[sizeof a + 7] = 1;
	TRY("size 96, nonzero tail", e, sizeof a + 8);
	((char *)e)[sizeof a + 7] = 0;
	TRY("size 96, zero tail", e, sizeof a + 8);
	memset(big, 0, sizeof big);
	fresh((struct args *)big);
	TRY("size 4096, zero tail", big, 4096);
	big[4095] = 1;
	TRY("size 4096, last byte set", big, 4096);
	big[4095] = 0;
	big[4096] = 1;
	TRY("size 4096, byte after it set", big, 4096);

	/* bad fields */
	fresh(&a);
	a.flags = CLONE_SIGHAND;
	TRY("CLONE_SIGHAND without CLONE_VM", &a, sizeof a);
	fresh(&a);
	a.flags = CLONE_THREAD;
	TRY("CLONE_THREAD without CLONE_SIGHAND", &a, sizeof a);
	fresh(&a);
	a.flags = CLONE_FS | CLONE_NEWNS;
	TRY("CLONE_FS|CLONE_NEWNS", &a, sizeof a);
	fresh(&a);
	a.flags = CLONE_PIDFD;
	a.pidfd = (uint64_t)(uintptr_t)(page + 4096);
	TRY("CLONE_PIDFD, unwritable pidfd", &a, sizeof a);
	fresh(&a);
	a.exit_signal = 0xff + 1;
	TRY("exit_signal CSIGNAL+1", &a, sizeof a);
	fresh(&a);
	a.exit_signal = 65;
	TRY("exit_signal 65", &a, sizeof a);
	fresh(&a);
	a.flags = 1ULL << 40;
	TRY("unknown flag", &a, sizeof a);
	fresh(&a);
	a.flags = CLONE_DETACHED;
	TRY("CLONE_DETACHED", &a, sizeof a);
	fresh(&a);
	a.flags = CLONE_INTO_CGROUP;
	TRY("CLONE_INTO_CGROUP, size 64", &a, 64);
	fresh(&a);
	a.set_tid_size = 33;
	TRY("set_tid_size 33", &a, sizeof a);
	fresh(&a);
	a.set_tid_size = 1;
	TRY("set_tid_size without set_tid", &a, sizeof a);
	fresh(&a);
	a.stack = (uint64_t)(uintptr_t)stack;
	TRY("stack without stack_size", &a, sizeof a);
	fresh(&a);
	a.stack_size = 4;
	TRY("stack_size without stack", &a, sizeof a);
	fresh(&a);
	a.stack = 0xffff800000000000ULL;
	a.stack_size = 4096;
	TRY("stack in kernel space", &a, sizeof a);
	fresh(&a);
	a.stack = 0x7ffffffff000ULL - 4096;
	a.stack_size = 8192;
	TRY("stack crossing the top of user space", &a, sizeof a);
	fresh(&a);
	a.stack = -4096ULL;
	a.stack_size = 8192;
	TRY("stack wrapping around", &a, sizeof a);
	fresh(&a);
	a.flags = CLONE_SIGHAND;
	a.stack_size = 4;
	TRY("CLONE_SIGHAND and a bad stack", &a, sizeof a);
	e = at_page_end(sizeof a + 8);
	fresh(e);
	e->stack_size = 4;
	((char *)e)[sizeof a + 7] = 1;
	TRY("bad stack and a nonzero tail", e, sizeof a + 8);

	/* a child sharing the memory, with the guest's size passed on */
	e = at_page_end(sizeof a + 8);
	fresh(e);
	e->flags = CLONE_VM | CLONE_VFORK;
	e->stack = (uint64_t)(uintptr_t)stack;
	e->stack_size = 65536;
	TRY("CLONE_VM|CLONE_VFORK, size 96", e, sizeof a + 8);
	TRY("CLONE_VM|CLONE_VFORK, size 97, past the page", e, sizeof a + 9);
	((char *)e)[sizeof a + 7] = 1;
	TRY("CLONE_VM|CLONE_VFORK, size 96, nonzero tail", e, sizeof a + 8);
	return 0;
}
