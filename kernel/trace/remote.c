/* `zvisor trace -p PID`: tracing a running hosted process, as strace -p
 * does. Every hosted process carries the trace layer already, so nothing
 * is ptraced: the command asks the process over the peer channel
 * (peer/peer.h) to turn its trace on with the command's options and hands
 * it the output descriptor; Ctrl-C asks it to turn the trace off again, and
 * the program runs on. The command waits meanwhile, and ends when the
 * process does (its trace writes the +++ exited line). */
#include "zvisor.h"
#include "peer/peer.h"
#include "sys/layer.h"
#include "trace/trace.h"
#include "trace/remote.h"
#include "sys/execstate.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/fmt.h"
#include "lib/procfs.h"
#include <linux/fcntl.h>

#define MAX_PIDS 16
int zv_trace_pids[MAX_PIDS];
int zv_trace_npids;

struct remote_req {
	struct zv_peer_hdr h;
	int stop;        /* 1: trace no more */
	int tid;         /* the thread named by -p */
	char opts[2048]; /* the options, as the exec state carries them */
};

/* --- in the traced process ------------------------------------------------ */

static void mark_threads(int tid, int on)
{
	long fd = zv_openat(-100, "/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
	char buf[2048];
	long n;
	while (fd >= 0 && (n = zv_sys3(__NR_getdents64, fd, buf, sizeof buf)) > 0) {
		for (long off = 0; off < n;) {
			struct { uint64_t ino; int64_t off; uint16_t reclen; uint8_t type; char name[]; } *d = (void *)(buf + off);
			off += d->reclen;
			unsigned long h;
			if (zv_parse_ulong(d->name, &h) < 0)
				continue;
			struct zv_thread *x = zv_thread_find((int)h);
			if (x && (!on || zv_proc.trace.follow || x->tid == tid))
				x->trace.traced = on;
		}
	}
	if (fd >= 0)
		zv_close((int)fd);
}

static void serve_remote(struct zv_thread *t, int fd, const void *msg, size_t n, int *fds, int nfds)
{
	const struct remote_req *q = msg;
	struct zv_trace *tr = &zv_proc.trace;
	long err = 0;
	if (n < sizeof *q) {
		err = -EINVAL;
	} else if (q->stop) {
		mark_threads(0, 0);
		tr->on = 0;
		tr->opts[0] = 0;
		if (tr->fd >= 0)
			zv_close(tr->fd);
		tr->fd = -1;
	} else if (tr->on || tr->summary) {
		err = -EBUSY; /* traced already: by `zvisor trace` itself, or another -p */
	} else {
		char opts[sizeof q->opts];
		memcpy(opts, q->opts, sizeof opts);
		opts[sizeof opts - 1] = 0;
		tr->fd = nfds > 0 ? zv_hide_fd(fds[0]) : -1;
		nfds = 0;
		zv_trace_decode_opts(opts, NULL);
		tr->on = 1;
		mark_threads(q->tid, 1);
	}
	for (int i = 0; i < nfds; i++)
		zv_close(fds[i]);
	zv_signals_reinstall(t->sighand); /* trace catches the fatal signals to print them */
	zv_layers_fold();
	zv_peer_send(fd, &err, sizeof err, NULL, 0);
	zv_close(fd);
}

/* --- the command ---------------------------------------------------------- */

static long ask(int pid, struct remote_req *q, int out)
{
	long fd = zv_peer_open(pid, 5000);
	if (fd < 0)
		return fd;
	long err = -EIO;
	long r = zv_peer_request((int)fd, ZV_PEER_TRACE_REMOTE, q, sizeof *q, &out, out >= 0, &err, sizeof err, NULL,
				 0, NULL);
	zv_close((int)fd);
	return r == (long)sizeof err ? err : r < 0 ? r : -EIO;
}

/* With -f the process's children (and theirs) were traced too, from
 * their fork on: each hosted one is asked to stop as well. */
static void stop_descendants(int root)
{
	int tree[1024], n = 1;
	tree[0] = root;
	long fd = zv_openat(-100, "/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
	char buf[4096];
	long got;
	int all[4096], nall = 0;
	while (fd >= 0 && (got = zv_sys3(__NR_getdents64, fd, buf, sizeof buf)) > 0)
		for (long off = 0; off < got;) {
			struct { uint64_t ino; int64_t off; uint16_t reclen; uint8_t type; char name[]; } *d = (void *)(buf + off);
			off += d->reclen;
			unsigned long pid;
			if (zv_parse_ulong(d->name, &pid) == 0 && nall < 4096)
				all[nall++] = (int)pid;
		}
	if (fd >= 0)
		zv_close((int)fd);
	for (int k = 0; k < n; k++) /* breadth first: a child's children after it */
		for (int i = 0; i < nall && n < 1024; i++)
			if (all[i] && (int)zv_procfs_status_field(all[i], "PPid", 0) == tree[k]) {
				tree[n++] = all[i];
				all[i] = 0;
			}
	for (int k = 1; k < n; k++) {
		static struct remote_req q;
		q = (struct remote_req){ .stop = 1 };
		if (zv_peer_hosted(tree[k]) == 1)
			ask(tree[k], &q, -1);
	}
}

__attribute__((noreturn)) void zv_trace_attach_main(void)
{
	struct zv_trace *tr = &zv_proc.trace;
	static struct remote_req q;
	int out = tr->follow == 2 && tr->path[0] ? -1 : tr->fd >= 0 ? tr->fd : 2;
	int tgid[MAX_PIDS], pidfd[MAX_PIDS], pids[MAX_PIDS], n = 0;
	for (int i = 0; i < zv_trace_npids; i++) {
		int pid = zv_trace_pids[i], g = (int)zv_procfs_status_field(pid, "Tgid", 0);
		int hosted = g > 0 ? zv_peer_hosted(g) : -ESRCH;
		if (hosted != 1) {
			zv_dprintf(2, "zvisor: trace: attach: process %d %s\n", pid,
				   hosted == -ESRCH ? "does not exist" : hosted == 0 ? "does not run under zvisor"
									    : "cannot be inspected (another user's?)");
			continue;
		}
		q = (struct remote_req){ .tid = pid };
		zv_strlcpy(q.opts, tr->opts, sizeof q.opts);
		long r = ask(g, &q, out);
		if (r < 0) {
			zv_dprintf(2, "zvisor: trace: attach: process %d: %s\n", pid,
				   r == -EBUSY ? "it is traced already" : r == -ETIMEDOUT ? "it did not answer"
									  : zv_strerror((int)-r));
			continue;
		}
		zv_dprintf(2, "zvisor: Process %d attached\n", pid);
		tgid[n] = g;
		pids[n] = pid;
		pidfd[n++] = (int)zv_sys2(__NR_pidfd_open, g, 0);
	}
	if (!n)
		zv_exit_group(1);
	/* Until Ctrl-C (or SIGTERM, SIGHUP, SIGQUIT), or every process ended. */
	uint64_t stop = ZV_SIGBIT(2) | ZV_SIGBIT(15) | ZV_SIGBIT(1) | ZV_SIGBIT(3);
	zv_host_set_mask(stop, NULL);
	for (;;) {
		struct { long s, ns; } ts = { 0, 200000000L };
		if (zv_sys4(__NR_rt_sigtimedwait, &stop, NULL, &ts, 8) > 0)
			break;
		int live = 0;
		for (int i = 0; i < n; i++) {
			struct { int fd; short events, revents; } p = { pidfd[i], 1, 0 };
			struct { long s, ns; } now = { 0, 0 };
			if (pidfd[i] >= 0 && zv_sys5(__NR_ppoll, &p, 1, &now, NULL, 8) == 0)
				live++;
		}
		if (!live)
			zv_exit_group(0);
	}
	for (int i = 0; i < n; i++) {
		q = (struct remote_req){ .stop = 1 };
		if (ask(tgid[i], &q, -1) == 0)
			zv_dprintf(2, "zvisor: Process %d detached\n", pids[i]);
		if (tr->follow)
			stop_descendants(tgid[i]);
	}
	zv_exit_group(0);
}

ZV_PEER_SERVICE(trace_remote, ZV_PEER_TRACE_REMOTE, serve_remote);
