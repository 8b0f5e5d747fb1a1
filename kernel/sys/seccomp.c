/* The guest's seccomp: strict mode and filters, evaluated by the kernel for
 * every guest call. Installing them on the host would also filter the
 * kernel's own calls; here the guest gets the host's semantics (action
 * precedence, ERRNO, TRAP as SIGSYS, KILL) and the kernel keeps working.
 * Filters apply to the whole process (as with SECCOMP_FILTER_FLAG_TSYNC),
 * are inherited by fork and survive execve. */
#include "zvisor.h"
#include "sys/layer.h"
#include "sys/tsc.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/kmem.h"
#include <linux/seccomp.h>
#include <linux/filter.h>
#include <linux/audit.h>
#include <linux/prctl.h>

#define MAX_INSNS 4096   /* BPF_MAXINSNS */
#define MAX_PATH 32768   /* MAX_INSNS_PER_PATH: all filters, 4 extra per filter */
#define KNOWN_FLAGS 0x3fUL

/* Checks what the host's seccomp_check_filter accepts: the instructions a
 * seccomp filter may use, loads only of aligned words of seccomp_data,
 * jumps inside the program, a return at the end. */
static int valid_filter(const struct sock_filter *f, unsigned n)
{
	if (n == 0 || n > MAX_INSNS)
		return 0;
	for (unsigned i = 0; i < n; i++) {
		uint16_t code = f[i].code;
		uint32_t k = f[i].k;
		switch (code) {
		case BPF_LD | BPF_W | BPF_ABS:
			if ((k & 3) || k >= sizeof(struct seccomp_data))
				return 0;
			break;
		case BPF_LD | BPF_W | BPF_LEN: case BPF_LDX | BPF_W | BPF_LEN:
		case BPF_LD | BPF_IMM: case BPF_LDX | BPF_IMM:
		case BPF_MISC | BPF_TAX: case BPF_MISC | BPF_TXA:
		case BPF_RET | BPF_K: case BPF_RET | BPF_A:
		case BPF_ALU | BPF_NEG:
			break;
		case BPF_LD | BPF_MEM: case BPF_LDX | BPF_MEM: case BPF_ST: case BPF_STX:
			if (k >= BPF_MEMWORDS)
				return 0;
			break;
		case BPF_JMP | BPF_JA:
			if (k >= n - i - 1)
				return 0;
			break;
		default:
			if (BPF_CLASS(code) == BPF_ALU) {
				/* as the host's seccomp_check_filter: no BPF_MOD,
				 * and bpf_check_classic: no constant division by
				 * zero, no constant shift by 32 or more */
				switch (BPF_OP(code)) {
				case BPF_ADD: case BPF_SUB: case BPF_MUL: case BPF_OR: case BPF_AND:
				case BPF_XOR:
					break;
				case BPF_LSH: case BPF_RSH:
					if (BPF_SRC(code) == BPF_K && k >= 32)
						return 0;
					break;
				case BPF_DIV:
					if (BPF_SRC(code) == BPF_K && k == 0)
						return 0;
					break;
				default:
					return 0;
				}
			} else if (BPF_CLASS(code) == BPF_JMP) {
				switch (BPF_OP(code)) {
				case BPF_JEQ: case BPF_JGT: case BPF_JGE: case BPF_JSET:
					if (i + 1 + f[i].jt >= n || i + 1 + f[i].jf >= n)
						return 0;
					break;
				default:
					return 0;
				}
			} else {
				return 0;
			}
		}
	}
	return BPF_CLASS(f[n - 1].code) == BPF_RET;
}

static uint32_t alu(uint16_t op, uint32_t a, uint32_t v)
{
	switch (op) {
	case BPF_ADD: return a + v;
	case BPF_SUB: return a - v;
	case BPF_MUL: return a * v;
	case BPF_DIV: return a / v;
	case BPF_OR: return a | v;
	case BPF_AND: return a & v;
	/* the host's shifts by X use the count's low 5 bits (x86 shl/shr) */
	case BPF_LSH: return a << (v & 31);
	case BPF_RSH: return a >> (v & 31);
	case BPF_XOR: return a ^ v;
	default: return -a; /* BPF_NEG */
	}
}

/* Classic BPF over the call's seccomp_data; validated programs only. */
static uint32_t run_filter(const struct sock_filter *f, const struct seccomp_data *d)
{
	uint32_t A = 0, X = 0, M[BPF_MEMWORDS] = { 0 };
	for (unsigned pc = 0;; pc++) {
		const struct sock_filter *in = &f[pc];
		uint32_t k = in->k;
		switch (in->code) {
		case BPF_LD | BPF_W | BPF_ABS: A = *(const uint32_t *)((const char *)d + k); continue;
		case BPF_LD | BPF_W | BPF_LEN: A = sizeof *d; continue;
		case BPF_LDX | BPF_W | BPF_LEN: X = sizeof *d; continue;
		case BPF_LD | BPF_IMM: A = k; continue;
		case BPF_LDX | BPF_IMM: X = k; continue;
		case BPF_LD | BPF_MEM: A = M[k]; continue;
		case BPF_LDX | BPF_MEM: X = M[k]; continue;
		case BPF_ST: M[k] = A; continue;
		case BPF_STX: M[k] = X; continue;
		case BPF_MISC | BPF_TAX: X = A; continue;
		case BPF_MISC | BPF_TXA: A = X; continue;
		case BPF_RET | BPF_K: return k;
		case BPF_RET | BPF_A: return A;
		case BPF_JMP | BPF_JA: pc += k; continue;
		}
		uint32_t v = BPF_SRC(in->code) == BPF_X ? X : k;
		if (BPF_CLASS(in->code) == BPF_ALU) {
			if (BPF_OP(in->code) == BPF_DIV && v == 0)
				return 0; /* division by zero ends the program: KILL */
			A = alu(BPF_OP(in->code), A, v);
			continue;
		}
		int cond;
		switch (BPF_OP(in->code)) {
		case BPF_JEQ: cond = A == v; break;
		case BPF_JGT: cond = A > v; break;
		case BPF_JGE: cond = A >= v; break;
		default: cond = (A & v) != 0; break; /* BPF_JSET */
		}
		pc += cond ? in->jt : in->jf;
	}
}

static long add_filter(const struct sock_filter *prog, unsigned len)
{
	struct zv_seccomp *sc = &zv_proc.seccomp;
	if (sc->nfilters >= ZV_MAX_FILTERS || sc->total + len + 4 > MAX_PATH)
		return -ENOMEM;
	struct sock_filter *copy = zv_kmap(len * sizeof *copy, 4096, -1);
	if (zv_is_err((long)copy))
		return -ENOMEM;
	memcpy(copy, prog, len * sizeof *copy);
	sc->filter[sc->nfilters] = copy;
	sc->len[sc->nfilters] = len;
	sc->nfilters++;
	sc->total += len + 4;
	sc->mode = SECCOMP_MODE_FILTER;
	zv_sandbox_on();
	return 0;
}

/* A filter needs no_new_privs or CAP_SYS_ADMIN, as on the host. */
static int may_filter(void)
{
	if (zv_sys5(__NR_prctl, PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1)
		return 1;
	struct { uint32_t version; int pid; } hdr = { 0x20080522 /* _LINUX_CAPABILITY_VERSION_3 */, 0 };
	struct { uint32_t effective, permitted, inheritable; } data[2];
	if (zv_sys2(__NR_capget, &hdr, data) < 0)
		return 0;
	return (data[0].effective >> 21) & 1; /* CAP_SYS_ADMIN */
}

static long set_mode(long op, unsigned long flags, const void *uargs)
{
	struct zv_seccomp *sc = &zv_proc.seccomp;
	if (op == SECCOMP_SET_MODE_STRICT) {
		if (flags || uargs)
			return -EINVAL;
		if (sc->mode == SECCOMP_MODE_FILTER)
			return -EINVAL;
		sc->mode = SECCOMP_MODE_STRICT;
		zv_sandbox_on();
		/* The host's strict mode also disables rdtsc for the thread (a
		 * vDSO clock read then faults with SIGSEGV); so does this one. */
		zv_count_tsc_off();
		zv_sys2(__NR_prctl, 26 /* PR_SET_TSC */, 2 /* PR_TSC_SIGSEGV */);
		return 0;
	}
	/* SECCOMP_SET_MODE_FILTER */
	if (flags & ~KNOWN_FLAGS)
		return -EINVAL;
	if (flags & SECCOMP_FILTER_FLAG_NEW_LISTENER)
		return -EINVAL; /* no user-space notification (documented) */
	if (sc->mode == SECCOMP_MODE_STRICT)
		return -EINVAL;
	/* The host's order: the sock_fprog is read (EFAULT: a bad pointer
	 * faults under the handler's guard) and its length checked before the
	 * privilege (LTP prctl02). */
	const struct sock_fprog *fp = uargs;
	if (!fp)
		return -EFAULT;
	struct sock_fprog prog = *fp;
	if (prog.len == 0 || prog.len > MAX_INSNS)
		return -EINVAL;
	if (!may_filter())
		return -EACCES;
	if (!prog.filter)
		return -EFAULT;
	if (!valid_filter(prog.filter, prog.len))
		return -EINVAL;
	return add_filter(prog.filter, prog.len);
}

long zv_sys_seccomp(struct zv_call *c)
{
	struct zv_thread *t = c->t;
	long *a = c->a;
	if (a[0] == SECCOMP_SET_MODE_STRICT || a[0] == SECCOMP_SET_MODE_FILTER)
		return set_mode(a[0], (unsigned long)a[1], (const void *)a[2]);
	return zv_host_call(t, __NR_seccomp, a[0], a[1], a[2], 0, 0, 0);
}

long zv_prctl_seccomp(long mode, long arg)
{
	if (mode == SECCOMP_MODE_STRICT)
		return set_mode(SECCOMP_SET_MODE_STRICT, 0, NULL);
	if (mode == SECCOMP_MODE_FILTER)
		return set_mode(SECCOMP_SET_MODE_FILTER, 0, (const void *)arg);
	return -EINVAL;
}

static long check(struct zv_thread *t, struct zv_ucontext *uc, long *nrp, long *a, int recheck);

/* SECCOMP_RET_TRACE: its tracer's PTRACE_EVENT_SECCOMP stop, else ENOSYS.
 * The tracer may change the call (*nr, a) or skip it; a changed call is
 * checked again, where RET_TRACE lets it run (the host's recheck). */
static long traced(struct zv_thread *t, struct zv_ucontext *uc, long *nr, long *a, uint32_t data)
{
	long now = zv_event_seccomp_trace(t, uc, *nr, data);
	if (now == ZV_SECCOMP_UNTRACED)
		return -ENOSYS;
	if (now < 0)
		return (long)uc->mc.rax; /* skipped: the tracer's result */
	const long b[6] = { (long)uc->mc.rdi, (long)uc->mc.rsi, (long)uc->mc.rdx,
			    (long)uc->mc.r10, (long)uc->mc.r8, (long)uc->mc.r9 };
	if (now == *nr && !memcmp(a, b, sizeof b))
		return ZV_SECCOMP_GO;
	*nr = now;
	memcpy(a, b, sizeof b);
	return check(t, uc, nr, a, 1);
}

/* Applies the guest's seccomp to call *nr. Returns ZV_SECCOMP_GO to run it
 * (as *nr and a say: a tracer may have changed them), or the call's result
 * when seccomp decides it. */
long zv_seccomp_check(struct zv_thread *t, struct zv_ucontext *uc, long *nr, long *a)
{
	return check(t, uc, nr, a, 0);
}

static long check(struct zv_thread *t, struct zv_ucontext *uc, long *nrp, long *a, int recheck)
{
	long nr = *nrp;
	struct zv_seccomp *sc = &zv_proc.seccomp;
	if (sc->mode == SECCOMP_MODE_STRICT) {
		if (zv_row(nr)->strict)
			return ZV_SECCOMP_GO;
		zv_die_by_signal(9);
	}
	struct seccomp_data d = { .nr = (int)nr, .arch = AUDIT_ARCH_X86_64, .instruction_pointer = uc->mc.rip };
	for (int i = 0; i < 6; i++)
		d.args[i] = (uint64_t)a[i];
	uint32_t ret = SECCOMP_RET_ALLOW;
	for (int i = sc->nfilters - 1; i >= 0; i--) {
		uint32_t cur = run_filter(sc->filter[i], &d);
		/* The most restrictive action wins: the lowest as a signed value. */
		if ((int32_t)(cur & SECCOMP_RET_ACTION_FULL) < (int32_t)(ret & SECCOMP_RET_ACTION_FULL))
			ret = cur;
	}
	uint32_t data = ret & SECCOMP_RET_DATA;
	switch (ret & SECCOMP_RET_ACTION_FULL) {
	case SECCOMP_RET_ALLOW:
	case SECCOMP_RET_LOG:
		return ZV_SECCOMP_GO;
	case SECCOMP_RET_ERRNO:
		return -(long)(data > 4095 ? 4095 : data);
	case SECCOMP_RET_TRACE:
		return recheck ? ZV_SECCOMP_GO : traced(t, uc, nrp, a, data);
	case SECCOMP_RET_USER_NOTIF:
		return -ENOSYS; /* no listener */
	case SECCOMP_RET_TRAP: {
		zv_siginfo si = { .si_signo = 31, .si_errno = (int)data, .si_code = 1 /* SYS_SECCOMP */ };
		si.sys.call_addr = uc->mc.rip;
		si.sys.syscall = (int)nr;
		si.sys.arch = AUDIT_ARCH_X86_64;
		zv_force_signal(t, uc, &si);
		return nr; /* not made: rax keeps the number */
	}
	case SECCOMP_RET_KILL_THREAD:
		if (zv_proc.nthreads > 1) {
			long code[6] = { 0 };
			struct zv_call exit_call = { .t = t, .uc = uc, .nr = __NR_exit, .a = code };
			return zv_sys_exit(&exit_call); /* does not return */
		}
		zv_die_by_signal(31); /* the last thread takes the process with it */
	default:
		zv_die_by_signal(31);
	}
}

/* Across execve the filters travel in a memfd named in the exec state. */
int zv_seccomp_save(void)
{
	struct zv_seccomp *sc = &zv_proc.seccomp;
	if (!sc->mode)
		return -1;
	long fd = zv_sys2(__NR_memfd_create, "zvisor-seccomp", 0);
	if (fd < 0)
		return -1;
	int head[2] = { sc->mode, sc->nfilters };
	zv_write((int)fd, head, sizeof head);
	for (int i = 0; i < sc->nfilters; i++) {
		zv_write((int)fd, &sc->len[i], sizeof sc->len[i]);
		zv_write((int)fd, sc->filter[i], sc->len[i] * sizeof(struct sock_filter));
	}
	zv_sys3(__NR_lseek, fd, 0, 0);
	return (int)fd;
}

void zv_seccomp_restore(int fd)
{
	int head[2];
	if (zv_read(fd, head, sizeof head) == sizeof head) {
		for (int i = 0; i < head[1] && i < ZV_MAX_FILTERS; i++) {
			unsigned len;
			if (zv_read(fd, &len, sizeof len) != sizeof len || len == 0 || len > MAX_INSNS)
				break;
			struct sock_filter *buf = zv_kmap(len * sizeof *buf, 4096, -1);
			if (zv_is_err((long)buf) || zv_read(fd, buf, len * sizeof *buf) != (long)(len * sizeof *buf))
				break;
			zv_proc.seccomp.filter[i] = buf;
			zv_proc.seccomp.len[i] = len;
			zv_proc.seccomp.nfilters = i + 1;
			zv_proc.seccomp.total += len + 4;
		}
		zv_proc.seccomp.mode = head[0];
		zv_sandbox_on();
	}
	zv_close(fd);
}
