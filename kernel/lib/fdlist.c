/* Fds closed a run at a time at the end of a load (lib/fdlist.h). Only
 * runs given are ever joined: a gap between two may hold any fd. */
#include "zvisor.h"
#include "lib/fdlist.h"
#include "lib/syscall.h"

struct zv_fdlist *zv_load_fds;

static void close_run(int lo, int hi)
{
	if (lo == hi)
		zv_close(lo);
	else
		zv_sys3(__NR_close_range, lo, hi, 0);
}

void zv_fdlist_close(struct zv_fdlist *l, int lo, int hi)
{
	if (lo < 0 || hi < lo)
		return;
	if (!l || l->n == ZV_FDLIST_MAX) {
		close_run(lo, hi);
		return;
	}
	l->lo[l->n] = lo;
	l->hi[l->n] = hi;
	l->n++;
}

void zv_fdlist_flush(struct zv_fdlist *l)
{
	if (!l)
		return;
	for (int i = 1; i < l->n; i++) /* by start */
		for (int j = i; j > 0 && l->lo[j] < l->lo[j - 1]; j--) {
			int a = l->lo[j], b = l->hi[j];
			l->lo[j] = l->lo[j - 1];
			l->hi[j] = l->hi[j - 1];
			l->lo[j - 1] = a;
			l->hi[j - 1] = b;
		}
	for (int i = 0; i < l->n;) {
		int lo = l->lo[i], hi = l->hi[i];
		for (i++; i < l->n && l->lo[i] <= hi + 1; i++)
			if (l->hi[i] > hi)
				hi = l->hi[i];
		close_run(lo, hi);
	}
	l->n = 0;
}
