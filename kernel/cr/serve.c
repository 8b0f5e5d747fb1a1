/* A process's side of `zvisor checkpoint` (cr/tree.h): the peer service
 * (peer/services.c) that freezes the process, the thread that took the
 * knock becoming the checkpointing one, and what that thread then does
 * while every other is parked: it answers with the process's ids as its
 * program sees them and its children's, then dumps, resumes or ends the
 * process as it is told. A coordinator that goes away resumes it. */
#include "zvisor.h"
#include "cr/cr.h"
#include "cr/tree.h"
#include "peer/peer.h"
#include "sys/vtime.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/fmt.h"
#include "lib/kmem.h"
#include <linux/fcntl.h>

void zv_cr_serve(struct zv_thread *t, int fd, const void *msg, size_t n, int *fds, int nfds)
{
	const struct zv_cr_ask *a = msg;
	for (int i = 0; i < nfds; i++)
		zv_close(fds[i]);
	if (n < sizeof *a || a->op != ZV_CR_OP_FREEZE || zv_cr.busy) {
		struct zv_cr_frozen no = { .err = -1 };
		zv_strlcpy(no.why, zv_cr.busy ? "another checkpoint of it is under way" : "a bad request", sizeof no.why);
		zv_peer_send(fd, &no, sizeof no, NULL, 0);
		zv_close(fd);
		return;
	}
	/* its answers come when the others are parked, and its commands when
	 * the whole tree is: no time limit on this connection */
	struct { long s, us; } none = { 0, 0 };
	zv_sys5(__NR_setsockopt, fd, 1 /* SOL_SOCKET */, 20 /* SO_RCVTIMEO */, &none, sizeof none);
	struct zv_cr_request req = { 0 };
	zv_cr_start(t, &req);
	zv_cr.session = fd;
	zv_cr_park(t);
}

/* This process's host children (of every thread), for the coordinator to
 * ask next: their pids as the program sees them too. */
static void children(struct zv_cr_frozen *f)
{
	for (int i = 0; i < zv_cr.nthreads && i < ZV_CR_MAX_THREADS; i++) {
		char path[64], buf[4096];
		zv_snprintf(path, sizeof path, "/proc/self/task/%d/children", zv_cr.threads[i]->htid);
		long fd = zv_openat(AT_FDCWD, path, O_RDONLY | O_CLOEXEC, 0);
		long n = fd >= 0 ? zv_read((int)fd, buf, sizeof buf - 1) : -1;
		if (fd >= 0)
			zv_close((int)fd);
		if (n <= 0)
			continue;
		buf[n] = 0;
		for (const char *p = buf; *p && f->nchildren < ZV_CR_MAX_CHILDREN;) {
			const char *e;
			long pid = zv_parse_dec(p, &e);
			if (e == p)
				break;
			f->children[f->nchildren].hpid = (int32_t)pid;
			f->children[f->nchildren].vpid = (int32_t)zv_cr_guest_id(pid);
			f->nchildren++;
			p = *e ? e + 1 : e;
		}
	}
}

static void frozen(struct zv_cr_frozen *f)
{
	f->hpid = (int32_t)zv_getpid();
	f->vpid = zv_proc.pid;
	f->vppid = (int32_t)zv_cr_guest_ppid(zv_sys0(__NR_getppid));
	f->vpgid = (int32_t)zv_cr_guest_group(zv_sys1(__NR_getpgid, 0));
	f->vsid = (int32_t)zv_cr_guest_group(zv_sys1(__NR_getsid, 0));
	children(f);
}

void zv_cr_session(struct zv_thread *t)
{
	int fd = zv_cr.session;
	struct zv_cr_frozen *f = zv_kmap(sizeof *f + sizeof(struct zv_cr_command) + sizeof(struct zv_cr_out), 4096, -1);
	if (zv_is_err((long)f)) {
		zv_close(fd);
		zv_cr.session = -1;
		zv_cr_finish(0);
		return;
	}
	struct zv_cr_command *cmd = (void *)(f + 1);
	struct zv_cr_out *o = (void *)(cmd + 1);
	const char *why = zv_cr_wait_for_all();
	if (!why && zv_cr.nthreads > ZV_CR_MAX_THREADS)
		why = "more than 1024 threads";
	if (why) {
		f->err = -1;
		zv_strlcpy(f->why, why, sizeof f->why);
	} else {
		zv_time_now(&zv_cr.frozen_mono, &zv_cr.frozen_boot);
		frozen(f);
	}
	long r = zv_peer_send(fd, f, sizeof *f, NULL, 0);
	int kill = 0;
	while (r == 0 && !why) {
		long n = zv_peer_recv(fd, cmd, sizeof *cmd, NULL, 0, NULL);
		if (n == -EINTR || n == -EAGAIN)
			continue;
		if (n != (long)sizeof *cmd || cmd->op == ZV_CR_OP_RESUME)
			break; /* told so, or the coordinator is gone */
		if (cmd->op == ZV_CR_OP_KILL) {
			kill = 1;
			break;
		}
		if (cmd->op != ZV_CR_OP_DUMP)
			break;
		zv_cr.req = cmd->req;
		zv_cr.req.dir[sizeof zv_cr.req.dir - 1] = 0;
		zv_cr.tree = cmd->tree;
		struct zv_cr_done d = { 0 };
		if (zv_cr_dump(o, t) < 0) {
			d.err = -1;
			zv_strlcpy(d.why, o->why, sizeof d.why);
		}
		zv_cr.tree = 0;
		r = zv_peer_send(fd, &d, sizeof d, NULL, 0);
	}
	zv_kunmap(f, sizeof *f + sizeof *cmd + sizeof *o);
	zv_close(fd);
	zv_cr.session = -1;
	zv_cr_finish(kill);
}

ZV_PEER_SERVICE(cr_checkpoint, ZV_PEER_CHECKPOINT, zv_cr_serve);
