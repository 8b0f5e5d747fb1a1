/* Anonymous memory the kernel maps from a file (sys/filemem.h). */
#include "zvisor.h"
#include "sys/filemem.h"
#include "lib/string.h"
#include "lib/kmem.h"
#include "lib/syscall.h"

struct zv_filemem zv_filemem ZV_COLD_BSS;
static uint64_t *cuts;
static size_t ncuts, cutcap;

void zv_filemem_set(uint64_t st_dev, uint64_t ino, const char *path)
{
	struct zv_filemem *f = &zv_filemem;
	f->ino = ino;
	f->st_dev = st_dev;
	f->major = ((st_dev >> 8) & 0xfff) | ((st_dev >> 32) & ~0xfffUL);
	f->minor = (st_dev & 0xff) | ((st_dev >> 12) & ~0xffUL);
	zv_strlcpy(f->path, path, sizeof f->path);
	ncuts = cutcap = 0; /* the kernel's data is an image's: its cuts were another restore's */
	cuts = NULL;
}

int zv_filemem_is(uint64_t major, uint64_t minor, uint64_t ino)
{
	const struct zv_filemem *f = &zv_filemem;
	return f->ino && ino == f->ino && major == f->major && minor == f->minor;
}

int zv_filemem_is_cut(uint64_t a)
{
	for (size_t i = 0; i < ncuts; i++)
		if (cuts[i] == a)
			return 1;
	return 0;
}

void zv_filemem_cut(uint64_t a)
{
	if (zv_filemem_is_cut(a))
		return;
	if (ncuts == cutcap) {
		size_t cap = cutcap ? cutcap * 2 : 512;
		uint64_t *p = zv_kmap(cap * sizeof *p, 4096, -1);
		if (zv_is_err((long)p))
			return;
		if (ncuts)
			memcpy(p, cuts, ncuts * sizeof *p);
		if (cutcap)
			zv_kunmap(cuts, cutcap * sizeof *p);
		cuts = p;
		cutcap = cap;
	}
	cuts[ncuts++] = a;
}

void zv_filemem_moved(uint64_t lo, uint64_t hi, uint64_t to)
{
	for (size_t i = 0, n = ncuts; i < n; i++)
		if (cuts[i] > lo && cuts[i] < hi)
			zv_filemem_cut(to + (cuts[i] - lo));
}
