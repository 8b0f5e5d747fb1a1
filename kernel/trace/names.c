/* placeholder: replaced by the real tables */
#include "trace/names.h"
static const struct zv_name none[1];
const struct zv_names zv_n_open_flags = { none, 0 };
const struct zv_names zv_n_at_flags = { none, 0 };
const struct zv_names zv_n_prot = { none, 0 };
const struct zv_names zv_n_map_type = { none, 0 };
const struct zv_names zv_n_map_flags = { none, 0 };
const struct zv_names zv_n_clocks = { none, 0 };
const struct zv_names zv_n_sigprocmask_how = { none, 0 };
const struct zv_names zv_n_sa_flags = { none, 0 };
const struct zv_names zv_n_fcntl_cmds = { none, 0 };
const struct zv_names zv_n_fd_flags = { none, 0 };
const struct zv_names zv_n_access_modes = { none, 0 };
const struct zv_names zv_n_seek_whence = { none, 0 };
const struct zv_names zv_n_clone_flags = { none, 0 };
const struct zv_names zv_n_wait_options = { none, 0 };
const struct zv_names zv_n_socket_families = { none, 0 };
const struct zv_names zv_n_socket_types = { none, 0 };
const struct zv_names zv_n_socket_type_flags = { none, 0 };
const struct zv_names zv_n_arch_prctl = { none, 0 };
const struct zv_names zv_n_prctl = { none, 0 };
const struct zv_names zv_n_rlimits = { none, 0 };
const struct zv_names zv_n_madvise = { none, 0 };
const struct zv_names zv_n_futex_ops = { none, 0 };
const struct zv_names zv_n_ioctl_cmds = { none, 0 };
const struct zv_names zv_n_poll_events = { none, 0 };
const struct zv_names zv_n_epoll_ctl_ops = { none, 0 };
const struct zv_names zv_n_epoll_events = { none, 0 };
const struct zv_names zv_n_stat_modes = { none, 0 };
const struct zv_names zv_n_getrandom_flags = { none, 0 };
const struct zv_names zv_n_pipe_flags = { none, 0 };
const struct zv_names zv_n_msg_flags = { none, 0 };
const struct zv_names zv_n_sol_levels = { none, 0 };
const struct zv_names zv_n_so_options = { none, 0 };
const struct zv_names zv_n_mremap_flags = { none, 0 };
const struct zv_names zv_n_rusage_who = { none, 0 };
const struct zv_names zv_n_itimers = { none, 0 };
const struct zv_names zv_n_timer_flags = { none, 0 };
const struct zv_names zv_n_timerfd_flags = { none, 0 };
const struct zv_names zv_n_sched_policies = { none, 0 };
const struct zv_names zv_n_unshare_flags = { none, 0 };
const struct zv_names zv_n_rseq_flags = { none, 0 };
const struct zv_names zv_n_personality = { none, 0 };
const char *zv_errno_name(int e) { return e == 2 ? "ENOENT" : 0; }
const char *zv_errno_text(int e) { return e == 2 ? "No such file or directory" : 0; }
const char *zv_signal_name(int s) { return s == 17 ? "SIGCHLD" : 0; }
