#include "cr/resutil.h"
#include "lib/fmt.h"
#include "lib/kmem.h"
#include "lib/string.h"
#include "lib/syscall.h"

void *zv_cr_kalloc(size_t n)
{
	void *p = zv_kmap(n ? n : 1, 4096, -1);
	return zv_is_err((long)p) ? NULL : p;
}

void zv_cr_kfree(void *p, size_t n)
{
	if (p)
		zv_kunmap(p, n ? n : 1);
}

void *zv_cr_buf_add(struct zv_cr_buf *b, size_t n)
{
	if (b->failed)
		return NULL;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 65536;
		while (cap < b->len + n)
			cap *= 2;
		uint8_t *p = zv_cr_kalloc(cap);
		if (!p) {
			b->failed = 1;
			return NULL;
		}
		if (b->len)
			memcpy(p, b->p, b->len);
		zv_cr_kfree(b->p, b->cap);
		b->p = p;
		b->cap = cap;
	}
	void *at = b->p + b->len;
	memset(at, 0, n); /* fresh pages are zero; a reused tail may not be */
	b->len += n;
	return at;
}

void zv_cr_buf_put(struct zv_cr_buf *b, const void *p, size_t n)
{
	size_t padded = (n + 7) & ~(size_t)7;
	uint8_t *at = zv_cr_buf_add(b, padded);
	if (at && n)
		memcpy(at, p, n);
}

void zv_cr_buf_free(struct zv_cr_buf *b)
{
	zv_cr_kfree(b->p, b->cap);
	*b = (struct zv_cr_buf){ 0 };
}

long zv_cr_in_refuse(struct zv_cr_in *in, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	zv_vsnprintf(in->why, sizeof in->why, fmt, ap);
	va_end(ap);
	return -1;
}

int zv_cr_retry(int *tries)
{
	if (++*tries > 200)
		return 0;
	struct { long s, ns; } ts = { 0, 10000000 };
	zv_sys2(__NR_nanosleep, &ts, NULL);
	return 1;
}
