/* Whether compressing an image's pages pays off (`zvisor checkpoint
 * --compress=auto`, the default): judged in-process from a sample, so that
 * incompressible memory costs a few hundred microseconds and no zstd run.
 * The sample: 32 pages spread over the file (the first ones of a smaller
 * one), or only the first 8 when under a tenth of those repeats (random
 * data: about 0.1 ms). The estimate: the share of its bytes that a greedy
 * LZ pass (a 4-byte hash table of last positions, as LZ4's) finds
 * repeated within the page. Text and structured data repeat; random data
 * does not. It does not see what only entropy coding would save. */
#include "zvisor.h"
#include "cr/sample.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/kmem.h"
#include <linux/fcntl.h>

#define PIECES 32
#define PIECE 4096UL
#define FIRST 8 /* pieces after which a sample under a tenth repeated stops */
#define HBITS 12

static uint32_t load32(const uint8_t *p)
{
	uint32_t v;
	__builtin_memcpy(&v, p, 4); /* inline: -fno-builtin makes memcpy a call (a rep movsb) */
	return v;
}

/* Bytes of p[0..len) covered by matches of an earlier 4+ bytes. */
static uint64_t repeated(const uint8_t *p, uint64_t len, uint32_t *table)
{
	memset(table, 0, sizeof(uint32_t) << HBITS);
	uint64_t covered = 0;
	for (uint64_t i = 0; i + 4 <= len;) {
		uint32_t v = load32(p + i), h = (v * 2654435761u) >> (32 - HBITS);
		uint64_t c = table[h]; /* position + 1; 0: none */
		table[h] = (uint32_t)(i + 1);
		if (!c || load32(p + c - 1) != v) {
			i++;
			continue;
		}
		uint64_t n = 4;
		while (i + n < len && p[c - 1 + n] == p[i + n])
			n++;
		covered += n;
		i += n;
	}
	return covered;
}

int zv_cr_sample_saving(const char *path, uint64_t size)
{
	uint64_t cap = PIECES * PIECE, tlen = sizeof(uint32_t) << HBITS;
	uint8_t *buf = zv_kmap(PIECE + tlen, 4096, -1); /* a page at a time, then the table */
	if (zv_is_err((long)buf))
		return 0;
	long fd = zv_openat(-100, path, O_RDONLY | O_CLOEXEC, 0);
	uint64_t len = 0, covered = 0;
	for (int i = 0; fd >= 0 && i < PIECES; i++) {
		uint64_t off = size <= cap ? i * PIECE : (i * (size - PIECE) / (PIECES - 1)) & ~4095UL;
		long d = zv_sys3(__NR_lseek, fd, (long)off, 3 /* SEEK_DATA: not a placed mapping's hole */);
		if (d == -ENXIO)
			break;
		if (d > (long)off)
			off = (uint64_t)d & ~4095UL;
		long n = zv_sys4(__NR_pread64, fd, buf, PIECE, off);
		if (n <= 0)
			break;
		len += (uint64_t)n;
		covered += repeated(buf, (uint64_t)n, (uint32_t *)(buf + PIECE));
		if (i + 1 == FIRST && covered * 10 < len)
			break; /* random data: not worth the rest */
	}
	if (fd >= 0)
		zv_close((int)fd);
	zv_kunmap(buf, PIECE + tlen);
	return len ? (int)(covered * 100 / len) : 0;
}
