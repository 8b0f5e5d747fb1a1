/* The kernel's own /proc/self files. An open takes the lowest free fd
 * number, for a moment; a guest thread opening a file meanwhile would get
 * the next number, not the one a native run gives it. So a process that
 * has (or had) more than one thread reads its maps and writes its memory
 * through hidden fds opened while it still had one thread; a process of
 * one thread opens the file for each use, as no one can see the number it
 * takes. These files are the memory of the process that opened them: a fork
 * child's copies of the numbers are its parent's, made anew before its own
 * second thread. A vfork child and its parent share this memory and the
 * open files, and so the numbers' meaning. */
#include "zvisor.h"
#include "sys/procself.h"
#include "sys/calls.h"
#include "lib/mutex.h"
#include "lib/syscall.h"
#include <linux/fcntl.h>

enum { MAPS, MEM, NFILES };
static const struct {
	const char *path;
	int flags;
} files[NFILES] = {
	[MAPS] = { "/proc/self/maps", O_RDONLY | O_CLOEXEC },
	[MEM] = { "/proc/self/mem", O_RDWR | O_CLOEXEC },
};
static int kept[NFILES] = { -1, -1 }; /* hidden, once made */
static int kept_pid;                  /* the host pid whose files they are */
/* Held while a kept fd is used: one maps reader at a time (each read goes
 * on where the last ended), and no use while they are dropped. */
static volatile int lock;

static long open_file(int f) { return zv_openat(AT_FDCWD, files[f].path, files[f].flags, 0); }

static int own(int f) { return kept[f] >= 0 && kept_pid == zv_proc.hpid; }

int zv_maps_each(int (*fn)(const struct zv_map *m, void *arg), void *arg)
{
	if (own(MAPS)) {
		zv_mutex_lock(&lock);
		if (own(MAPS)) {
			int r = zv_maps_read(kept[MAPS], fn, arg);
			zv_mutex_unlock(&lock);
			return r;
		}
		zv_mutex_unlock(&lock); /* dropped meanwhile */
	}
	long fd = open_file(MAPS);
	if (fd < 0)
		return (int)fd;
	int r = zv_maps_read((int)fd, fn, arg);
	zv_close((int)fd);
	return r;
}

long zv_procself_mem(void)
{
	if (own(MEM)) {
		zv_mutex_lock(&lock);
		if (own(MEM))
			return kept[MEM]; /* unlocked by zv_procself_mem_done */
		zv_mutex_unlock(&lock);
	}
	return open_file(MEM);
}

void zv_procself_mem_done(long fd)
{
	if (fd >= 0 && fd == kept[MEM])
		zv_mutex_unlock(&lock);
	else if (fd >= 0)
		zv_close((int)fd);
}

/* A fork parent's number keeps its place; a file that cannot be hidden is
 * opened for each use. */
static void make(int f)
{
	long fd = open_file(f);
	if (fd < 0)
		return;
	if (kept[f] >= 0 && zv_sys3(__NR_dup3, fd, kept[f], O_CLOEXEC) == kept[f]) {
		zv_close((int)fd);
		return;
	}
	int h = zv_hide_fd_flags((int)fd, O_CLOEXEC);
	if (h == fd) {
		zv_close((int)fd);
		return;
	}
	kept[f] = h;
	zv_keep_hidden_fd(&kept[f]);
}

void zv_procself_before_sharing(void)
{
	if (own(MAPS) && own(MEM))
		return;
	for (int f = 0; f < NFILES; f++)
		make(f);
	kept_pid = zv_proc.hpid;
}

void zv_procself_fork_child(void)
{
	if (lock) /* another thread of the parent was using one */
		lock = 0;
}

void zv_procself_restored(void)
{
	kept[MAPS] = kept[MEM] = -1;
	lock = 0;
}

int zv_procself_drop(void)
{
	if (kept[MAPS] < 0 && kept[MEM] < 0)
		return 0;
	zv_mutex_lock(&lock);
	for (int f = 0; f < NFILES; f++)
		if (kept[f] >= 0) {
			zv_close(kept[f]);
			kept[f] = -1;
		}
	zv_mutex_unlock(&lock);
	return 1;
}

int zv_procself_is_kept(int fd) { return fd >= 0 && (fd == kept[MAPS] || fd == kept[MEM]); }
