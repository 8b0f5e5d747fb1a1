/* The ordered list of layers and the folding of their state into each
 * call's route (sys/layer.h). A new layer is a ZV_LAYER in its own file:
 * nothing here or in the handlers changes. */
#include "zvisor.h"
#include "sys/layer.h"
#include <asm/unistd_64.h>
#include <linux/errno.h>

/* The layers in order: each feature's ZV_LAYER, sorted by the linker. At
 * most 32 (the per-call masks are 32 bits: kernel/zvisor.ld checks). */
#define layers zv_layers_start
#define NLAYERS ((size_t)(zv_layers_end - zv_layers_start))
extern const struct zv_layer zv_fdguard_layer; /* sys/fs.c */

/* SIGSYS, and the host signals features take for themselves. */
uint64_t zv_kernel_sigs = ZV_SIGBIT(31);

/* Which layers see each call: bit i for layers[i]; the last slot stands
 * for every number beyond the table. */
static uint32_t seen_by[513];
/* How the fast path treats each number (ZV_KIND_*). */
uint8_t zv_call_kind[512] __attribute__((aligned(64)));
/* The fast path's direct host calls check for hidden fds. */
int zv_check_fds;

/* Runs at every start and whenever an option changes: only the layers that
 * are on are asked, about each number (two by default, of nine). One at a
 * time: two threads' folds interleaved (one after procview's first mark,
 * one after another thread's last) could leave each route as either wrote
 * it; in turn, the last one asks after the last change. */
static void fold(void);
void zv_layers_fold(void)
{
	zv_lock(&zv_proc.fold_lock);
	fold();
	zv_unlock(&zv_proc.fold_lock);
}

static void fold(void)
{
	unsigned inline_ok = 0, on = 0;
	uint64_t sigs = ZV_SIGBIT(31);
	for (size_t i = 0; i < NLAYERS; i++) {
		if (layers[i]->inline_host && layers[i]->inline_host())
			inline_ok |= 1u << i;
		if (layers[i]->sees && (!layers[i]->active || layers[i]->active()))
			on |= 1u << i;
		if (layers[i]->signals)
			sigs |= layers[i]->signals();
	}
	/* Each value is written only where it changes: a fork child that
	 * folds the same again copies none of these pages. */
	if (zv_kernel_sigs != sigs)
		zv_kernel_sigs = sigs;
	for (int nr = 0; nr <= 512; nr++) {
		unsigned m = 0;
		for (unsigned left = on; left; left &= left - 1) {
			int i = __builtin_ctz(left);
			if (layers[i]->sees(nr < 512 ? nr : -1))
				m |= 1u << i;
		}
		if (seen_by[nr] != m)
			seen_by[nr] = m;
	}
	/* getpid, gettid: sys/id.c's answers, inline, while nothing watches them */
	int pid_inline = !seen_by[__NR_getpid] && !seen_by[__NR_gettid] && zv_proc.count_fd < 0;
	for (int nr = 0; nr < 512; nr++) {
		const struct zv_sysent *row = &zv_sysent[nr];
		uint8_t kind = row->frame ? ZV_KIND_FRAME
			: row->handler || (seen_by[nr] & ~inline_ok) ? ZV_KIND_HANDLER : ZV_KIND_HOST;
		if (pid_inline && (nr == __NR_getpid || nr == __NR_gettid))
			kind = ZV_KIND_PID;
		if (zv_call_kind[nr] != kind)
			zv_call_kind[nr] = kind;
	}
	int check = zv_hidden_fds_exist() && zv_fdguard_layer.sees(__NR_read);
	if (zv_check_fds != check)
		zv_check_fds = check;
}

/* Under the fold's lock: a fold another thread has begun has ended. */
int zv_layer_routed(const struct zv_layer *l, long nr)
{
	int r = 0;
	zv_lock(&zv_proc.fold_lock);
	for (size_t i = 0; i < NLAYERS; i++)
		if (layers[i] == l)
			r = (seen_by[(unsigned long)nr < 512 ? nr : 512] >> i) & 1;
	zv_unlock(&zv_proc.fold_lock);
	return r;
}

static long step(struct zv_call *c)
{
	unsigned m = c->pending;
	if (m) {
		int i = __builtin_ctz(m);
		c->pending = m & (m - 1);
		c->after = ~0u << (i + 1);
		return layers[i]->call(c);
	}
	zv_handler *h = zv_row(c->nr)->handler;
	if (h)
		return h(c);
	const long *a = c->a;
	return zv_host_call(c->t, c->nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}

/* A layer's next step, under a guard of its own: a fault on a bad guest
 * pointer further in (the handler writing a result, a layer reading a
 * path) returns -EFAULT to the layer, which goes on as it would with the
 * host's EFAULT (the ptrace layer's exit stop, trace's line), not past it
 * to the entry's guard. */
long zv_next(struct zv_call *c)
{
	struct zv_thread *t = c->t;
	uint64_t outer = t->guard_sp;
	if (!outer)
		return step(c); /* not a guest call's path: nothing to fail */
	long r = zv_fn_guarded(c, (long (*)(void *))step, &t->guard_sp);
	t->guard_sp = outer;
	return r;
}

long zv_layers_call(struct zv_thread *t, struct zv_ucontext *uc, long nr, long *a)
{
	struct zv_call c = { t, uc, nr, a, seen_by[(unsigned long)nr < 512 ? nr : 512], ~0u };
	return step(&c); /* (under the entry's guard) */
}

long zv_next_as(struct zv_call *c, long nr, long *a)
{
	struct zv_call d = { c->t, c->uc, nr, a, seen_by[(unsigned long)nr < 512 ? nr : 512] & c->after, c->after };
	return zv_next(&d);
}

#define EACH_LAYER(hook, ...) \
	for (size_t i = 0; i < NLAYERS; i++) \
		if (layers[i]->hook) \
			layers[i]->hook(__VA_ARGS__)

void zv_event_fork_child(struct zv_thread *t) { EACH_LAYER(fork_child, t); }
void zv_event_exec(struct zv_thread *t, long nr, const long *a) { EACH_LAYER(exec, t, nr, a); }
void zv_event_exec_failed(struct zv_thread *t, long nr) { EACH_LAYER(exec_failed, t, nr); }
void zv_event_exec_here(struct zv_thread *t) { EACH_LAYER(exec_here, t); }
void zv_event_exit(struct zv_thread *t, int code, int sig) { EACH_LAYER(exit, t, code, sig); }
void zv_event_signal(struct zv_thread *t, int sig, const void *si) { EACH_LAYER(signal, t, sig, si); }
void zv_event_kwork(struct zv_thread *t, struct zv_ucontext *uc) { EACH_LAYER(kwork, t, uc); }
void zv_event_arrive(struct zv_thread *t, int sig, zv_siginfo *si) { EACH_LAYER(arrive, t, sig, si); }
void zv_event_clone_before(struct zv_thread *t, struct zv_thread *child, uint64_t flags) { EACH_LAYER(clone_before, t, child, flags); }
void zv_event_clone_after(struct zv_thread *t, struct zv_ucontext *uc, long child, uint64_t flags) { EACH_LAYER(clone_after, t, uc, child, flags); }
void zv_event_task_start(struct zv_thread *t, struct zv_ucontext *uc) { EACH_LAYER(task_start, t, uc); }
void zv_event_vfork_done(struct zv_thread *t, struct zv_ucontext *uc, long child) { EACH_LAYER(vfork_done, t, uc, child); }
void zv_event_exec_start(struct zv_thread *t, struct zv_ucontext *uc) { EACH_LAYER(exec_start, t, uc); }

int zv_event_deliver(struct zv_thread *t, int sig, zv_siginfo *si, struct zv_ucontext *uc)
{
	for (size_t i = 0; i < NLAYERS && sig; i++)
		if (layers[i]->deliver)
			sig = layers[i]->deliver(t, sig, si, uc);
	return sig;
}

void zv_event_new_task(struct zv_thread *t, struct zv_thread *c) { EACH_LAYER(new_task, t, c); }
void zv_event_report(int fd, int leader) { EACH_LAYER(report, fd, leader); }
void zv_event_tsc_off(void) { EACH_LAYER(tsc_off); }
void zv_event_opened(struct zv_thread *t, const char *path, long fd) { EACH_LAYER(opened, t, path, fd); }
void zv_event_to_guest(struct zv_thread *t, struct zv_ucontext *uc) { EACH_LAYER(to_guest, t, uc); }
void zv_event_own_signal(struct zv_thread *t, int sig, struct zv_ucontext *uc) { EACH_LAYER(own_signal, t, sig, uc); }
void zv_event_image(struct zv_thread *t, const char *path) { EACH_LAYER(image, t, path); }

long zv_event_seccomp_trace(struct zv_thread *t, struct zv_ucontext *uc, long nr, uint32_t data)
{
	for (size_t i = 0; i < NLAYERS; i++)
		if (layers[i]->seccomp_trace) {
			long r = layers[i]->seccomp_trace(t, uc, nr, data);
			if (r != ZV_SECCOMP_UNTRACED)
				return r;
		}
	return ZV_SECCOMP_UNTRACED;
}

long zv_event_own_text(const char *name, char *out, size_t cap)
{
	for (size_t i = 0; i < NLAYERS; i++)
		if (layers[i]->own_text) {
			long r = layers[i]->own_text(name, out, cap);
			if (r != -ENOENT)
				return r;
		}
	return -ENOENT;
}

long zv_event_exe_of(int hpid, char *out, size_t cap)
{
	for (size_t i = 0; i < NLAYERS; i++)
		if (layers[i]->exe_of) {
			long r = layers[i]->exe_of(hpid, out, cap);
			if (r != -ENOENT)
				return r;
		}
	return -ENOENT;
}

int zv_event_sigsys(struct zv_thread *t, const void *si, struct zv_ucontext *uc)
{
	for (size_t i = 0; i < NLAYERS; i++)
		if (layers[i]->sigsys && layers[i]->sigsys(t, si, uc))
			return 1;
	return 0;
}

int zv_call_restarts(struct zv_thread *t)
{
	for (size_t i = 0; i < NLAYERS; i++)
		if (layers[i]->restarts && layers[i]->restarts(t))
			return 1;
	return 0;
}

int zv_guest_ids_on(void)
{
	for (size_t i = 0; i < NLAYERS; i++)
		if (layers[i]->guest_id && (!layers[i]->active || layers[i]->active()))
			return 1;
	return 0;
}

long zv_guest_id(long x)
{
	for (size_t i = 0; i < NLAYERS; i++)
		if (layers[i]->guest_id)
			x = layers[i]->guest_id(x);
	return x;
}

long zv_guest_group(long x)
{
	for (size_t i = 0; i < NLAYERS; i++)
		if (layers[i]->guest_group)
			x = layers[i]->guest_group(x);
	return x;
}
