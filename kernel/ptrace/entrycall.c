/* The call a tracee makes after its syscall-entry stop, and a guest
 * signal that came while it stood there (docs/DESIGN.md, "A signal that
 * comes at a syscall-entry stop"): natively the call has begun, so one
 * that never waits completes with the signal delivered after it, and one
 * that waits returns at once, with what is ready or interrupted, where
 * zvisor's cancellable host call would stop it before it began. */
#include "zvisor.h"
#include "ptrace/ptrace.h"
#include "sys/layer.h"
#include "lib/syscall.h"
#include "lib/string.h"

/* The call as the tracer left it at its entry stop (rax as the guest had it). */
static long made(struct zv_call *c, long nr, long *a, uint64_t rax)
{
	if (nr != c->nr || memcmp(a, c->a, 6 * sizeof *a))
		return zv_next_as(c, nr, a);
	c->uc->mc.rax = rax;
	return zv_pt_inner(c);
}

/* A call that never waits, with a signal that came at its entry stop:
 * natively it has begun, so it completes and the signal is delivered
 * after it, where a host call would be stopped before it began
 * (zv_host_call_args). One arriving meanwhile is kept. */
static long whole(struct zv_call *c, long nr, long *a, uint64_t rax)
{
	struct zv_thread *t = c->t;
	t->fast.sig_pending = 0;
	long r = made(c, nr, a, rax);
	t->fast.sig_pending = 1;
	return r;
}

/* Whether fd is ready now for events (a zero-timeout ppoll). */
static int ready(long fd, short events)
{
	struct { int fd; short events, revents; } p = { (int)fd, events, 0 };
	struct { long s, ns; } now = { 0, 0 };
	return zv_sys5(__NR_ppoll, &p, 1, &now, NULL, 8) > 0 && (p.revents & events);
}

/* Whether call nr (args a) would return at once: a read or receive of a
 * ready fd, a write or send of at most PIPE_BUF bytes to one (a pipe
 * with room takes them whole). */
static int would_not_wait(long nr, const long *a)
{
	switch (nr) {
	case __NR_read: case __NR_readv: case __NR_recvfrom: case __NR_recvmsg:
		return ready(a[0], 0x1 /* POLLIN */);
	case __NR_write: case __NR_sendto:
		return (unsigned long)a[2] <= 4096 && ready(a[0], 0x4 /* POLLOUT */);
	default:
		return 0;
	}
}

/* A call that waits, with a signal that came at its entry stop: natively
 * it returns at once, with what is ready or interrupted (`at_once`). One
 * that would not wait is made whole; wait4 looks for a child with WNOHANG
 * (a shell's SIGCHLD comes at its wait4); any other is interrupted. */
static long at_once(struct zv_call *c, long nr, long *a, uint64_t rax)
{
	if (would_not_wait(nr, a))
		return whole(c, nr, a, rax);
	if (nr != __NR_wait4 || memcmp(a, c->a, 6 * sizeof *a))
		return -EINTR;
	long opts = a[2];
	a[2] = c->a[2] = opts | 1; /* WNOHANG */
	long r = whole(c, nr, a, rax);
	a[2] = c->a[2] = opts;
	return r == 0 ? -EINTR : r;
}

/* Call nr (args a, as the tracer left them; rax the guest's) after its
 * entry stop; came: a guest signal was deferred during the stop. */
long zv_pt_entry_made(struct zv_call *c, long nr, long *a, uint64_t rax, int came)
{
	if (came && zv_sys_waits(nr))
		return at_once(c, nr, a, rax);
	if (came && zv_sys_nowait(nr))
		return whole(c, nr, a, rax);
	return made(c, nr, a, rax);
}
