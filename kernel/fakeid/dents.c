/* getdents and getdents64: a device node, FIFO or socket the program made
 * is a regular file on the host, and its entry's d_type says so; it gets
 * the type of its record. Such records are in the database (store.c puts
 * them there beside the attribute), so the entries are looked up in
 * memory, with one fstat of the directory per call while the database
 * holds any record. */
#include "fakeid/fakeid.h"
#include "zvisor.h"
#include "sys/layer.h"
#include <linux/fcntl.h>

#define DT_FIFO 1
#define DT_CHR 2
#define DT_BLK 6
#define DT_REG 8
#define DT_SOCK 12

static unsigned char dtype(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFCHR: return DT_CHR;
	case S_IFBLK: return DT_BLK;
	case S_IFIFO: return DT_FIFO;
	case S_IFSOCK: return DT_SOCK;
	default: return DT_REG;
	}
}

long zv_fid_dents_call(struct zv_call *c)
{
	long r = zv_next(c);
	struct zv_fid_stat dir;
	if (r <= 0 || zv_fid_db_empty() || zv_fid_fstatat((int)c->a[0], "", AT_EMPTY_PATH, &dir) < 0)
		return r;
	char *buf = (char *)c->a[1];
	int v64 = c->nr == __NR_getdents64;
	for (long off = 0; off < r;) {
		unsigned short reclen = *(unsigned short *)(buf + off + 16);
		unsigned char *type = (unsigned char *)(v64 ? buf + off + 18 : buf + off + reclen - 1);
		struct zv_fid_rec rec;
		if (*type == DT_REG && zv_fid_db_get(dir.dev, *(uint64_t *)(buf + off), &rec))
			*type = dtype(rec.mode);
		off += reclen;
	}
	return r;
}
