/* A stopped tracee's memory, read and written by the tracee itself for its
 * tracer (PEEK/POKE, /proc/PID/mem): as the host's access_process_vm does,
 * through /proc/self/mem (which reads PROT_NONE pages and writes read-only
 * code), with the code zvisor rewrote shown as it was and put back as it
 * was before a tracer writes over it (a breakpoint in a window), and with
 * zvisor's own memory absent. */
#include "zvisor.h"
#include "ptrace/ptrace.h"
#include "intercept/platform.h"
#include "intercept/sudoff.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/kmem.h"
#include <linux/fcntl.h>

/* Whether [addr, addr + n) meets memory the guest must not see. */
static int hidden(uint64_t addr, size_t n)
{
	if (addr + n < addr || addr + n > 0x800000000000UL)
		return 1;
	if (addr < ZV_KWIN_END && addr + n > ZV_KWIN_START)
		return 1;
	uint64_t r[64][2];
	int k = zv_plat->reserved ? zv_plat->reserved(r, 64) : 0;
	for (int i = 0; i < k; i++)
		if (addr < r[i][1] && addr + n > r[i][0])
			return 1;
	return 0;
}

static long self_mem(int flags)
{
	return zv_openat(-100, "/proc/thread-self/mem", flags | O_CLOEXEC, 0);
}

long zv_pt_mem_read(uint64_t addr, uint8_t *buf, size_t n)
{
	if (!n)
		return 0;
	if (hidden(addr, n))
		return -EIO;
	struct { void *base; size_t len; } local = { buf, n }, remote = { (void *)addr, n };
	long r = zv_sys6(__NR_process_vm_readv, zv_getpid(), (long)&local, 1, (long)&remote, 1, 0);
	if (r != (long)n) {
		/* unreadable pages (PROT_NONE), or a part unmapped */
		long fd = self_mem(O_RDONLY);
		if (fd < 0)
			return r > 0 ? r : -EIO;
		r = zv_sys4(__NR_pread64, fd, buf, n, addr);
		zv_close((int)fd);
		if (r <= 0)
			return -EIO;
	}
	if (zv_plat->show_original)
		zv_plat->show_original(addr, buf, (size_t)r);
	return r;
}

long zv_pt_mem_write(uint64_t addr, const uint8_t *buf, size_t n)
{
	if (!n)
		return 0;
	if (hidden(addr, n))
		return -EIO;
	long fd = self_mem(O_RDWR);
	if (fd < 0)
		return -EIO;
	/* Bytes the scan never saw may run now, the original syscalls put back
	 * first: Syscall User Dispatch is armed in every thread before either
	 * (intercept/sudoff.c). */
	zv_sudoff_taint(zv_current(), ZV_TAINT_POKE);
	if (zv_plat->restore_original)
		zv_plat->restore_original(addr, n, (int)fd);
	long r = zv_sys4(__NR_pwrite64, fd, buf, n, addr);
	zv_close((int)fd);
	return r <= 0 ? -EIO : r;
}
