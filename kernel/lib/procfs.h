/* Another process's /proc/PID/status and /proc/PID/stat, read whole into
 * the caller's buffer (the ptrace and trace -p rules: its ids, parent,
 * state). */
#ifndef ZV_LIB_PROCFS_H
#define ZV_LIB_PROCFS_H
#include <stddef.h>

/* The text after "Key:" of pid's status (0: our own), in buf; NULL with
 * *err -ESRCH (no such process) or -1 (no such key). */
const char *zv_procfs_status_line(int pid, const char *key, char *buf, size_t size, long *err);
/* The nth number of that line (Uid: has four), or -errno / -1. */
long zv_procfs_status_field(int pid, const char *key, int nth);
/* pid's stat after its "(comm) ", which may hold spaces and parentheses:
 * the state letter first, then the ppid. NULL if it cannot be read. */
const char *zv_procfs_stat_fields(int pid, char *buf, size_t size);
#endif
