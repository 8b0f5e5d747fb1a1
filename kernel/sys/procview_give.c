/* A process's own maps, smaps, numa_maps and smaps_rollup as procview shows them to it,
 * made whole for another process that asks: its tracer (ptrace/procmem.c)
 * or any hosted process that reads its /proc/PID/maps (procview_peer.c),
 * which would otherwise show the host's text, zvisor and its stubs and
 * windows included. */
#include "zvisor.h"
#include "sys/procview.h"
#include "lib/string.h"
#include "lib/syscall.h"

static volatile int give_lock;
static struct zv_pv_buf raw, text; /* under give_lock */

/* name's text into text: 0 or -errno. Under give_lock. */
static long render(const char *name)
{
	int kind = zv_pv_kind_of_name(name);
	if (kind != ZV_PV_MAPS && kind != ZV_PV_SMAPS && kind != ZV_PV_NUMA && kind != ZV_PV_ROLLUP)
		return -ENOENT;
	char path[48] = "/proc/self/";
	zv_strlcpy(path + 11, name, sizeof path - 11);
	long fd = zv_sys3(__NR_openat, -100, path, 0x80000 /* O_CLOEXEC */);
	if (fd < 0)
		return fd;
	long r = zv_pv_read_all((int)fd, &raw);
	zv_close((int)fd);
	text.len = 0;
	if (kind == ZV_PV_ROLLUP)
		return r < 0 ? r : zv_pv_filter_rollup(raw.p, raw.len, &text);
	static struct zv_pv_filter f; /* under give_lock */
	zv_pv_filter_begin(&f, kind);
	struct zv_pv_lines it = { raw.p, raw.len, 0 };
	size_t n;
	int nl;
	uint64_t lo;
	for (const char *line; r == 0 && (line = zv_pv_next_line(&it, &n, &nl));)
		r = zv_pv_filter_line(&f, line, n, nl, (size_t)-1, &text, &lo);
	return r;
}

long zv_pv_give(const char *name, char *out, size_t cap)
{
	zv_lock(&give_lock);
	long r = render(name);
	if (r == 0) {
		r = text.len > cap ? -E2BIG : (long)text.len;
		if (r > 0)
			memcpy(out, text.p, text.len);
	}
	zv_unlock(&give_lock);
	return r;
}

long zv_pv_give_fd(const char *name)
{
	long fd = zv_sys2(__NR_memfd_create, "zvisor-procfile", 1 /* MFD_CLOEXEC */);
	if (fd < 0)
		return fd;
	zv_lock(&give_lock);
	long r = render(name);
	for (size_t done = 0; r == 0 && done < text.len;) {
		long k = zv_sys3(__NR_write, fd, text.p + done, text.len - done);
		if (k <= 0)
			r = k < 0 ? k : -EIO;
		else
			done += (size_t)k;
	}
	zv_unlock(&give_lock);
	if (r < 0) {
		zv_close((int)fd);
		return r;
	}
	return fd;
}
