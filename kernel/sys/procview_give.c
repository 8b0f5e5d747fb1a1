/* A process's own maps, smaps and numa_maps as procview shows them to it,
 * made whole for another process that asks: its tracer, whose read of
 * /proc/PID/maps would otherwise show the host's text, zvisor and its
 * stubs and windows included (ptrace/procmem.c). */
#include "zvisor.h"
#include "sys/procview.h"
#include "lib/string.h"
#include "lib/syscall.h"

static volatile int give_lock;
static struct zv_pv_buf raw, text; /* under give_lock */

long zv_pv_give(const char *name, char *out, size_t cap)
{
	int kind = zv_pv_kind_of_name(name);
	if (kind != ZV_PV_MAPS && kind != ZV_PV_SMAPS && kind != ZV_PV_NUMA)
		return -ENOENT;
	char path[48] = "/proc/self/";
	zv_strlcpy(path + 11, name, sizeof path - 11);
	long fd = zv_sys3(__NR_openat, -100, path, 0x80000 /* O_CLOEXEC */);
	if (fd < 0)
		return fd;
	zv_lock(&give_lock);
	long r = zv_pv_read_all((int)fd, &raw);
	zv_close((int)fd);
	static struct zv_pv_filter f; /* under give_lock */
	zv_pv_filter_begin(&f, kind);
	text.len = 0;
	struct zv_pv_lines it = { raw.p, raw.len, 0 };
	size_t n;
	int nl;
	uint64_t lo;
	for (const char *line; r == 0 && (line = zv_pv_next_line(&it, &n, &nl));)
		r = zv_pv_filter_line(&f, line, n, nl, (size_t)-1, &text, &lo);
	if (r == 0) {
		r = text.len > cap ? -E2BIG : (long)text.len;
		if (r > 0)
			memcpy(out, text.p, text.len);
	}
	zv_unlock(&give_lock);
	return r;
}
