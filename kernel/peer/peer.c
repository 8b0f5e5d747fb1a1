/* The channel between zvisor-hosted processes (peer.h explains the
 * rendezvous). No process listens all the time: the asker opens a listener
 * for one rendezvous and knocks, so a hosted process holds no fd and no
 * thread for the channel, and the knocked side needs nothing but the
 * SIGSYS handler every hosted process has. */
#include "zvisor.h"
#include "peer/peer.h"
#include "sys/layer.h"
#include "sys/platform.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/fmt.h"
#include <linux/fcntl.h>

#define AF_UNIX 1
#define SOCK_SEQPACKET 5
#define SOCK_CLOEXEC 02000000
#define SOL_SOCKET 1
#define SO_PEERCRED 17
#define SO_RCVTIMEO 20
#define SO_SNDTIMEO 21
#define SCM_RIGHTS 1
#define MSG_CMSG_CLOEXEC 0x40000000
#define SI_QUEUE (-1)
#define SIGSYS 31
#define POLLIN 1
#define MAX_FDS 8

struct sockaddr_un_ {
	uint16_t family;
	char path[108];
};
struct ucred_ {
	int32_t pid;
	uint32_t uid, gid;
};
struct iovec_ {
	void *base;
	size_t len;
};
struct msghdr_ {
	void *name;
	int namelen;
	struct iovec_ *iov;
	size_t iovlen;
	void *control;
	size_t controllen;
	int flags;
};
struct cmsghdr_ {
	size_t len;
	int level, type;
};

/* The abstract name of slot on asker's listener for the knocked process
 * (its host pid); its length as bind takes it. The knocked process is in
 * the name so that it can find a knock whose siginfo the host lost. */
#define NAME "zvisor-peer-"
static int peer_addr(struct sockaddr_un_ *a, int asker, int slot, int knocked)
{
	a->family = AF_UNIX;
	a->path[0] = 0;
	int n = zv_snprintf(a->path + 1, sizeof a->path - 1, NAME "%d-%d-%d", asker, slot, knocked);
	return 2 + 1 + n;
}

static long sock(void)
{
	return zv_sys3(__NR_socket, AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
}

/* Receives and sends on a session time out, so that a peer that dies or
 * stops half-way never holds this process's kernel. */
static void set_timeouts(int fd, long secs)
{
	struct { long s, us; } tv = { secs, 0 };
	zv_sys5(__NR_setsockopt, fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	zv_sys5(__NR_setsockopt, fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

/* The other end of fd is process pid of our user (or root). */
static int peer_is(int fd, int pid)
{
	struct ucred_ c;
	int len = sizeof c;
	if (zv_sys5(__NR_getsockopt, fd, SOL_SOCKET, SO_PEERCRED, &c, &len) < 0)
		return 0;
	uint32_t uid = (uint32_t)zv_sys0(__NR_getuid);
	return c.pid == pid && (c.uid == uid || c.uid == 0 || uid == 0);
}

int zv_peer_pid(int fd)
{
	struct ucred_ c;
	int len = sizeof c;
	return zv_sys5(__NR_getsockopt, fd, SOL_SOCKET, SO_PEERCRED, &c, &len) < 0 ? -1 : c.pid;
}

int zv_peer_hosted(int hpid)
{
	struct zv_stat_ { uint64_t dev, ino; uint64_t rest[16]; } me, it;
	char path[48];
	zv_snprintf(path, sizeof path, "/proc/%d/exe", hpid);
	long r = zv_sys4(__NR_newfstatat, -100, path, &it, 0);
	if (r == -ENOENT)
		return -ESRCH;
	if (r < 0)
		return (int)r;
	if (zv_sys4(__NR_newfstatat, -100, "/proc/self/exe", &me, 0) < 0)
		return -EACCES;
	return me.dev == it.dev && me.ino == it.ino;
}

static volatile uint64_t slots_used; /* a bit per slot whose listener is open */

/* The knock itself: a SIGSYS that names our pid and w's slot. */
static long send_knock(const struct zv_peer_wait *w)
{
	int me = (int)zv_getpid();
	zv_siginfo si = { .si_signo = SIGSYS, .si_code = SI_QUEUE };
	si.kill.pid = me;
	si.kill.uid = (uint32_t)zv_sys0(__NR_getuid);
	uint64_t v = (ZV_PEER_MAGIC << 40) | ((uint64_t)w->slot << 32) | (uint32_t)me;
	memcpy(si.bytes + 8, &v, 8);
	return zv_sys3(__NR_rt_sigqueueinfo, w->hpid, SIGSYS, &si);
}

long zv_peer_knock(int hpid, struct zv_peer_wait *w)
{
	int slot = -1;
	for (int i = 0; i < ZV_PEER_SLOTS && slot < 0; i++) {
		uint64_t bit = 1UL << i;
		if (!(__atomic_fetch_or(&slots_used, bit, __ATOMIC_ACQ_REL) & bit))
			slot = i;
	}
	if (slot < 0)
		return -EAGAIN;
	int me = (int)zv_getpid();
	long ls = sock();
	struct sockaddr_un_ a;
	int alen = peer_addr(&a, me, slot, hpid);
	long r = ls;
	if (ls >= 0 && ((r = zv_sys3(__NR_bind, ls, &a, alen)) < 0 || (r = zv_sys2(__NR_listen, ls, 4)) < 0))
		zv_close((int)ls);
	if (r < 0) {
		__atomic_fetch_and(&slots_used, ~(1UL << slot), __ATOMIC_RELEASE);
		return r;
	}
	w->listener = (int)ls;
	w->slot = slot;
	w->hpid = hpid;
	r = send_knock(w);
	if (r < 0) {
		zv_peer_cancel(w);
		return r;
	}
	return 0;
}

void zv_peer_cancel(struct zv_peer_wait *w)
{
	if (w->listener >= 0)
		zv_close(w->listener);
	w->listener = -1;
	__atomic_fetch_and(&slots_used, ~(1UL << w->slot), __ATOMIC_RELEASE);
}

static uint64_t now_ns(void)
{
	uint64_t now[2];
	zv_sys2(__NR_clock_gettime, 1 /* MONOTONIC */, now);
	return now[0] * 1000000000UL + now[1];
}

/* Waits until end (monotonic ns) for the knocked process to connect: the
 * connected fd (checked), -ETIMEDOUT, or -errno; the listener stays open. A
 * connection from another process is dropped and the wait goes on. */
static long accept_until(struct zv_peer_wait *w, uint64_t end)
{
	struct ts { long s, ns; };
	for (;;) {
		struct { int fd; short events, revents; } p = { w->listener, POLLIN, 0 };
		uint64_t t = now_ns();
		long left = t < end ? (long)(end - t) : 0;
		struct ts ts = { left / 1000000000L, left % 1000000000L };
		/* Not cancellable: a signal for the guest meanwhile is deferred
		 * (this is kernel text) and only ends this poll early. */
		long r = zv_sys5(__NR_ppoll, &p, 1, &ts, NULL, 8);
		if (r < 0 && r != -EINTR)
			return r;
		if (r <= 0) {
			if (left == 0)
				return -ETIMEDOUT;
			continue;
		}
		long fd = zv_sys4(__NR_accept4, w->listener, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			return fd;
		if (peer_is((int)fd, w->hpid)) {
			set_timeouts((int)fd, 5);
			return fd;
		}
		zv_close((int)fd);
	}
}

long zv_peer_accept(struct zv_peer_wait *w, int ms)
{
	long r = accept_until(w, now_ns() + (uint64_t)ms * 1000000UL);
	if (r == -ETIMEDOUT && ms == 0)
		return -EAGAIN;
	zv_peer_cancel(w);
	return r;
}

/* A knock can be lost: one that comes while the process replaces its image
 * (a host execve) or to a vfork child (its queue is its parent's memory) is
 * never served. So an unanswered knock is sent again, every KNOCK_AGAIN; a
 * knock served twice connects once: the listener is gone for the second. */
#define KNOCK_AGAIN 500000000UL
long zv_peer_await(struct zv_peer_wait *w, int ms)
{
	uint64_t end = now_ns() + (uint64_t)ms * 1000000UL;
	long r;
	for (;;) {
		uint64_t t = now_ns(), until = t + KNOCK_AGAIN < end ? t + KNOCK_AGAIN : end;
		r = accept_until(w, until);
		if (r != -ETIMEDOUT || until == end || (r = send_knock(w)) < 0)
			break;
	}
	zv_peer_cancel(w);
	return r;
}

long zv_peer_open(int hpid, int ms)
{
	struct zv_peer_wait w;
	long r = zv_peer_knock(hpid, &w);
	return r < 0 ? r : zv_peer_await(&w, ms);
}

long zv_peer_send(int fd, const void *buf, size_t n, const int *fds, int nfds)
{
	struct iovec_ iov = { (void *)buf, n };
	union { struct cmsghdr_ h; char b[sizeof(struct cmsghdr_) + MAX_FDS * sizeof(int)]; } c;
	struct msghdr_ m = { 0, 0, &iov, 1, 0, 0, 0 };
	if (nfds > 0) {
		if (nfds > MAX_FDS)
			return -EINVAL;
		c.h.len = sizeof c.h + (size_t)nfds * sizeof(int);
		c.h.level = SOL_SOCKET;
		c.h.type = SCM_RIGHTS;
		memcpy(c.b + sizeof c.h, fds, (size_t)nfds * sizeof(int));
		m.control = &c;
		m.controllen = (c.h.len + 7) & ~7UL;
	}
	long r = zv_sys3(__NR_sendmsg, fd, &m, 0x4000 /* MSG_NOSIGNAL */);
	return r < 0 ? r : r == (long)n ? 0 : -EIO;
}

long zv_peer_recv(int fd, void *buf, size_t n, int *fds, int maxfds, int *nfds)
{
	struct iovec_ iov = { buf, n };
	union { struct cmsghdr_ h; char b[sizeof(struct cmsghdr_) + MAX_FDS * sizeof(int)]; } c;
	struct msghdr_ m = { 0, 0, &iov, 1, &c, sizeof c, 0 };
	long r = zv_sys3(__NR_recvmsg, fd, &m, MSG_CMSG_CLOEXEC);
	int got = 0;
	if (r >= 0 && m.controllen >= sizeof c.h && c.h.level == SOL_SOCKET && c.h.type == SCM_RIGHTS) {
		int k = (int)((c.h.len - sizeof c.h) / sizeof(int));
		for (int i = 0; i < k; i++) {
			int f;
			memcpy(&f, c.b + sizeof c.h + i * sizeof(int), sizeof f);
			if (got < maxfds)
				fds[got++] = f;
			else
				zv_close(f); /* more than asked for: not kept */
		}
	}
	if (nfds)
		*nfds = got;
	else
		for (int i = 0; i < got; i++)
			zv_close(fds[i]);
	if (r == 0)
		return -ECONNRESET;
	return r;
}

long zv_peer_request(int fd, int service, void *req, size_t n, const int *fds, int nfds, void *ans, size_t an,
		     int *afds, int maxafds, int *nafds)
{
	struct zv_peer_hdr *h = req;
	*h = (struct zv_peer_hdr){ ZV_PEER_HDR_MAGIC, ZV_PEER_VERSION, (uint16_t)service };
	long r = zv_peer_send(fd, req, n, fds, nfds);
	if (r < 0)
		return r;
	return zv_peer_recv(fd, ans, an, afds, maxafds, nafds);
}

/* The knocks not served yet: asker pid and slot, packed. */
#define QUEUE 16
#define CHILDS (1UL << 63) /* it came to a fork child before its set-up */
static volatile uint64_t queue[QUEUE];
/* A SIGSYS came without its siginfo: knocks are looked for (lost_knocks). */
static volatile int knock_lost;

int zv_peer_pending(void)
{
	if (knock_lost)
		return 1;
	for (int i = 0; i < QUEUE; i++)
		if (queue[i])
			return 1;
	return 0;
}

/* Queues knock e (once); a full queue drops it: the asker times out and
 * says so. Whether it is queued. */
static int enqueue(uint64_t e)
{
	for (int i = 0; i < QUEUE; i++) {
		uint64_t none = 0;
		if (queue[i] == e ||
		    __atomic_compare_exchange_n(&queue[i], &none, e, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
			return 1;
	}
	return 0;
}

/* One line of /proc/net/unix: a listener's abstract name ending in
 * "@zvisor-peer-ASKER-SLOT-ME" is a knock for this process, queued. */
static void knock_line(const char *line, const char *end, int me)
{
	static const char at[] = "@" NAME;
	const char *p = line;
	while (p < end && *p != '@')
		p++;
	if ((size_t)(end - p) <= sizeof at - 1 || memcmp(p, at, sizeof at - 1))
		return;
	const char *s = p + sizeof at - 1, *e;
	long asker = zv_parse_dec(s, &e);
	if (e == s || *e != '-')
		return;
	long slot = zv_parse_dec(s = e + 1, &e);
	if (e == s || *e != '-' || slot < 0 || slot >= ZV_PEER_SLOTS)
		return;
	long knocked = zv_parse_dec(s = e + 1, &e);
	if (e == s || e != end || knocked != me || asker <= 0)
		return;
	enqueue((uint64_t)slot << 32 | (uint32_t)asker);
}

/* The host dropped a SIGSYS's siginfo (the user's RLIMIT_SIGPENDING
 * reached: it comes as SI_USER from pid 0), and sent again it would be
 * dropped again: so the knocks are found where their askers listen, in
 * /proc/net/unix, as names that end in this process's pid. */
static void lost_knocks(void)
{
	static char buf[16384] ZV_COLD_BSS; /* under scanning */
	static volatile int scanning;
	if (__atomic_exchange_n(&scanning, 1, __ATOMIC_ACQUIRE))
		return;
	knock_lost = 0;
	long fd = zv_openat(-100, "/proc/net/unix", O_RDONLY | O_CLOEXEC, 0);
	int me = (int)zv_getpid();
	size_t have = 0;
	for (long n; fd >= 0 && (n = zv_read((int)fd, buf + have, sizeof buf - have)) > 0;) {
		have += (size_t)n;
		size_t i = 0;
		for (size_t k = 0; k < have; k++)
			if (buf[k] == '\n') {
				knock_line(buf + i, buf + k, me);
				i = k + 1;
			}
		if (i == 0 && have == sizeof buf)
			i = have; /* a line longer than buf: not a knock's */
		memmove(buf, buf + i, have - i);
		have -= i;
	}
	if (fd >= 0)
		zv_close((int)fd);
	__atomic_store_n(&scanning, 0, __ATOMIC_RELEASE);
}

/* Connects to the asker and runs the service its first message names. */
static void serve(struct zv_thread *t, int asker, int slot)
{
	long fd = sock();
	if (fd < 0)
		return;
	struct sockaddr_un_ a;
	int alen = peer_addr(&a, asker, slot, (int)zv_getpid());
	if (zv_sys3(__NR_connect, fd, &a, alen) < 0 || !peer_is((int)fd, asker)) {
		zv_close((int)fd);
		return;
	}
	set_timeouts((int)fd, 5);
	union { struct zv_peer_hdr h; char b[4096]; } msg;
	int fds[MAX_FDS], nfds = 0;
	long n = zv_peer_recv((int)fd, &msg, sizeof msg, fds, MAX_FDS, &nfds);
	if (n >= (long)sizeof msg.h && msg.h.magic == ZV_PEER_HDR_MAGIC && msg.h.version == ZV_PEER_VERSION)
		for (const struct zv_peer_service_entry *const *sv = zv_peer_services_start; sv < zv_peer_services_end; sv++)
			if ((*sv)->id == msg.h.service) {
				(*sv)->serve(t, (int)fd, &msg, (size_t)n, fds, nfds);
				return;
			}
	for (int i = 0; i < nfds; i++)
		zv_close(fds[i]);
	zv_close((int)fd);
}

void zv_peer_serve_pending(struct zv_thread *t)
{
	if (knock_lost)
		lost_knocks();
	for (int i = 0; i < QUEUE; i++) {
		uint64_t v = __atomic_exchange_n(&queue[i], 0, __ATOMIC_ACQ_REL);
		if (v)
			serve(t, (int)(uint32_t)v, (int)(v >> 32 & 0xff));
	}
}

int zv_peer_sigsys(struct zv_thread *t, const void *siginfo, struct zv_ucontext *uc)
{
	const zv_siginfo *si = siginfo;
	uint64_t v;
	memcpy(&v, si->bytes + 8, 8);
	if (si->si_code == 0 && si->kill.pid == 0) { /* SI_USER from pid 0: a knock whose siginfo was lost */
		knock_lost = 1;
		zv_kwork_request(t, uc);
		return 1;
	}
	if ((v >> 40) != ZV_PEER_MAGIC)
		return 0;
	uint64_t e = ((v >> 32) & 0xff) << 32 | (uint32_t)v;
	/* a fork child before its set-up (sys/proc.c): the knock is its own,
	 * which its fork_child event keeps */
	if (t->forking && zv_getpid() != t->forking)
		e |= CHILDS;
	if (enqueue(e))
		zv_kwork_request(t, uc);
	return 1;
}

/* On the way back to the guest (or at once, in guest code). */
static void peer_kwork(struct zv_thread *t, struct zv_ucontext *uc)
{
	(void)uc;
	if (zv_peer_pending())
		zv_peer_serve_pending(t);
}

/* A fork child has no rendezvous of its parent's, and keeps the knocks
 * that came to it (a tracer attaches to a child right after its fork). */
static void peer_fork_child(struct zv_thread *t)
{
	int own = 0;
	for (int i = 0; i < QUEUE; i++)
		if (queue[i]) {
			own |= (queue[i] & CHILDS) != 0;
			queue[i] = queue[i] & CHILDS ? queue[i] & ~CHILDS : 0;
		}
	if (slots_used)
		slots_used = 0;
	own |= knock_lost;
	if (own) { /* served on the way back to the guest */
		t->kwork = 1;
		t->fast.sig_pending = 1;
		zv_plat->need_catchall(t);
	}
}

static int never(long nr) { (void)nr; return 0; }
static int off(void) { return 0; }
ZV_LAYER(peer, 950) = { .name = "peer", .sees = never, .active = off, .kwork = peer_kwork, .sigsys = zv_peer_sigsys,
					.fork_child = peer_fork_child };
