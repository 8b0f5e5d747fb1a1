/* Another hosted process's /proc/PID/maps, smaps, numa_maps, smaps_rollup: the host's
 * text shows that process's zvisor (its image, windows, stubs, the shared
 * copies of rewritten code under their cache names), which only that
 * process can leave out. The reader asks it over the peer channel; it
 * makes its own view whole (procview_give.c) and answers with a memfd
 * (procview.c keeps the text as the guest's fd's, made again by a read
 * from offset 0). A process that cannot answer (stopped, of another user,
 * not hosted) leaves the host's text. */
#include "zvisor.h"
#include "sys/procview.h"
#include "peer/peer.h"
#include "lib/procfs.h"
#include "lib/string.h"
#include "lib/syscall.h"

struct procfile_req {
	struct zv_peer_hdr h;
	char name[16]; /* maps, smaps, numa_maps, smaps_rollup */
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
	long r = n == sizeof q ? zv_pv_give_fd(q.name) : -EINVAL;
	int out = (int)r;
	if (r >= 0)
		r = 0;
	zv_peer_send(fd, &r, sizeof r, &out, r == 0);
	if (r == 0)
		zv_close(out);
	zv_close(fd);
}

ZV_PEER_SERVICE(procview_procfile, ZV_PEER_PROCFILE, serve);

int zv_pv_from_peer(int hpid, int kind, struct zv_pv_buf *out)
{
	const char *name = name_of(kind);
	char st[512];
	const char *f = zv_procfs_stat_fields(hpid, st, sizeof st);
	/* a stopped process answers only once continued: not waited for */
	if (!name || !f || *f == 'T' || *f == 't' || *f == 'Z' || *f == 'X' || zv_peer_hosted(hpid) != 1)
		return -ESRCH;
	long fd = zv_peer_open(hpid, 0, 2000);
	if (fd < 0)
		return (int)fd;
	struct procfile_req q = { 0 };
	zv_strlcpy(q.name, name, sizeof q.name);
	long err = -EIO;
	int text = -1, got = 0;
	long r = zv_peer_request((int)fd, ZV_PEER_PROCFILE, &q, sizeof q, NULL, 0, &err, sizeof err, &text, 1, &got);
	zv_close((int)fd);
	if (r != (long)sizeof err || err < 0 || !got) {
		if (got)
			zv_close(text);
		return r < 0 ? (int)r : err < 0 ? (int)err : -EIO;
	}
	r = zv_pv_read_all(text, out);
	zv_close(text);
	return (int)r;
}
