/* ptrace(2): the requests of a guest tracer, on the slots of its stopped
 * tracees (registers, siginfo, options: in the slot; memory, vector state,
 * debug registers: commands the tracee serves). The raw call's ABI: a PEEK
 * stores the word at *data. Errors as the host's: ESRCH for a thread that
 * is not a stopped tracee of this tracer, EIO for a bad USER offset or an
 * address no one can read, EFAULT for the tracer's own bad pointers. */
#include "zvisor.h"
#include "ptrace/ptrace.h"
#include "sys/layer.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/fmt.h"

#define NT_PRSTATUS 1
#define NT_PRFPREG 2
#define NT_X86_XSTATE 0x202

/* A guest pointer the tracer gave: EFAULT as natively when it is bad. */
static long put(void *dst, const void *src, size_t n)
{
	return zv_guest_copy(dst, src, n, (uint64_t)dst);
}
static long get(void *dst, const void *src, size_t n)
{
	return zv_guest_copy(dst, src, n, (uint64_t)src);
}

/* A request that only reads what the slot keeps of the stop. */
static int reads_stop(long req, uint64_t addr)
{
	return req == PT_GETREGS || req == PT_PEEKUSR || req == PT_GETSIGINFO || req == PT_GETSIGMASK ||
	       req == PT_GETEVENTMSG || req == PT_GET_SYSCALL_INFO || (req == PT_GETREGSET && addr == NT_PRSTATUS);
}

static int stopped(struct zv_pt_tracee_ref *r)
{
	if (r->pending || !r->s)
		return 0;
	/* attached while stopped: natively in its ptrace stop at once, here
	 * on its way there (zv_pt_attach) */
	for (int i = 0; r->stop_coming && i < 200 && __atomic_load_n(&r->s->state, __ATOMIC_ACQUIRE) != ZV_PT_STOPPED;
	     i++) {
		struct { long s, ns; } ts = { 0, 5000000L };
		zv_sys2(__NR_nanosleep, &ts, NULL);
	}
	r->stop_coming = 0;
	return __atomic_load_n(&r->s->state, __ATOMIC_ACQUIRE) == ZV_PT_STOPPED;
}

static long resume(struct zv_pt_tracee_ref *r, int mode, long sig)
{
	if ((unsigned long)sig > 64)
		return -EIO;
	struct zv_pt_slot *s = r->s;
	s->cmd = ZV_PT_CMD_RESUME;
	s->arg[0] = (uint64_t)mode;
	s->arg[1] = (uint64_t)sig;
	__atomic_store_n(&s->state, ZV_PT_RUNNING, __ATOMIC_RELEASE);
	__atomic_add_fetch(&s->cmd_seq, 1, __ATOMIC_SEQ_CST);
	zv_pt_wake_sleepers(&s->cmd_seq, &s->sleeping);
	return 0;
}

/* Memory through the stopped tracee, in pieces its buffer holds. */
static long mem(struct zv_pt_tracee_ref *r, int write, uint64_t addr, void *buf, size_t n)
{
	size_t done = 0;
	while (done < n) {
		size_t k = n - done < ZV_PT_BUF ? n - done : ZV_PT_BUF;
		if (write)
			memcpy(r->s->buf, (char *)buf + done, k);
		long got = zv_pt_cmd(r, write ? ZV_PT_CMD_WRITE : ZV_PT_CMD_READ, addr + done, k);
		if (got <= 0)
			return done ? (long)done : got ? got : -EIO;
		if (!write)
			memcpy((char *)buf + done, r->s->buf, (size_t)got);
		done += (size_t)got;
		if ((size_t)got < k)
			break;
	}
	return (long)done;
}

static long peek_user(struct zv_pt_tracee_ref *r, uint64_t off, uint64_t *v)
{
	if ((off & 7) || off >= ZV_PT_USER_SIZE)
		return -EIO;
	long i = zv_pt_user_reg(off);
	*v = 0;
	if (i >= 0)
		*v = ((const uint64_t *)&r->s->regs)[i];
	else if (off >= ZV_PT_USER_DEBUGREG && off < ZV_PT_USER_DEBUGREG + 64)
		*v = r->s->dr[(off - ZV_PT_USER_DEBUGREG) / 8];
	return 0;
}

/* The registers a tracer wrote, once the host would take them. */
static long set_regs(struct zv_pt_tracee_ref *r, const struct zv_pt_regs *regs)
{
	long e = zv_pt_regs_check(regs);
	if (e)
		return e;
	r->s->regs = *regs;
	r->s->regs_dirty = 1;
	return 0;
}

static long poke_user(struct zv_pt_tracee_ref *r, uint64_t off, uint64_t v)
{
	if ((off & 7) || off >= ZV_PT_USER_SIZE)
		return -EIO;
	long i = zv_pt_user_reg(off);
	if (i >= 0) {
		struct zv_pt_regs regs = r->s->regs;
		((uint64_t *)&regs)[i] = v;
		return set_regs(r, &regs);
	}
	if (off >= ZV_PT_USER_DEBUGREG && off < ZV_PT_USER_DEBUGREG + 64)
		return zv_pt_cmd(r, ZV_PT_CMD_DEBUGREG, (off - ZV_PT_USER_DEBUGREG) / 8, v);
	return -EIO;
}

static long regset(struct zv_pt_tracee_ref *r, int set, long type, void *iovp)
{
	struct { void *base; uint64_t len; } iov;
	if (get(&iov, iovp, sizeof iov))
		return -EFAULT;
	struct zv_pt_slot *s = r->s;
	/* every regset of x86-64 is of 8-byte words: a length of part of one
	 * is refused before anything moves, as the host's ptrace_regset */
	if ((type == NT_PRSTATUS || type == NT_PRFPREG || type == NT_X86_XSTATE) && iov.len % 8)
		return -EINVAL;
	if (type == NT_PRSTATUS) {
		uint64_t n = iov.len < sizeof s->regs ? iov.len : sizeof s->regs;
		if (set) {
			struct zv_pt_regs regs = s->regs;
			if (get(&regs, iov.base, n))
				return -EFAULT;
			long e = set_regs(r, &regs);
			if (e)
				return e;
		} else if (put(iov.base, &s->regs, n)) {
			return -EFAULT;
		}
	} else if (type == NT_PRFPREG || type == NT_X86_XSTATE) {
		long size = zv_pt_cmd(r, ZV_PT_CMD_GETFP, 0, 0);
		if (size < 0)
			return size;
		if (type == NT_PRFPREG)
			size = 512;
		uint64_t n = iov.len < (uint64_t)size ? iov.len : (uint64_t)size;
		if (set) {
			if (type == NT_X86_XSTATE && n < 576)
				return -EINVAL;
			if (get(s->buf, iov.base, n))
				return -EFAULT;
			long e = zv_pt_cmd(r, ZV_PT_CMD_SETFP, n, type == NT_PRFPREG);
			if (e < 0)
				return e;
		} else {
			if (type == NT_PRFPREG)
				memset(s->buf + 464, 0, 48);
			if (put(iov.base, s->buf, n))
				return -EFAULT;
		}
		iov.len = n;
		return put((char *)iovp + 8, &iov.len, 8) ? -EFAULT : 0;
	} else {
		return -EINVAL;
	}
	iov.len = iov.len < sizeof s->regs ? iov.len : sizeof s->regs;
	return put((char *)iovp + 8, &iov.len, 8) ? -EFAULT : 0;
}

static long syscall_info(struct zv_pt_tracee_ref *r, uint64_t size, void *out)
{
	const struct zv_pt_syscall_info *i = &r->s->sc;
	uint64_t actual = i->op == 1 ? 80 : i->op == 2 ? 33 : i->op == 3 ? 84 : 24;
	uint64_t n = size < actual ? size : actual;
	if (n && put(out, i, n))
		return -EFAULT;
	return (long)actual;
}

static long setoptions(struct zv_pt_tracee_ref *r, uint64_t opts)
{
	if (opts & ~(uint64_t)PT_O_MASK)
		return -EINVAL;
	r->s->options = (uint32_t)opts;
	return 0;
}

static long sys_ptrace(struct zv_call *c)
{
	struct zv_thread *t = c->t;
	long *a = c->a;
	long req = a[0];
	int pid = (int)a[1];
	uint64_t addr = (uint64_t)a[2], data = (uint64_t)a[3];
	if (req == PT_TRACEME)
		return zv_pt_traceme(t);
	if (req == PT_ATTACH || req == PT_SEIZE) {
		if (req == PT_SEIZE && (addr || (data & ~(uint64_t)PT_O_MASK)))
			return -EIO;
		return zv_pt_attach(t, pid, req == PT_SEIZE, req == PT_SEIZE ? data : 0);
	}
	struct zv_pt_tracee_ref *r = zv_pt_find(pid);
	if (r && r->pending && req == PT_INTERRUPT) {
		r->interrupt = 1; /* the attach is not complete (its tracee is stopped): it stops once it is */
		return 0;
	}
	if (r && r->pending)
		zv_pt_complete(r, 5000), r = zv_pt_find(pid);
	if (!r)
		return -ESRCH;
	struct zv_pt_slot *s = r->s;
	if (req == PT_KILL) {
		if (stopped(r))
			zv_pt_cmd(r, ZV_PT_CMD_KILL, 0, 0);
		zv_sys3(__NR_tgkill, r->hpid, r->htid, SIGKILL_);
		return 0;
	}
	if (req == PT_INTERRUPT) {
		if (!s->seized)
			return -EIO;
		if (!stopped(r) || s->listening) {
			struct zv_pt_slot *ss = s;
			ss->listening = 0;
			/* the tracee takes it at once in guest code or on its way out */
			zv_pt_wake_tracee(r, ZV_PT_WANT_INTERRUPT);
		}
		return 0;
	}
	if (!stopped(r) && !(reads_stop(req, addr) && __atomic_load_n(&s->state, __ATOMIC_ACQUIRE) == ZV_PT_EXITED &&
			     s->ended_in_stop))
		return -ESRCH;
	switch (req) {
	case PT_PEEKTEXT:
	case PT_PEEKDATA: {
		uint64_t v;
		long n = mem(r, 0, addr, &v, 8);
		if (n != 8)
			return n < 0 && n != -EIO ? n : -EIO;
		return put((void *)data, &v, 8) ? -EFAULT : 0;
	}
	case PT_POKETEXT:
	case PT_POKEDATA: {
		long n = mem(r, 1, addr, &data, 8);
		return n == 8 ? 0 : n < 0 && n != -EIO ? n : -EIO;
	}
	case PT_PEEKUSR: {
		uint64_t v;
		long e = peek_user(r, addr, &v);
		return e ? e : put((void *)data, &v, 8) ? -EFAULT : 0;
	}
	case PT_POKEUSR:
		return poke_user(r, addr, data);
	case PT_GETREGS:
		return put((void *)data, &s->regs, sizeof s->regs) ? -EFAULT : 0;
	case PT_SETREGS: {
		struct zv_pt_regs regs;
		if (get(&regs, (void *)data, sizeof regs))
			return -EFAULT;
		return set_regs(r, &regs);
	}
	case PT_GETFPREGS:
	case PT_SETFPREGS: {
		struct { void *base; uint64_t len; } iov = { (void *)data, 512 };
		uint64_t keep[2];
		memcpy(keep, &iov, sizeof iov);
		/* as GETREGSET NT_PRFPREG on an iovec of 512 bytes, on the kernel's stack */
		long got = zv_pt_cmd(r, ZV_PT_CMD_GETFP, 0, 0);
		if (got < 0)
			return got;
		if (req == PT_GETFPREGS) {
			memset(s->buf + 464, 0, 48);
			return put((void *)data, s->buf, 512) ? -EFAULT : 0;
		}
		if (get(s->buf, (void *)data, 512))
			return -EFAULT;
		return zv_pt_cmd(r, ZV_PT_CMD_SETFP, 512, 1);
	}
	case PT_GETREGSET:
	case PT_SETREGSET:
		return regset(r, req == PT_SETREGSET, (long)addr, (void *)data);
	case PT_GETSIGINFO:
		if (!s->has_si)
			return -EINVAL;
		return put((void *)data, &s->si, sizeof s->si) ? -EFAULT : 0;
	case PT_SETSIGINFO:
		if (!s->has_si)
			return -EINVAL;
		return get(&s->si, (void *)data, sizeof s->si) ? -EFAULT : 0;
	case PT_GETSIGMASK:
		if (addr != 8)
			return -EINVAL;
		return put((void *)data, &s->sigmask, 8) ? -EFAULT : 0;
	case PT_SETSIGMASK: {
		uint64_t m;
		if (addr != 8)
			return -EINVAL;
		if (get(&m, (void *)data, 8))
			return -EFAULT;
		s->sigmask = m & ~(ZV_SIGBIT(9) | ZV_SIGBIT(19));
		s->mask_dirty = 1;
		return 0;
	}
	case PT_GETEVENTMSG:
		return put((void *)data, &s->msg, 8) ? -EFAULT : 0;
	case PT_SETOPTIONS:
		return setoptions(r, data);
	case PT_GET_SYSCALL_INFO:
		return syscall_info(r, addr, (void *)data);
	case PT_CONT:
		return resume(r, ZV_PT_CONT, (long)data);
	case PT_SYSCALL:
		return resume(r, ZV_PT_SYSCALL, (long)data);
	case PT_SINGLESTEP:
		return resume(r, ZV_PT_STEP, (long)data);
	case PT_SYSEMU:
		return resume(r, ZV_PT_SYSEMU, (long)data);
	case PT_SYSEMU_SINGLESTEP:
		return resume(r, ZV_PT_SYSEMU_STEP, (long)data);
	case PT_LISTEN:
		if (!s->seized || s->kind != ZV_PT_GROUP)
			return -EIO;
		s->listening = 1;
		zv_pt_futex_wake(&s->cmd_seq); /* (a SIGCONT that came before: ptrace/stop.c continued) */
		return 0;
	case PT_DETACH: {
		long e = resume(r, ZV_PT_DETACH, (long)data);
		if (!e)
			zv_pt_drop(r);
		return e;
	}
	default:
		return -EIO;
	}
}

/* The guest's ptrace call, innermost: trace's line and a tracer's own
 * syscall stops see it as any other call. */
static int ptrace_call(long nr) { return nr == __NR_ptrace; }
ZV_LAYER(ptrace_call, 990) = { .name = "ptrace-call", .sees = ptrace_call, .call = sys_ptrace };
