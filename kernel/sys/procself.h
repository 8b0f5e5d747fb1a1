/* The kernel's own /proc/self files: maps and mem (DESIGN 40). */
#ifndef ZV_SYS_PROCSELF_H
#define ZV_SYS_PROCSELF_H
#include "lib/maps.h"

/* Calls fn for each mapping until it returns nonzero; returns that value,
 * 0 at the end, or -errno if the file cannot be read. */
int zv_maps_each(int (*fn)(const struct zv_map *m, void *arg), void *arg);
/* /proc/self/mem, read-write: the process's hidden fd, or one opened for
 * the caller, who gives it back with zv_procself_mem_done. */
long zv_procself_mem(void);
void zv_procself_mem_done(long fd);
/* Before a clone that gives this, its only thread, a second one (or a fd
 * table shared with another task): the process's hidden fds are made. */
void zv_procself_before_sharing(void);
void zv_procself_fork_child(void);
/* The guest's call failed with EMFILE: the kept fds, if any, are closed
 * (returns 1: the call is made again), as natively the guest has those
 * numbers. Uses open the files from then on. */
int zv_procself_drop(void);
/* A restore copied the dumper's numbers, not its fds: forgotten. */
void zv_procself_restored(void);
/* Whether fd is one of them (this process's or a fork parent's): a
 * checkpoint leaves it out. */
int zv_procself_is_kept(int fd);
#endif
