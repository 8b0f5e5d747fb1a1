/* What a tracer sees of code the stubs rewrote (the guest's ptrace,
 * ptrace/mem.c through the platform's show_original and
 * restore_original): the original bytes of each window and trampoline. */
#include "zvisor.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "intercept/stubs.h"
#include "intercept/sites.h"

/* The bytes a window or trampoline stands for, laid over [at, at + n) of buf. */
struct span { uint64_t at; uint8_t *buf; size_t n; };
static void put_span(struct span *sp, uint64_t a, const uint8_t *src, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (a + i >= sp->at && a + i < sp->at + sp->n)
			sp->buf[a + i - sp->at] = src[i];
}
static void original(struct zv_stub_rec *w, void *arg)
{
	static const uint8_t sys[2] = { 0x0f, 0x05 };
	if (w->d) {
		put_span(arg, w->d, w->orig, 5);
	} else {
		put_span(arg, w->p, w->orig, w->s - w->p);
	}
	put_span(arg, w->s, sys, 2);
}

void zv_stubs_show_original(uint64_t addr, uint8_t *buf, size_t n)
{
	struct span sp = { addr, buf, n };
	zv_stubs_each_window(addr, n, original, &sp);
}

/* Writes a window's original bytes back through /proc/self/mem (the code
 * is not writable, and another thread may run it: a thread inside the
 * stub finishes there, and a new one takes the catch-all). */
struct restore { int fd; int n; };
static void put_back(struct zv_stub_rec *w, void *arg)
{
	struct restore *rs = arg;
	uint64_t lo = w->d ? (w->d < w->p ? w->d : w->p) : w->p;
	uint64_t hi = w->d ? (w->d + 5 > w->s + 2 ? w->d + 5 : w->s + 2) : w->s + 2;
	uint8_t b[300];
	if (hi - lo > sizeof b)
		return;
	memcpy(b, (const void *)lo, hi - lo);
	struct span sp = { lo, b, hi - lo };
	original(w, &sp);
	/* the jump to the stub goes first: the syscall bytes follow it */
	if (zv_sys4(__NR_pwrite64, rs->fd, b, hi - lo, lo) == (long)(hi - lo)) {
		w->restored = 1;
		rs->n++;
	}
}

int zv_stubs_restore_original(uint64_t addr, size_t n, int memfd)
{
	struct restore rs = { memfd, 0 };
	zv_sites_lock();
	zv_stubs_each_window(addr, n, put_back, &rs);
	zv_sites_unlock();
	return rs.n;
}
