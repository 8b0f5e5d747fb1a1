/* getdents64, one name at a time (see dirents.h). */
#include "lib/dirents.h"
#include "lib/syscall.h"
#include <stdint.h>

long zv_dirents_each(int dfd, long (*fn)(const char *name, void *arg), void *arg)
{
	char buf[4096];
	long n, r = 0;
	while (!r && (n = zv_sys3(__NR_getdents64, dfd, buf, sizeof buf)) > 0) {
		for (long off = 0; off < n && !r;) {
			struct { uint64_t ino; int64_t off; uint16_t reclen; uint8_t type; char name[]; } *d = (void *)(buf + off);
			off += d->reclen;
			r = fn(d->name, arg);
		}
	}
	return r ? r : (n < 0 ? n : 0);
}
