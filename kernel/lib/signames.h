/* Signal names: "SIGHUP".."SIGSYS", "SIGRTMIN", "SIGRT_1".."SIGRT_32"
 * (lib/signames.c), for trace's lines and --checkpoint-on's argument. */
#ifndef ZV_LIB_SIGNAMES_H
#define ZV_LIB_SIGNAMES_H
/* NULL out of 1..64 */
const char *zv_signal_name(int sig);
#endif
