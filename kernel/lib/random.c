/* Random bytes for a new image's start: the interpreter's and a PIE's
 * places, the break's offset and AT_RANDOM drew one getrandom each (three
 * host calls per exec); they now share one. */
#include "lib/random.h"
#include "lib/syscall.h"
#include "lib/string.h"

static unsigned char pool[64];
static size_t left; /* unused bytes at the pool's end */

/* No getrandom (a very old host): not secret, but different each time. */
static void weak_fill(unsigned char *out, size_t n)
{
	uint64_t v = (uint64_t)out ^ (uint64_t)zv_getpid() << 32;
	for (size_t i = 0; i < n; i++) {
		uint32_t lo, hi;
		asm volatile("rdtsc" : "=a"(lo), "=d"(hi));
		v = (v ^ ((uint64_t)hi << 32 | lo)) * 0x9e3779b97f4a7c15UL;
		out[i] = (unsigned char)(v >> 56);
	}
}

/* A fork child has its parent's unused bytes: a new image drawing from
 * them would share them with its siblings (AT_RANDOM). */
void zv_random_reset(void)
{
	left = 0;
}

void zv_start_random(void *out, size_t n)
{
	if (n > sizeof pool)
		n = sizeof pool;
	if (left < n) {
		if (zv_sys3(__NR_getrandom, pool, sizeof pool, 0) != (long)sizeof pool)
			weak_fill(pool, sizeof pool);
		left = sizeof pool;
	}
	memcpy(out, pool + sizeof pool - left, n); /* each byte is handed out once */
	left -= n;
}
