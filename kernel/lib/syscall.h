/* Raw host system calls, issued from kernel text (which the interception
 * platforms exempt). Each returns the raw result: -errno on failure. */
#ifndef ZV_LIB_SYSCALL_H
#define ZV_LIB_SYSCALL_H
#include <stdint.h>
#include <stddef.h>
#include <asm/unistd_64.h>
#include <linux/errno.h>

static inline long zv_sys6(long nr, long a, long b, long c, long d, long e, long f)
{
	register long r10 asm("r10") = d;
	register long r8 asm("r8") = e;
	register long r9 asm("r9") = f;
	long ret;
	asm volatile("syscall"
		     : "=a"(ret)
		     : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
		     : "rcx", "r11", "memory");
	return ret;
}
#define zv_sys0(n) zv_sys6((n), 0, 0, 0, 0, 0, 0)
#define zv_sys1(n, a) zv_sys6((n), (long)(a), 0, 0, 0, 0, 0)
#define zv_sys2(n, a, b) zv_sys6((n), (long)(a), (long)(b), 0, 0, 0, 0)
#define zv_sys3(n, a, b, c) zv_sys6((n), (long)(a), (long)(b), (long)(c), 0, 0, 0)
#define zv_sys4(n, a, b, c, d) zv_sys6((n), (long)(a), (long)(b), (long)(c), (long)(d), 0, 0)
#define zv_sys5(n, a, b, c, d, e) zv_sys6((n), (long)(a), (long)(b), (long)(c), (long)(d), (long)(e), 0)

static inline int zv_is_err(long r) { return (unsigned long)r > -4096UL; }

/* Frequently used wrappers. */
static inline long zv_write(int fd, const void *b, size_t n) { return zv_sys3(__NR_write, fd, b, n); }
static inline long zv_read(int fd, void *b, size_t n) { return zv_sys3(__NR_read, fd, b, n); }
static inline long zv_close(int fd) { return zv_sys1(__NR_close, fd); }
static inline long zv_openat(int dfd, const char *p, int fl, int mode) { return zv_sys4(__NR_openat, dfd, p, fl, mode); }
static inline long zv_getpid(void) { return zv_sys0(__NR_getpid); }
static inline long zv_gettid(void) { return zv_sys0(__NR_gettid); }
static inline void *zv_mmap(void *a, size_t n, int prot, int fl, int fd, long off)
{ return (void *)zv_sys6(__NR_mmap, (long)a, n, prot, fl, fd, off); }
static inline long zv_munmap(void *a, size_t n) { return zv_sys2(__NR_munmap, a, n); }
static inline long zv_mprotect(void *a, size_t n, int p) { return zv_sys3(__NR_mprotect, a, n, p); }
__attribute__((noreturn)) static inline void zv_exit_group(int code)
{
	for (;;) zv_sys1(__NR_exit_group, code);
}
#endif
