/* The page the processes of one view share (a memfd, mapped shared, made by
 * the first image, inherited by fork and carried across exec as a hidden
 * fd): the generation of the view's namespace, which a process bumps when
 * it removes or renames a directory or symlink others may have kept
 * (dcache.c), and each process's program, for another's /proc/PID/exe. */
#include "fsview/fsview.h"
#include "fsview/shared.h"
#include "zvisor.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/kmem.h"
#include <linux/memfd.h>

#define EXES 64
#define EXE_LEN 248

struct fsv_shared {
	volatile uint64_t epoch;
	volatile uint64_t links[8]; /* a filter of the names of symlinks some process keeps */
	volatile int lock;
	int next;
	struct {
		int pid;
		char exe[EXE_LEN];
	} exe[EXES];
};

int fsv_shared_fd = -1;
static struct fsv_shared *sh;

static void map(void)
{
	void *p = zv_kmap(sizeof *sh, 4096, fsv_shared_fd);
	sh = zv_is_err((long)p) ? NULL : p;
}

void fsv_shared_make(void)
{
	long fd = zv_sys2(__NR_memfd_create, "zvisor-view", MFD_CLOEXEC);
	if (fd < 0 || zv_sys2(__NR_ftruncate, fd, sizeof *sh) < 0) {
		if (fd >= 0)
			zv_close((int)fd);
		return;
	}
	fsv_shared_fd = zv_hide_fd((int)fd); /* not close-on-exec any more: carried */
	zv_keep_hidden_fd(&fsv_shared_fd);
	map();
}

void fsv_shared_attach(int fd)
{
	fsv_shared_fd = fd;
	if (fd < 0)
		return;
	zv_keep_hidden_fd(&fsv_shared_fd);
	map();
}

uint64_t fsv_epoch(void) { return sh ? sh->epoch : 0; }

void fsv_epoch_bump(void)
{
	if (sh)
		__atomic_fetch_add(&sh->epoch, 1, __ATOMIC_RELEASE);
}

static unsigned bit_of(const char *c, size_t n)
{
	unsigned h = 2166136261u;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)c[i]) * 16777619u;
	return h % 512;
}

void fsv_link_name_seen(const char *c, size_t n)
{
	unsigned b = bit_of(c, n);
	if (sh && !(sh->links[b / 64] & (1ULL << (b % 64))))
		__atomic_fetch_or(&sh->links[b / 64], 1ULL << (b % 64), __ATOMIC_RELAXED);
}

int fsv_link_name_known(const char *c, size_t n)
{
	unsigned b = bit_of(c, n);
	return !sh || (sh->links[b / 64] & (1ULL << (b % 64))) != 0;
}

void zv_fsv_image_started(void)
{
	fsv_in_setup = 0; /* from here on, calls come from the program's threads */
	fsv_exe_publish(zv_proc.hpid);
}

/* pid's program for the others' /proc/PID/exe: this process's, at each
 * image's start, and its fork child's (its parent's until it execs). */
void fsv_exe_publish(int pid)
{
	if (!fsv.on || !sh || zv_strlen(zv_proc.exe_path) >= EXE_LEN)
		return;
	zv_lock(&sh->lock);
	int slot = -1, free = -1, gone = -1;
	for (int i = 0; i < EXES && slot < 0; i++) {
		int p = sh->exe[i].pid;
		if (p == pid)
			slot = i;
		else if (!p && free < 0)
			free = i;
	}
	/* else a free slot, one of a process that ended without saying so
	 * (killed), or the next in turn */
	for (int i = 0; slot < 0 && free < 0 && gone < 0 && i < EXES; i++)
		if (zv_sys2(__NR_kill, sh->exe[i].pid, 0) == -ESRCH)
			gone = i;
	if (slot < 0)
		slot = free >= 0 ? free : gone >= 0 ? gone : sh->next++ % EXES;
	sh->exe[slot].pid = pid;
	zv_strlcpy(sh->exe[slot].exe, zv_proc.exe_path, EXE_LEN);
	zv_unlock(&sh->lock);
}

/* pid ended: its slot is free again. */
void fsv_exe_gone(int pid)
{
	if (!sh)
		return;
	zv_lock(&sh->lock);
	for (int i = 0; i < EXES; i++)
		if (sh->exe[i].pid == pid)
			sh->exe[i].pid = 0;
	zv_unlock(&sh->lock);
}

int fsv_exe_of(int pid, char *out, size_t n)
{
	if (!sh)
		return 0;
	int found = 0;
	zv_lock(&sh->lock);
	for (int i = 0; i < EXES && !found; i++)
		if (sh->exe[i].pid == pid) {
			zv_strlcpy(out, sh->exe[i].exe, n);
			found = 1;
		}
	zv_unlock(&sh->lock);
	return found;
}
