/* Taking a checkpoint: the request, and freezing every thread at a point
 * where its whole state is memory. A thread interrupted in guest code parks
 * at once, inside the SIGSYS handler whose frame holds its registers; one in
 * the kernel parks on its way out (zv_signals_on_exit), after the call it
 * was making is set to be made again (a blocking host call returns EINTR
 * and is restarted, as after a stop and continue). So no thread is frozen
 * in the middle of a host call, and a restored thread needs only its kernel
 * stack and the registers zv_cr_setjmp saved. */
#include "zvisor.h"
#include "sys/layer.h"
#include "cr/cr.h"
#include "sys/calls.h"
#include "peer/peer.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/fmt.h"
#include "lib/kmem.h"
#include <linux/futex.h>
#include <linux/fcntl.h>
#include "intercept/sudoff.h"
#include "lib/signames.h"
#include "sys/execstate.h"

#define SI_QUEUE (-1)
#define SIGSYS 31
#define SIGKILL 9

struct zv_cr_state zv_cr ZV_COLD_BSS;

struct ts { long s, ns; };
static long futex(volatile int *w, int op, int val, const struct ts *ts)
{
	return zv_sys4(__NR_futex, w, op, val, ts);
}

static long queue_sigsys(int htid, uint64_t value)
{
	zv_siginfo si = { .si_signo = SIGSYS, .si_code = SI_QUEUE };
	si.kill.pid = (int)zv_getpid();
	memcpy(si.bytes + 8, &value, 8);
	return zv_sys4(__NR_rt_tgsigqueueinfo, zv_getpid(), htid, SIGSYS, &si);
}

/* Asks every thread to park; itself included (this thread writes the image). */
void zv_cr_start(struct zv_thread *t, const struct zv_cr_request *req)
{
	zv_cr.req = *req;
	zv_cr.session = -1;
	zv_cr.parked = 0;
	zv_cr.nthreads = 0;
	zv_cr.dumper_htid = (int)zv_gettid();
	zv_cr.round++;
	__atomic_store_n(&zv_cr.busy, 1, __ATOMIC_RELEASE);
	(void)t;
}

static void freeze_here(struct zv_thread *t, struct zv_ucontext *uc)
{
	if (t->cr.parked) {
		/* Still in a park: of this checkpoint, a reminder; of the one
		 * before (released, on its way out), park again once out. */
		if (t->cr.round != zv_cr.round)
			t->cr.freeze = 1;
		return;
	}
	if (zv_interrupted_kernel(t, uc)) {
		/* Park on the way out: zv_signals_on_exit. */
		t->cr.freeze = 1;
		t->fast.sig_pending = 1;
		zv_sudoff_need(t); /* the way out bounces, a syscall only SUD catches */
		zv_kernel_interrupted(uc);
		return;
	}
	zv_cr_park(t);
}

/* A SIGSYS the host queued (si_code SI_QUEUE): the kernel's when its value
 * carries one of its tags. */
int zv_cr_sigsys(struct zv_thread *t, const void *siv, struct zv_ucontext *uc)
{
	const zv_siginfo *si = siv;
	uint64_t v;
	memcpy(&v, si->bytes + 8, 8);
	if (si->si_code == 0 && si->kill.pid == 0) {
		/* The host lost its siginfo (the user's queue of signals full):
		 * while this process freezes it is taken for the freeze (or a
		 * reminder of it), which would otherwise kill as the guest's. */
		if (!zv_cr.busy)
			return 0;
		freeze_here(t, uc);
		return 1;
	}
	if ((v >> 32) == ZV_CR_TAG_FREEZE) {
		if (zv_cr.busy && (int)(uint32_t)v == (int)zv_getpid())
			freeze_here(t, uc);
		return 1;
	}
	return 0;
}

/* --checkpoint-on's signal arrived (sys/signal.c keeps it from the guest). */
void zv_cr_signal(struct zv_thread *t, struct zv_ucontext *uc)
{
	if (zv_cr.busy)
		return;
	zv_cr_start(t, &zv_cr.on_signal);
	freeze_here(t, uc);
}

/* A call that returned EINTR only because of the freeze, or of the
 * signal that armed SUD in the thread (intercept/sudoff.c), is made again. */
int zv_cr_restart_call(struct zv_thread *t)
{
	/* a knock of the peer channel interrupts as invisibly: `zvisor
	 * checkpoint`'s freeze is known only once the knock is served; and a
	 * call interrupted only to arm SUD in this thread (intercept/sudoff.c) */
	return t->cr.freeze || t->cr.parked || zv_peer_pending() || t->sud_remake;
}

static int parked_htid(int tid)
{
	for (int i = 0; i < zv_cr.nthreads; i++)
		if (zv_cr.threads[i] && zv_cr.threads[i]->htid == tid)
			return 1;
	return 0;
}

/* Signals every thread of the process that has not parked; returns how
 * many threads the process has. */
static int poke_unparked(void)
{
	long fd = zv_openat(-100, "/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	char buf[4096];
	int count = 0;
	long n;
	while ((n = zv_sys3(__NR_getdents64, fd, buf, sizeof buf)) > 0) {
		for (long off = 0; off < n;) {
			struct { uint64_t ino; int64_t off; uint16_t reclen; uint8_t type; char name[]; } *d = (void *)(buf + off);
			off += d->reclen;
			unsigned long tid;
			if (zv_parse_ulong(d->name, &tid) < 0)
				continue;
			count++;
			if (!parked_htid((int)tid))
				queue_sigsys((int)tid, (ZV_CR_TAG_FREEZE << 32) | (uint32_t)zv_getpid());
		}
	}
	zv_close((int)fd);
	return count;
}

/* The checkpointing thread: every other thread parked, or a reason. */
const char *zv_cr_wait_for_all(void)
{
	for (int round = 0; round < 1000; round++) { /* 10 s */
		int total = poke_unparked();
		if (total < 0)
			return "cannot list the process's threads";
		int parked = __atomic_load_n(&zv_cr.parked, __ATOMIC_ACQUIRE);
		if (parked >= total)
			return NULL;
		struct ts ts = { 0, 10000000 };
		futex(&zv_cr.parked, FUTEX_WAIT_PRIVATE, parked, &ts);
	}
	return "a thread did not stop within 10 s";
}

/* The TCP connections between the saved processes (cr/fdsock.c notes
 * their fds as it saves them): the killed original resets them rather than
 * closing them with a FIN. A socket that closes first stays in TIME_WAIT
 * for a minute on its address, which the restore binds again: a listener
 * the program made without SO_REUSEADDR (Python's socketserver) could not
 * listen there again until then (its accepted connection's TIME_WAIT keeps
 * the port), nor a connecting end take its port. A connection to the
 * outside (--tcp-close) keeps its FIN, and a socket that is also another
 * process's (fds 0-2, --inherit-fd) is not noted. */
static int resets[256];
static int nresets;

void zv_cr_note_reset(int fd)
{
	if (nresets < (int)(sizeof resets / sizeof resets[0]))
		resets[nresets++] = fd;
}

void zv_cr_forget_resets(void)
{
	nresets = 0;
}

static void reset_connections(void)
{
	struct { int onoff, linger; } l = { 1, 0 };
	for (int i = 0; i < nresets; i++)
		zv_sys5(__NR_setsockopt, resets[i], 1 /* SOL_SOCKET */, 13 /* SO_LINGER */, &l, sizeof l);
	nresets = 0;
}

void zv_cr_finish(int kill)
{
	if (kill)
		reset_connections();
	nresets = 0;
	if (kill) {
		zv_sys2(__NR_kill, zv_getpid(), SIGKILL); /* as criu dump: the image replaces the process */
		zv_exit_group(137);
	}
	zv_cr.nthreads = 0;
	zv_cr.parked = 0;
	__atomic_store_n(&zv_cr.busy, 0, __ATOMIC_RELEASE);
	__atomic_add_fetch(&zv_cr.release, 1, __ATOMIC_RELEASE);
	futex(&zv_cr.release, FUTEX_WAKE_PRIVATE, 0x7fffffff, NULL);
}

/* What the host keeps of a thread outside memory, read while it parks. */
static void note_host_state(struct zv_thread *t)
{
	struct zv_cr_thread *c = &t->cr;
	zv_sys2(__NR_arch_prctl, 0x1003 /* ARCH_GET_FS */, &c->fs);
	c->robust_head = c->robust_len = c->tid_addr = 0;
	zv_sys3(__NR_get_robust_list, 0, &c->robust_head, &c->robust_len);
	zv_sys2(__NR_prctl, 40 /* PR_GET_TID_ADDRESS */, &c->tid_addr);
	zv_sys2(__NR_prctl, 16 /* PR_GET_NAME */, c->comm);
}

/* Parks the calling thread until the image is written (and, restored, comes
 * back here in the new process: zv_cr_setjmp returns 1). */
void zv_cr_park(struct zv_thread *t)
{
	uint64_t keep = ~(ZV_SIGBIT(SIGSYS) | ZV_SIGBIT(SIGKILL) | ZV_SIGBIT(19)), old;
	zv_host_set_mask(keep, &old);
again:
	t->cr.freeze = 0;
	t->cr.parked = 1;
	t->cr.round = zv_cr.round;
	t->cr.mask = old;
	t->cr.old_htid = t->htid;
	note_host_state(t);
	int gen = __atomic_load_n(&zv_cr.release, __ATOMIC_ACQUIRE);
	int dumper = zv_cr.dumper_htid == t->htid;
	int slot = __atomic_fetch_add(&zv_cr.nthreads, 1, __ATOMIC_ACQ_REL);
	if (slot < ZV_CR_MAX_THREADS)
		zv_cr.threads[slot] = t;
	if (zv_cr_setjmp(t->cr.jmp) == 0) {
		__atomic_add_fetch(&zv_cr.parked, 1, __ATOMIC_RELEASE);
		futex(&zv_cr.parked, FUTEX_WAKE_PRIVATE, 1, NULL);
		if (dumper && zv_cr.session >= 0) {
			zv_cr_session(t); /* cr/serve.c: `zvisor checkpoint` says what to do */
		} else if (dumper) { /* --checkpoint-on */
			struct zv_cr_out *o = zv_kmap(sizeof *o, 4096, -1);
			const char *why = zv_is_err((long)o) ? "out of memory" : zv_cr_wait_for_all();
			if (!why && zv_cr.nthreads > ZV_CR_MAX_THREADS)
				why = "more than 1024 threads";
			if (!why && zv_cr_dump(o, t) < 0)
				why = o->why;
			struct zv_cr_request req = zv_cr.req;
			if (why)
				zv_dprintf(zv_proc.err_fd >= 0 ? zv_proc.err_fd : 2, "zvisor: checkpoint: %s\n", why);
			if (!zv_is_err((long)o))
				zv_kunmap(o, sizeof *o);
			/* Its images follow --compress=auto too, while the threads
			 * are still parked: the zstd child cannot be reaped by a
			 * guest wait meanwhile. */
			if (!why)
				zv_cr_compress_pages(req.dir, ZV_CR_Z_AUTO);
			zv_cr_finish(!why && !req.leave_running);
		} else {
			while (__atomic_load_n(&zv_cr.release, __ATOMIC_ACQUIRE) == gen)
				futex(&zv_cr.release, FUTEX_WAIT_PRIVATE, gen, NULL);
		}
	}
	/* Now, or restored (cr/restore.c re-made the host's side of it). */
	if (zv_cr.hole && zv_cr.hole_leader == t) {
		zv_munmap((void *)zv_cr.hole, zv_cr.hole_len); /* restore ran there */
		zv_cr.hole = 0;
		if (zv_cr.area)
			zv_munmap((void *)zv_cr.area, zv_cr.area_len);
		zv_cr.area = 0;
	}
	t->cr.parked = 0;
	if (t->cr.freeze && zv_cr.busy)
		goto again; /* the next checkpoint asked while this one was ending */
	zv_host_set_mask(old, NULL);
}

/* --checkpoint-on=SIG's value: a name (USR2, SIGUSR2) or a number; 0 if
 * neither, or a signal that cannot be zvisor's (KILL, STOP, SYS, the
 * CPU's faults). */
int zv_cr_parse_signal(const char *s)
{
	unsigned long n;
	int sig = 0;
	if (zv_parse_ulong(s, &n) == 0) {
		sig = n <= 64 ? (int)n : 0;
	} else {
		for (int i = 1; i <= 64 && !sig; i++) {
			const char *name = zv_signal_name(i);
			if (name && (!zv_strcmp(name, s) || !zv_strcmp(name + 3, s)))
				sig = i;
		}
	}
	if (sig == SIGKILL || sig == 19 || sig == SIGSYS || sig == 4 || sig == 5 || sig == 7 || sig == 8 || sig == 11)
		return 0;
	return sig;
}

/* The exec state's field K: --checkpoint-on survives execve (sys/execstate.c). */
int zv_cr_encode(char *buf, size_t n, const struct zv_exec_carry *x)
{
	(void)x;
	if (!zv_cr.signal)
		return -1;
	int k = zv_snprintf(buf, n, "%d.%d.", zv_cr.signal, zv_cr.on_signal.leave_running);
	for (const char *p = zv_cr.on_signal.dir; *p && k + 3 < (int)n; p++)
		k += zv_snprintf(buf + k, n - k, "%02x", (unsigned)(uint8_t)*p);
	return k;
}

const char *zv_cr_decode(const char *s, struct zv_exec_carry *x)
{
	(void)x;
	zv_cr.signal = (int)zv_parse_dec(s, &s);
	if (*s == '.')
		s++;
	zv_cr.on_signal.leave_running = (int)zv_parse_dec(s, &s);
	if (*s == '.')
		s++;
	size_t k = 0;
	while (s[0] && s[0] != ',' && s[1] && k + 1 < sizeof zv_cr.on_signal.dir) {
		char h[3] = { s[0], s[1], 0 };
		const char *e;
		zv_cr.on_signal.dir[k++] = (char)zv_parse_hex(h, &e);
		s += 2;
	}
	zv_cr.on_signal.dir[k] = 0;
	return s;
}

ZV_EXEC_FIELD(cr, 200, 'K', zv_cr_encode, zv_cr_decode);

/* A thread back from a checkpoint's park (the image written, or restored)
 * whose call the freeze interrupted, to be made again: the signals sent
 * to it meanwhile (held by the host) come now, as they would have during
 * that call, which then ends as it would have with them (sigsuspend with
 * EINTR) instead of being made again and waiting for them in vain. */
static void after_park(struct zv_thread *t, struct zv_ucontext *uc)
{
	long nr = t->cr.restart_nr - 1;
	t->cr.restart_nr = 0;
	if (nr < 0)
		return;
	uint64_t blocked = t->delivery_mask_set ? t->delivery_mask : zv_guest_mask(t, uc), old;
	zv_host_set_mask(blocked & ~zv_kernel_signals(), &old); /* deferred as they come */
	zv_host_set_mask(old, NULL);
	if ((t->pending_set & ~blocked) && !zv_restart_on_eintr(t, nr, uc)) {
		uc->mc.rip += 2; /* zv_frame_result had moved it back onto the call */
		uc->mc.rax = (uint64_t)-EINTR;
	}
}

/* The checkpoint's events (sys/layer.h): it has no calls of its own. */
static void cr_to_guest(struct zv_thread *t, struct zv_ucontext *uc)
{
	if (t->cr.freeze) {
		zv_cr_park(t);
		after_park(t, uc);
	}
	t->cr.restart_nr = 0; /* a call another knock interrupted: made again at once */
}
static uint64_t cr_signals(void) { return zv_cr.signal ? ZV_SIGBIT(zv_cr.signal) : 0; }
static void cr_own_signal(struct zv_thread *t, int sig, struct zv_ucontext *uc) { zv_cr_signal(t, uc); }

ZV_LAYER(cr, 650) = {
	.name = "cr", .to_guest = cr_to_guest, .restarts = zv_cr_restart_call, .signals = cr_signals,
	.own_signal = cr_own_signal, .sigsys = zv_cr_sigsys,
};
