/* The page the processes of a view share (shared.c). */
#ifndef ZV_FSVIEW_SHARED_H
#define ZV_FSVIEW_SHARED_H
#include <stddef.h>
#include <stdint.h>

extern int fsv_shared_fd; /* hidden, carried across exec; -1: none */
void fsv_shared_make(void);       /* the first image */
void fsv_shared_attach(int fd);   /* an exec'd one */
uint64_t fsv_epoch(void);         /* the namespace's generation */
void fsv_epoch_bump(void);        /* a directory or symlink went or moved */
/* Names of symlinks kept in some process's cache (a filter: a name may
 * be said known that is not). */
void fsv_link_name_seen(const char *c, size_t n);
int fsv_link_name_known(const char *c, size_t n);
/* The program of another process of the view, by host pid: 1 and out, or 0. */
int fsv_exe_of(int pid, char *out, size_t n);
/* main.c: the image has loaded its program (zv_proc.exe_path). */
void zv_fsv_image_started(void);
/* This process's program into the table as pid's (its own, or a child's
 * that has not exec'd yet). */
void fsv_exe_publish(int pid);
void fsv_exe_gone(int pid); /* pid ended */
#endif
