/* Memory a restore maps from its image (cr/lazy.c): a private anonymous
 * mapping whose pages are placed in pages.bin as in memory is mapped
 * MAP_PRIVATE from the file, so the restore reads nothing and a page costs
 * the fault that first touches it. Such a mapping must still behave as
 * anonymous memory: procview shows it so, madvise(MADV_DONTNEED) and the
 * calls anonymous memory alone accepts make it anonymous first, mremap's
 * growth reads zeros, and a later checkpoint saves it as anonymous memory
 * with the pages it has not touched yet. */
#ifndef ZV_CR_LAZY_H
#define ZV_CR_LAZY_H
#include <stdint.h>

/* At restore, once the kernel's data is the image's: from now on the
 * mappings of the file (st_dev, ino) at path are such memory (the file is
 * sys/filemem.h's); ranges[n] where they are (copied). */
void zv_cr_lazy_adopt(uint64_t st_dev, uint64_t ino, const char *path, const uint64_t (*ranges)[2], unsigned n);

/* Which parts of the image hold data (SEEK_DATA), for a checkpoint of such
 * memory: a page not yet touched is the image's if it is data there. When
 * the image cannot be opened (it was removed), every page counts. */
struct zv_cr_holes {
	int fd;
	uint64_t lo, hi;          /* a known range ... */
	int data;                 /* ... of data (1) or a hole (0) */
};
void zv_cr_holes_open(struct zv_cr_holes *h);
int zv_cr_holes_data(struct zv_cr_holes *h, uint64_t off);
void zv_cr_holes_close(struct zv_cr_holes *h);
#endif
