/* A directory's entries, without allocating (lib/dirents.c). */
#ifndef ZV_LIB_DIRENTS_H
#define ZV_LIB_DIRENTS_H

/* Calls fn with each entry's name of the open directory dfd until it
 * returns nonzero; returns that value, 0 at the end, or -errno. */
long zv_dirents_each(int dfd, long (*fn)(const char *name, void *arg), void *arg);
#endif
