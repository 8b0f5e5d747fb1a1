/* A tracer's /proc/PID/mem, exe, maps, smaps and numa_maps of its tracee.
 * exe: the host's link names zvisor; the tracee's program (gdb reads it to
 * find the symbols of a process it attaches to or that execs) is in its
 * area. maps and the like (gdb's info proc mappings, strace -k): opened on
 * a stopped tracee, a memfd with the text the tracee sees (procview), not
 * the host's with zvisor's regions; of a running one, the host's file.
 * mem (gdb reads and writes memory so, breakpoints included): the fd is the host's, opened as asked, and a
 * read or write of it while the tracee is stopped goes through the
 * tracee, which shows the code zvisor rewrote as it was and writes its
 * breakpoints as over the original code (ptrace/mem.c). The host's file
 * would show zvisor's jumps, and a breakpoint written there would break
 * a window. A tracee that runs is read and written on the host. */
#include "zvisor.h"
#include "ptrace/ptrace.h"
#include "sys/layer.h"
#include "lib/syscall.h"
#include "lib/string.h"

#define MAX_MARKS 16
static struct mark {
	int fd, tid;
	uint64_t dev, ino;
} marks[MAX_MARKS];
static int nmarks;

struct st_ { uint64_t dev, ino; uint64_t rest[16]; };

/* The tid of "/proc/N/<what>" or "/proc/N/task/M/<what>" naming a
 * tracee, or 0. */
static int names_tracee(const char *p, const char *what)
{
	if (zv_strncmp(p, "/proc/", 6))
		return 0;
	const char *e;
	int n = (int)zv_parse_dec(p + 6, &e);
	if (e == p + 6)
		return 0;
	if (!zv_strncmp(e, "/task/", 6)) {
		const char *f;
		int m = (int)zv_parse_dec(e + 6, &f);
		if (f == e + 6)
			return 0;
		n = m;
		e = f;
	}
	if (*e++ != '/' || zv_strcmp(e, what))
		return 0;
	struct zv_pt_tracee_ref *r = zv_pt_find(n);
	if (!r) { /* the process: its leader, or any thread of it traced */
		for (int i = 0; i < zv_pt_tracer.n && !r; i++)
			if (zv_pt_tracer.tr[i].pid == n)
				r = &zv_pt_tracer.tr[i];
	}
	return r ? r->tid : 0;
}

static struct mark *marked(int fd)
{
	for (int i = 0; i < nmarks; i++)
		if (marks[i].fd == fd) {
			struct st_ st;
			if (zv_sys2(__NR_fstat, fd, &st) < 0 || st.dev != marks[i].dev || st.ino != marks[i].ino) {
				marks[i] = marks[--nmarks]; /* stale: closed and reused */
				return NULL;
			}
			return &marks[i];
		}
	return NULL;
}

int zv_pt_procmem_sees(long nr)
{
	return nr == __NR_open || nr == __NR_openat || nr == __NR_read || nr == __NR_pread64 || nr == __NR_write ||
	       nr == __NR_pwrite64 || nr == __NR_close || nr == __NR_readlink || nr == __NR_readlinkat;
}

/* A guest's string, up to n - 1 bytes of it; -1 if unreadable. */
static int guest_path(char *p, size_t n, const char *path)
{
	if (!path || zv_guest_copy(p, path, 1, (uint64_t)path))
		return -1;
	size_t i = 0;
	for (; i < n - 1 && zv_guest_copy(p + i, path + i, 1, (uint64_t)path + i) == 0 && p[i]; i++)
		;
	p[i] = 0;
	return 0;
}

/* readlink of a tracee's /proc/N/exe: its program, as readlink gives it. */
static int readlink_exe(struct zv_call *c, long *ret)
{
	long *a = c->a;
	int at = c->nr == __NR_readlinkat;
	char p[64];
	if (guest_path(p, sizeof p, (const char *)a[at]) < 0 || p[0] != '/')
		return 0;
	struct zv_pt_tracee_ref *r = zv_pt_find(names_tracee(p, "exe"));
	if (!r || !r->area || !r->area->exe[0])
		return 0;
	long size = a[at + 2];
	if (size <= 0) {
		*ret = -EINVAL;
		return 1;
	}
	size_t n = zv_strlen(r->area->exe);
	if (n > (size_t)size)
		n = (size_t)size;
	*ret = zv_guest_copy((void *)a[at + 1], r->area->exe, n, (uint64_t)a[at + 1]) ? -EFAULT : (long)n;
	return 1;
}

/* Memory of tracee tid, n bytes at off, through the tracee; -1: not
 * stopped (the host's file serves it). */
static long through(int tid, int write, uint64_t off, void *buf, size_t n)
{
	struct zv_pt_tracee_ref *r = zv_pt_find(tid);
	if (!r || !r->s || __atomic_load_n(&r->s->state, __ATOMIC_ACQUIRE) != ZV_PT_STOPPED)
		return -1;
	size_t done = 0;
	while (done < n) {
		size_t k = n - done < ZV_PT_BUF ? n - done : ZV_PT_BUF;
		if (write && zv_guest_copy(r->s->buf, (char *)buf + done, k, (uint64_t)buf + done))
			return done ? (long)done : -EFAULT;
		long got = zv_pt_cmd(r, write ? ZV_PT_CMD_WRITE : ZV_PT_CMD_READ, off + done, k);
		if (got <= 0)
			return done ? (long)done : got ? got : -EIO;
		if (!write && zv_guest_copy((char *)buf + done, r->s->buf, (size_t)got, (uint64_t)buf + done))
			return done ? (long)done : -EFAULT;
		done += (size_t)got;
		if ((size_t)got < k)
			break;
	}
	return (long)done;
}

/* An open of the maps-like file name of tracee tid: a memfd of the
 * tracee's view of it, or -1 (the host's file serves). */
static long open_view(int tid, const char *name, long flags)
{
	struct zv_pt_tracee_ref *r = zv_pt_find(tid);
	if (!r || !r->s || __atomic_load_n(&r->s->state, __ATOMIC_ACQUIRE) != ZV_PT_STOPPED || (flags & 3) != 0 /* O_RDONLY */)
		return -1;
	zv_strlcpy((char *)r->s->buf, name, 16);
	long n = zv_pt_cmd(r, ZV_PT_CMD_PROCFILE, 0, 0);
	if (n < 0)
		return -1;
	long fd = zv_sys2(__NR_memfd_create, name, flags & 0x80000 ? 1 /* MFD_CLOEXEC */ : 0);
	if (fd < 0)
		return fd;
	if (zv_sys3(__NR_write, fd, r->s->buf, n) != n) {
		zv_close((int)fd);
		return -1;
	}
	zv_sys3(__NR_lseek, fd, 0, 0);
	return fd;
}

/* 1 if the call was a tracee's mem and is answered in *ret. */
int zv_pt_procmem_call(struct zv_call *c, long *ret)
{
	long nr = c->nr, *a = c->a;
	if (nr == __NR_readlink || nr == __NR_readlinkat)
		return readlink_exe(c, ret);
	if (nr == __NR_open || nr == __NR_openat) {
		char p[64];
		if (guest_path(p, sizeof p, (const char *)(nr == __NR_open ? a[0] : a[1])) < 0)
			return 0;
		if (p[0] != '/')
			return 0;
		static const char *const views[] = { "maps", "smaps", "numa_maps" };
		for (int i = 0; i < 3; i++) {
			int tid = names_tracee(p, views[i]);
			long fd = tid ? open_view(tid, views[i], nr == __NR_open ? a[1] : a[2]) : -1;
			if (fd != -1) {
				*ret = fd;
				return 1;
			}
		}
		int tid = names_tracee(p, "mem");
		if (!tid)
			return 0;
		long fd = zv_next(c);
		struct st_ st;
		if (fd >= 0 && nmarks < MAX_MARKS && zv_sys2(__NR_fstat, fd, &st) == 0)
			marks[nmarks++] = (struct mark){ (int)fd, tid, st.dev, st.ino };
		*ret = fd;
		return 1;
	}
	if (!nmarks)
		return 0;
	struct mark *m = marked((int)a[0]);
	if (!m)
		return 0;
	if (nr == __NR_close) {
		*m = marks[--nmarks];
		return 0;
	}
	int write = nr == __NR_write || nr == __NR_pwrite64;
	int positioned = nr == __NR_pread64 || nr == __NR_pwrite64;
	uint64_t off = positioned ? (uint64_t)a[3] : (uint64_t)zv_sys3(__NR_lseek, a[0], 0, 1 /* SEEK_CUR */);
	long r = through(m->tid, write, off, (void *)a[1], (size_t)a[2]);
	if (r == -1)
		return 0;
	if (r > 0 && !positioned)
		zv_sys3(__NR_lseek, a[0], (long)(off + (uint64_t)r), 0 /* SEEK_SET */);
	*ret = r;
	return 1;
}
