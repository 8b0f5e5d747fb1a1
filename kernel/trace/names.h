/* Symbolic names as strace 6.1 prints them, for zvisor trace. Flag tables
 * are in the order strace prints several bits; tables of values (clocks,
 * commands) are looked up by equality (tfmt.h: tb_flags, tb_enum). The
 * access mode of open flags (O_RDONLY, O_WRONLY, O_RDWR) is printed by the
 * caller. */
#ifndef ZV_TRACE_NAMES_H
#define ZV_TRACE_NAMES_H
#include <stdint.h>
#include <stddef.h>
struct zv_name { uint64_t value; const char *name; };
struct zv_names { const struct zv_name *v; size_t n; };
/* The tables a row's trace column names by id (trace/dectab.c). */
extern const struct zv_names *const zv_flag_tables[];
/* "ENOENT" and glibc's text "No such file or directory"; NULL if unknown */
const char *zv_errno_name(int e);
const char *zv_errno_text(int e);
#include "lib/signames.h" /* zv_signal_name */
extern const struct zv_names zv_n_open_flags;
extern const struct zv_names zv_n_at_flags;
extern const struct zv_names zv_n_prot;
extern const struct zv_names zv_n_map_type;
extern const struct zv_names zv_n_map_flags;
extern const struct zv_names zv_n_clocks;
extern const struct zv_names zv_n_sigprocmask_how;
extern const struct zv_names zv_n_sa_flags;
extern const struct zv_names zv_n_fcntl_cmds;
extern const struct zv_names zv_n_fd_flags;
extern const struct zv_names zv_n_access_modes;
extern const struct zv_names zv_n_seek_whence;
extern const struct zv_names zv_n_clone_flags;
extern const struct zv_names zv_n_wait_options;
extern const struct zv_names zv_n_socket_families;
extern const struct zv_names zv_n_socket_types;
extern const struct zv_names zv_n_socket_type_flags;
extern const struct zv_names zv_n_arch_prctl;
extern const struct zv_names zv_n_prctl;
extern const struct zv_names zv_n_rlimits;
extern const struct zv_names zv_n_madvise;
extern const struct zv_names zv_n_futex_ops;
extern const struct zv_names zv_n_ioctl_cmds;
extern const struct zv_names zv_n_poll_events;
extern const struct zv_names zv_n_epoll_ctl_ops;
extern const struct zv_names zv_n_epoll_events;
extern const struct zv_names zv_n_stat_modes;
extern const struct zv_names zv_n_getrandom_flags;
extern const struct zv_names zv_n_pipe_flags;
extern const struct zv_names zv_n_msg_flags;
extern const struct zv_names zv_n_sol_levels;
extern const struct zv_names zv_n_so_options;
extern const struct zv_names zv_n_mremap_flags;
extern const struct zv_names zv_n_rusage_who;
extern const struct zv_names zv_n_itimers;
extern const struct zv_names zv_n_timer_flags;
extern const struct zv_names zv_n_timerfd_flags;
extern const struct zv_names zv_n_sched_policies;
extern const struct zv_names zv_n_unshare_flags;
extern const struct zv_names zv_n_rseq_flags;
extern const struct zv_names zv_n_personality;
extern const struct zv_names zv_n_statx_mask;
extern const struct zv_names zv_n_statx_attrs;
extern const struct zv_names zv_n_statx_at_flags;
extern const struct zv_names zv_n_faccessat_flags;
extern const struct zv_names zv_n_fs_magics;
extern const struct zv_names zv_n_statfs_flags;
extern const struct zv_names zv_n_rename_flags;
extern const struct zv_names zv_n_close_range_flags;
extern const struct zv_names zv_n_xattr_flags;
extern const struct zv_names zv_n_cloexec_nonblock;
extern const struct zv_names zv_n_epoll_create_flags;
extern const struct zv_names zv_n_tfd_create_flags;
extern const struct zv_names zv_n_ss_flags;
extern const struct zv_names zv_n_sigev_notify;
extern const struct zv_names zv_n_dumpable;
extern const struct zv_names zv_n_caps;
extern const struct zv_names zv_n_umount_flags;
extern const struct zv_names zv_n_tty_iflags;
extern const struct zv_names zv_n_tty_oflags;
extern const struct zv_names zv_n_tty_cflags;
extern const struct zv_names zv_n_tty_lflags;
extern const struct zv_names zv_n_resolve_flags;
extern const struct zv_names zv_n_cap_versions;
extern const struct zv_names zv_n_splice_flags;
extern const struct zv_names zv_n_sync_file_range_flags;
extern const struct zv_names zv_n_signalfd_flags;
extern const struct zv_names zv_n_mlockall_flags;
extern const struct zv_names zv_n_personality_flags;
extern const struct zv_names zv_n_falloc_flags;
extern const struct zv_names zv_n_memfd_flags;
extern const struct zv_names zv_n_inotify_flags;
extern const struct zv_names zv_n_msync_flags;
#endif
