/* Anonymous memory that the kernel maps from a file: a restore maps the
 * large anonymous mappings of an image from its pages.bin (cr/lazy.c), and
 * the guest must still see anonymous memory (sys/procview_anon.c). This is
 * what both know of it: the file, and the cuts where a part of such a
 * mapping was made anonymous, across which it is natively one mapping. */
#ifndef ZV_SYS_FILEMEM_H
#define ZV_SYS_FILEMEM_H
#include <stdint.h>

struct zv_filemem {
	uint64_t major, minor, ino; /* the file as /proc/self/maps shows it; ino 0: none */
	uint64_t st_dev;
	char path[4096];            /* its absolute path when mapped */
};
extern struct zv_filemem zv_filemem;

/* From now on the mappings of the file (st_dev, ino) at path are such
 * memory (ino 0: none); forgets the cuts. */
void zv_filemem_set(uint64_t st_dev, uint64_t ino, const char *path);
/* Whether a maps line's file (device major:minor, inode) is that file. */
int zv_filemem_is(uint64_t major, uint64_t minor, uint64_t ino);
void zv_filemem_cut(uint64_t a);
int zv_filemem_is_cut(uint64_t a);
/* mremap moved [lo, hi) to to: its cuts go along. */
void zv_filemem_moved(uint64_t lo, uint64_t hi, uint64_t to);
#endif
