/* Loading a program as the process's image: what zvisor's first start, an
 * image the host exec'd (main.c) and an exec made in this process
 * (inexec.c) share: the ELF and its interpreter mapped with the platform's
 * rewriting, /proc/self/exe and comm, the break. */
#include "zvisor.h"
#include "image.h"
#include "sys/layer.h"
#include "sys/setid.h"
#include "intercept/platform.h"
#include "intercept/stubs.h"
#include "sys/exec.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/fmt.h"
#include "lib/fdlist.h"
#include <linux/mman.h>

/* --rewrite=load and the stubs: the loader's executable mappings, rewritten
 * as mapped (intercept/) by the thread that loads them. */
static struct zv_thread *loading_thread;

static long map_code(int fd, uint64_t addr, uint64_t len, uint64_t off, int prot, const struct zv_file_id *id)
{
	int flags = MAP_PRIVATE | MAP_FIXED;
	long r;
	zv_stubs_loader_ident = (const uint64_t *)id; /* the site cache's key without another fstat */
	if (zv_plat->map_code) {
		r = zv_plat->map_code(loading_thread, fd, addr, len, off, prot, flags);
	} else {
		r = (long)zv_mmap((void *)addr, len, prot, flags, fd, (long)off);
		if (!zv_is_err(r))
			zv_plat->code_mapped(loading_thread, fd, addr, len, off, prot, flags);
	}
	zv_stubs_loader_ident = NULL;
	return r;
}

/* The process's name (/proc/self/comm, ps), as the host's execve sets it:
 * the last component of the path the guest asked for (the host set it to
 * "zvisor", or "exe" after an execve of /proc/self/exe). */
static void set_comm(const char *execfn)
{
	const char *base = execfn;
	for (const char *p = execfn; *p; p++)
		if (*p == '/' && p[1])
			base = p + 1;
	zv_sys2(__NR_prctl, 15 /* PR_SET_NAME */, base);
}

char **zv_image_argv(const struct zv_resolved *r, char **argv, char **out)
{
	if (!r->nprefix)
		return argv;
	long k = 0;
	for (int i = 0; i < r->nprefix; i++)
		out[k++] = r->prefix[i];
	for (long i = 1; argv[0] && argv[i]; i++)
		out[k++] = argv[i];
	out[k] = NULL;
	return out;
}

void zv_image_load(struct zv_thread *t, const char *path, const char *elf, const char *execfn,
		   struct zv_image *img)
{
	char why[160] = "";
	/* the load's files and cache files closed together at its end (an
	 * exec made in this process brings the list its resets began) */
	struct zv_fdlist mine = { 0 }, *fds = zv_load_fds ? zv_load_fds : &mine;
	zv_load_fds = fds;
	if (zv_plat->code_mapped) {
		loading_thread = t;
		zv_exec_map_code = map_code;
	}
	long e = zv_load_elf(elf, img, why, sizeof why);
	zv_exec_map_code = NULL;
	if (zv_proc.carry_fd >= 0) { /* the file is mapped: the guest never sees the copy */
		zv_fdlist_close(fds, zv_proc.carry_fd, zv_proc.carry_fd);
		zv_proc.carry_fd = -1;
	}
	zv_fdlist_flush(fds);
	zv_load_fds = NULL;
	if (e < 0)
		zv_die(e == -ENOENT ? 127 : 126, "%s: %s", path, why[0] ? why : zv_strerror((int)-e));
	zv_vdso_cover(t);
	zv_strlcpy(zv_proc.exe_path, img->exe_path, sizeof zv_proc.exe_path); /* the string: each page copied is a fault */
	zv_setid_image(t, elf);
	zv_event_image(t, elf); /* before the auxv: it may say who the program runs as */
	set_comm(execfn);
	zv_brk_init(img->brk_start);
}
