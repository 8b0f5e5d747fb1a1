/* Another hosted process's /proc/PID/maps, smaps, numa_maps, smaps_rollup
 * and exe: the host's show that process's zvisor (its image, windows,
 * stubs, the shared copies of rewritten code under their cache names;
 * zvisor as the exe), which only that process can set right. The reader
 * asks it over the peer channel; it makes its own view whole
 * (procview_give.c) and answers with a memfd (procview.c keeps the text
 * as the guest's fd's, made again by a read from offset 0), or names its
 * program (sys/fs.c follows /proc/PID/exe there; read from its memory
 * first, read_exe). A process that cannot answer (stopped, of another
 * user, not hosted) leaves the host's. */
#include "zvisor.h"
#include "sys/procview.h"
#include "peer/peer.h"
#include "lib/procfs.h"
#include "lib/string.h"
#include "lib/syscall.h"

struct procfile_req {
	struct zv_peer_hdr h;
	char name[16]; /* maps, smaps, numa_maps, smaps_rollup; exe */
};
struct procfile_ans {
	long r;                 /* 0 (the text in the memfd sent), the exe's length, or -errno */
	char exe[ZV_PATH_MAX]; /* exe: the program, as this process's /proc/self/exe names it */
};

static const char *name_of(int kind)
{
	return kind == ZV_PV_MAPS ? "maps" : kind == ZV_PV_SMAPS ? "smaps" : kind == ZV_PV_NUMA ? "numa_maps"
	       : kind == ZV_PV_ROLLUP ? "smaps_rollup" : NULL;
}

static void serve(struct zv_thread *t, int fd, const void *msg, size_t n, int *fds, int nfds)
{
	(void)t;
	for (int i = 0; i < nfds; i++)
		zv_close(fds[i]);
	struct procfile_req q = { 0 };
	memcpy(&q, msg, n < sizeof q ? n : sizeof q);
	q.name[sizeof q.name - 1] = 0;
	struct procfile_ans a;
	size_t len = sizeof a.r;
	int out = -1;
	if (n != sizeof q) {
		a.r = -EINVAL;
	} else if (!zv_strcmp(q.name, "exe")) {
		a.r = (long)zv_strlcpy(a.exe, zv_proc.exe_path, sizeof a.exe);
		len += (size_t)a.r;
	} else if ((a.r = zv_pv_give_fd(q.name)) >= 0) {
		out = (int)a.r;
		a.r = 0;
	}
	zv_peer_send(fd, &a, len, &out, out >= 0);
	if (out >= 0)
		zv_close(out);
	zv_close(fd);
}

ZV_PEER_SERVICE(procview_procfile, ZV_PEER_PROCFILE, serve);

/* A session with hosted process hpid for name's answer in *a (and *text,
 * a memfd, for a maps-like file): the answer's length, or -errno. */
static long ask(int hpid, const char *name, struct procfile_ans *a, int *text)
{
	char st[512];
	const char *f = zv_procfs_stat_fields(hpid, st, sizeof st);
	/* a stopped process answers only once continued: not waited for */
	if (!f || *f == 'T' || *f == 't' || *f == 'Z' || *f == 'X' || zv_peer_hosted(hpid) != 1)
		return -ESRCH;
	long fd = zv_peer_open(hpid, 2000);
	if (fd < 0)
		return fd;
	struct procfile_req q = { 0 };
	zv_strlcpy(q.name, name, sizeof q.name);
	int got = 0;
	a->r = -EIO;
	long r = zv_peer_request((int)fd, ZV_PEER_PROCFILE, &q, sizeof q, NULL, 0, a, sizeof *a, text, text != NULL,
				 &got);
	zv_close((int)fd);
	if (text && !got)
		*text = -1;
	if (r < (long)sizeof a->r || a->r < 0) {
		if (text && got)
			zv_close(*text);
		return r < 0 ? r : a->r < 0 ? a->r : -EIO;
	}
	return r;
}

int zv_pv_from_peer(int hpid, int kind, struct zv_pv_buf *out)
{
	const char *name = name_of(kind);
	struct procfile_ans a;
	int text = -1;
	long r = name ? ask(hpid, name, &a, &text) : -EINVAL;
	if (r < 0)
		return (int)r;
	if (text < 0)
		return -EIO;
	r = zv_pv_read_all(text, out);
	zv_close(text);
	return (int)r;
}

/* The program's path read where it lies in that process: zvisor's image
 * is linked at a fixed address, the same in every hosted process of this
 * build, and the pid found beside it says it is one (as sys/proc.c's
 * execd_child reads a child's). No rendezvous, and a stopped process
 * answers too. The length, or -1 (not readable so: another user's, Yama). */
static long read_exe(int hpid, char *out, size_t cap)
{
	int pid = 0;
	size_t n = cap < sizeof zv_proc.exe_path ? cap : sizeof zv_proc.exe_path;
	struct { void *base; size_t len; } local[2] = { { &pid, sizeof pid }, { out, n } },
					   remote[2] = { { &zv_proc.hpid, sizeof pid }, { zv_proc.exe_path, n } };
	if (zv_peer_hosted(hpid) != 1 ||
	    zv_sys6(__NR_process_vm_readv, hpid, (long)local, 2, (long)remote, 2, 0) != (long)(sizeof pid + n) ||
	    pid != hpid)
		return -1;
	size_t k = 0;
	while (k < n && out[k])
		k++;
	return k > 0 && k < n ? (long)k : -1;
}

long zv_pv_peer_exe(int hpid, char *out, size_t cap)
{
	long k = read_exe(hpid, out, cap);
	if (k > 0)
		return k;
	struct procfile_ans a;
	long r = ask(hpid, "exe", &a, NULL);
	if (r >= 0) {
		r -= (long)sizeof a.r;
		if (r <= 0 || (size_t)r >= cap || r != a.r)
			r = -EIO;
		else
			memcpy(out, a.exe, (size_t)r), out[r] = 0;
	}
	return r;
}
