/* Fds a new image's load closes together when it is done (lib/fdlist.c). */
#ifndef ZV_LIB_FDLIST_H
#define ZV_LIB_FDLIST_H

#define ZV_FDLIST_MAX 16

/* Runs [lo, hi] of fds, closed at zv_fdlist_flush: a load opens the
 * resolution's files and each cache file one after another, so their
 * numbers are mostly adjacent, and one close_range ends many. */
struct zv_fdlist {
	int n;
	int lo[ZV_FDLIST_MAX], hi[ZV_FDLIST_MAX];
};

/* The list of the load under way (NULL: none). Loads run on one thread
 * (the first start, an image the host exec'd, an exec made once the
 * other threads are gone), so one list serves. */
extern struct zv_fdlist *zv_load_fds;

/* Closes [lo, hi] now (l NULL or full) or at l's flush. */
void zv_fdlist_close(struct zv_fdlist *l, int lo, int hi);
/* Closes every run in l, adjacent runs with one close_range; l is empty after. */
void zv_fdlist_flush(struct zv_fdlist *l);
#endif
