/* Process calls: clone, clone3, fork, vfork, exit, exit_group, setpgid.
 * A child that shares the address space (threads, vfork, Go's
 * clone(CLONE_VM|CLONE_VFORK) with stack 0) starts on a kernel block of its
 * own and enters the guest through rt_sigreturn of a frame copied from the
 * parent's context, so its return path never touches the guest stack. A
 * child with its own address space (fork) returns through its copy of the
 * parent's frame. */
#include "zvisor.h"
#include "sys/exec_reset.h"
#include "sys/layer.h"
#include "sys/procself.h"
#include "sys/platform.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/fmt.h"
#include "lib/kmem.h"
#include "lib/procfs.h"
#include <linux/auxvec.h>
#include <linux/elf.h>
#include <linux/mman.h>
#include <linux/sched.h>

/* The process, as every start sets it up before the command line and an
 * exec's state change it. */
struct zv_proc zv_proc = { .platform = ZV_PLAT_STUBS, .count_fd = -1, .err_fd = -1, .self_fd = -1, .carry_fd = -1, .seccomp_fd = -1, .tree_fd = -1, .trace.fd = -1,
			   .rewrite_after = 1 };

/* A fatal error inside zvisor: one line on the kept stderr. */
__attribute__((noreturn)) void zv_die(int status, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	int n = zv_vsnprintf(buf, sizeof buf - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof buf - 2)
		n = sizeof buf - 2;
	buf[n++] = '\n';
	zv_write(zv_proc.err_fd >= 0 ? zv_proc.err_fd : 2, "zvisor: ", 8);
	zv_write(zv_proc.err_fd >= 0 ? zv_proc.err_fd : 2, buf, n);
	zv_exit_group(status);
}

struct start_frame {
	uint64_t pretcode;
	struct zv_ucontext uc;
};

/* The first thing a CLONE_VM child runs, on its own kernel block. */
static void child_start(void)
{
	struct zv_thread *t = zv_current();
	if ((t->fork_pid ? zv_thread_arm_as(t, t->fork_pid, t->fork_pid) : zv_thread_arm(t)) < 0)
		zv_exit_group(126);
	struct start_frame *f = (struct start_frame *)t - 1; /* the stack's top */
	zv_event_task_start(t, &f->uc);
	if (t->fast.sig_pending) /* a tracer's first stop of the new task */
		zv_signals_on_exit(t, &f->uc);
	zv_enter_frame(&f->uc);
}

/* Prepares a block whose top holds the child's entry frame: the parent's
 * guest context with rax = 0 and the child's stack; returns the host stack
 * pointer for the clone call. */
static void *prepare_child(struct zv_thread *t, struct zv_thread *c, struct zv_ucontext *uc,
			   uint64_t guest_sp, uint64_t flags)
{
	int keep_altstack = (flags & CLONE_VFORK) != 0;
	if (flags & CLONE_SIGHAND) {
		c->sighand = t->sighand;
	} else {
		zv_lock(&t->sighand->lock);
		c->own_sighand = *t->sighand;
		zv_unlock(&t->sighand->lock);
		c->own_sighand.lock = 0;
		c->sighand = &c->own_sighand;
		if (flags & CLONE_CLEAR_SIGHAND)
			zv_clear_handlers(c->sighand);
	}
	uint64_t top = (uint64_t)c; /* the child's kernel stack's top */
	struct start_frame *f = (struct start_frame *)top - 1;
	const void *pfp = (const void *)uc->mc.fpstate;
	size_t fpsize = pfp ? zv_fpstate_size(pfp) : 0;
	uint64_t fp = ((uint64_t)f - fpsize) & ~63UL;
	if (fpsize)
		memcpy((void *)fp, pfp, fpsize);
	f->pretcode = 0;
	f->uc = *uc;
	f->uc.uc_link = 0;
	f->uc.mc.fpstate = fpsize ? fp : 0;
	f->uc.mc.rax = 0;
	f->uc.mc.rsp = guest_sp;
	/* The child enters the guest right after clone's `syscall`: a SIGSYS
	 * sent to it meanwhile comes there, and is no lost trap (lost_trap). */
	c->ret_rip = f->uc.mc.rip;
	c->ret_rax = 0;
	/* rt_sigreturn installs uc_stack as the host altstack: the child's block. */
	f->uc.uc_stack = zv_kernel_stack(c);
	c->sigsys_blocked = t->sigsys_blocked;
	c->kernel_blocked = t->kernel_blocked;
	c->faults_blocked = t->faults_blocked;
	zv_event_new_task(t, c);
	zv_ids_after_clone(c, t, flags);
	if (keep_altstack)
		c->guest_ss = t->guest_ss; /* vfork keeps it; new threads start without */
	return (void *)((fp - 256) & ~15UL);
}

/* Kernel state a fork child must refresh: its pid, the lock that another
 * thread of the parent may have held, the thread count, a held SIGSYS, and
 * SUD, which the host does not carry across fork. The host gives the child
 * none of the parent's pending signals and keeps those sent to the child
 * (a kill right after fork, LTP kill11): the signals deferred in its copy
 * of the parent's block are the parent's and go; those deferred in the
 * child since the clone (t->forking: sys/signal.c defer) are its own.
 * parent_held: the parent's deferred signals that its mask held at the
 * clone, which the child's mask, a copy, holds too. pid: the child's, if
 * the host wrote it (0: ask). */
static void after_fork_child(struct zv_thread *t, uint64_t parent_held, int pid)
{
	/* and the tid: the one thread of a new process leads it */
	zv_proc.pid = zv_proc.hpid = pid > 0 ? pid : (int)zv_getpid();
	if (zv_proc.lock) /* locks are written only when held: a page written costs a copy */
		zv_proc.lock = 0;
	if (zv_proc.fold_lock)
		zv_proc.fold_lock = 0;
	if (t->sighand->lock)
		t->sighand->lock = 0;
	zv_thread_forget_dead();
	zv_procself_fork_child();
	zv_proc.nthreads = 1;
	zv_proc.stat_fast = zv_proc.stat_sigsys = zv_proc.stat_bounced = zv_proc.stat_restorers = zv_proc.stat_inexec = 0;
	zv_proc.stat_analysed = 0;
	t->tid = t->htid = t->pid = zv_proc.pid;
	zv_thread_fork_child(t); /* the list of threads: this one */
	if (t->pending_set)
		t->pending_set = 0;
	if (t->fast.sig_pending)
		t->fast.sig_pending = 0;
	asm volatile("" ::: "memory");
	t->forking = 0; /* from here on a signal defers as usual */
	asm volatile("" ::: "memory");
	uint64_t own = t->fork_own ? __atomic_exchange_n(&t->fork_own, 0, __ATOMIC_RELAXED) : 0;
	if (own) {
		__atomic_fetch_or(&t->pending_set, own, __ATOMIC_RELAXED);
		t->fast.sig_pending = 1;
	}
	uint64_t drop = parent_held & ~own;
	if (drop) { /* rare: the parent's fast call had deferred one */
		zv_sys4(__NR_rt_sigprocmask, ZV_SIG_UNBLOCK, &drop, NULL, 8);
		__atomic_fetch_and(&t->host_held, ~drop, __ATOMIC_RELAXED);
	}
	if (t->sigsys_held)
		t->sigsys_held = 0;
	zv_plat->fork_child(t); /* the platform's locks, its catch-all (SUD is not inherited) */
}

struct clone_req {
	uint64_t flags, stack, stack_size, tls;
	void *ptid, *ctid;
	struct clone_args *args3; /* clone3: the guest's struct, copied at its size, or NULL */
	size_t size3;
};

/* The host's fork copies the page table entries of a file mapping only if
 * the mapping holds an anonymous page; otherwise the child faults in each
 * page of kernel text it runs (4 in a child that exits, a dozen more in one
 * that execs). One byte of the text written over itself, once per image
 * before its first fork, gives the text such a page: two mprotects and a
 * page copied once, not faults in every child. The mprotects cover the
 * whole text segment (a part of it would stay a mapping of its own), which
 * stays executable throughout (another thread may be running there); one
 * thread only does it (another's mprotect back would fault the write). */
extern char __executable_start[];
static void text_into_forks(void)
{
	static int claimed;
	if (__atomic_load_n(&claimed, __ATOMIC_RELAXED) || __atomic_exchange_n(&claimed, 1, __ATOMIC_ACQ_REL))
		return;
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)__executable_start;
	const Elf64_Phdr *ph = (const Elf64_Phdr *)(__executable_start + eh->e_phoff);
	for (int i = 0; i < eh->e_phnum; i++) {
		if (ph[i].p_type != PT_LOAD || !(ph[i].p_flags & PF_X))
			continue;
		uint8_t *lo = (uint8_t *)(ph[i].p_vaddr & ~4095UL);
		size_t len = ((ph[i].p_vaddr + ph[i].p_memsz + 4095) & ~4095UL) - (uint64_t)lo;
		if (zv_mprotect(lo, len, PROT_READ | PROT_WRITE | PROT_EXEC) != 0)
			return;
		*(volatile uint8_t *)lo = *(volatile uint8_t *)lo;
		zv_mprotect(lo, len, PROT_READ | PROT_EXEC);
		return;
	}
}

static long do_clone(struct zv_thread *t, struct zv_ucontext *uc, struct clone_req *q)
{
	uint64_t flags = q->flags;
	if ((flags & (CLONE_THREAD | CLONE_FILES)) && zv_proc.nthreads == 1)
		zv_procself_before_sharing(); /* the guest's opens may race the kernel's from now on */
	if (!(flags & CLONE_VM)) {
		/* fork-like: the child returns through its copy of this frame. */
		long r;
		text_into_forks();
		if (zv_plat->before_fork)
			zv_plat->before_fork();
		zv_event_clone_before(t, NULL, flags);
		/* Signals stay unblocked: the child tells its own from the
		 * parent's (after_fork_child). */
		uint64_t held = t->host_held;
		t->forking = zv_proc.hpid;
		/* The child's pid, written by the host into the child's memory
		 * before it runs (CLONE_CHILD_SETTID): where the guest asked
		 * for it, else, when the guest's flags leave room, in the
		 * block. Saves the child a getpid. */
		const int *pidp = NULL;
		if (q->args3) {
			q->args3->stack = 0;
			q->args3->stack_size = 0;
			if (q->args3->flags & CLONE_CHILD_SETTID)
				pidp = (const int *)q->args3->child_tid;
			r = zv_sys2(__NR_clone3, q->args3, q->size3);
		} else {
			void *ctid = q->ctid;
			uint64_t hflags = flags;
			if (flags & CLONE_CHILD_SETTID) {
				pidp = q->ctid;
			} else if (!(flags & CLONE_CHILD_CLEARTID)) {
				hflags |= CLONE_CHILD_SETTID;
				ctid = (void *)(pidp = &t->fork_pid);
			}
			r = zv_sys5(__NR_clone, hflags, 0, q->ptid, ctid, q->tls);
		}
		if (r != 0)
			t->forking = 0;
		if (r > 0)
			zv_exec_note_clone(flags);
		if (r == 0) {
			int pid = 0;
			if (pidp == &t->fork_pid)
				pid = t->fork_pid;
			else if (pidp && zv_guest_copy(&pid, pidp, sizeof pid, (uint64_t)pidp) != 0)
				pid = 0;
			after_fork_child(t, held, pid);
			zv_exec_note_fork_child(t, flags);
			zv_event_fork_child(t);
			zv_ids_after_clone(t, t, flags);
			if (flags & CLONE_CLEAR_SIGHAND)
				zv_clear_handlers(t->sighand);
			if (q->stack)
				uc->mc.rsp = q->stack + q->stack_size;
		}
		if (r != 0)
			zv_event_clone_after(t, uc, r, flags);
		return r;
	}
	struct zv_thread *c = zv_thread_alloc();
	if (!c)
		return -ENOMEM;
	uint64_t guest_sp = q->stack ? q->stack + q->stack_size : uc->mc.rsp;
	int shares_stack = (flags & CLONE_VFORK) != 0;
	void *ksp = prepare_child(t, c, uc, guest_sp, flags);
	/* A CLONE_VM child that is not a thread (vfork, Go's exec helper) is
	 * another process: it shares this memory but not the thread count,
	 * and its block is freed here, not reused from the dead list. */
	c->is_thread = (flags & CLONE_THREAD) != 0;
	c->vfork_child = !c->is_thread && shares_stack;
	c->files_shared = !c->is_thread && (flags & CLONE_FILES);
	if (!c->is_thread && !shares_stack)
		zv_plat->shared_vm(); /* a second task on this memory, for as long as it likes */
	if (c->is_thread)
		__atomic_fetch_add(&zv_proc.nthreads, 1, __ATOMIC_RELAXED);
	zv_event_clone_before(t, c, flags);
	/* The child starts with every signal blocked until its frame restores
	 * the guest's mask: no handler may run before its altstack exists. */
	uint64_t saved;
	zv_host_set_mask(~0UL, &saved);
	/* A vfork child's host execve leaves the fds it made for its new
	 * image (sys/exec.c) in this memory: numbers of its own fd table. */
	int exec_fds[3] = { zv_proc.tree_fd, zv_proc.seccomp_fd, zv_proc.carry_fd };
	/* A child that is not a thread leads a process of its own: the host
	 * writes its pid, its tid too, into its block before it runs
	 * (CLONE_CHILD_SETTID, in the child's pid namespace), where the
	 * guest's flags leave room, as for a fork child: no getpid, gettid. */
	uint64_t settid = !c->is_thread && !(flags & (CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID)) ? CLONE_CHILD_SETTID : 0;
	long r;
	if (q->args3) {
		q->args3->stack = zv_kernel_stack(c).ss_sp;
		q->args3->stack_size = (uint64_t)ksp - q->args3->stack;
		if (settid) {
			q->args3->flags |= settid;
			q->args3->child_tid = (uint64_t)&c->fork_pid;
		}
		r = zv_clone3_raw(q->args3, q->size3, child_start);
	} else {
		r = zv_clone_raw(flags | settid, ksp, q->ptid, settid ? &c->fork_pid : q->ctid, q->tls, child_start);
	}
	zv_host_set_mask(saved, NULL);
	if (shares_stack) {
		zv_proc.tree_fd = exec_fds[0];
		zv_proc.seccomp_fd = exec_fds[1];
		zv_proc.carry_fd = exec_fds[2];
	}
	if (r > 0)
		zv_exec_note_clone(flags);
	/* A vfork child has exec'd or exited by now; its block is free again.
	 * Blocks of threads stay: a thread cannot unmap its own stack. */
	if (r < 0 && c->is_thread)
		__atomic_fetch_sub(&zv_proc.nthreads, 1, __ATOMIC_RELAXED);
	if (r < 0 || shares_stack)
		zv_thread_free(c);
	zv_event_clone_after(t, uc, r, flags);
	if (r > 0 && shares_stack)
		zv_event_vfork_done(t, uc, r);
	return r;
}

long zv_sys_clone(struct zv_call *c)
{
	struct zv_thread *t = c->t;
	struct zv_ucontext *uc = c->uc;
	long *a = c->a;
	struct clone_req q = { .flags = (uint64_t)a[0], .stack = (uint64_t)a[1],
			       .ptid = (void *)a[2], .ctid = (void *)a[3], .tls = (uint64_t)a[4] };
	return do_clone(t, uc, &q);
}

/* Whether the host would take clone3's stack: both fields or neither, and
 * the whole stack in user space (47-bit; a 5-level-paging host would take
 * more). */
static int clone3_stack_ok(const struct clone_args *ca)
{
	if (!ca->stack)
		return !ca->stack_size;
	uint64_t end = ca->stack + ca->stack_size;
	return ca->stack_size && end > ca->stack && end <= 0x7ffffffff000UL;
}

/* clone3 of a struct whose end the guest cannot read: the host's answer
 * (EFAULT, or E2BIG for a nonzero byte of a tail it does not know, which it
 * checks first) to the bytes that can be read, copied to end where a hole
 * begins, as the guest's do. It clones nothing: it cannot read them all. */
static long clone3_unreadable(uint64_t p, size_t size, char *copy)
{
	size_t n = 0;
	while (n < size) {
		size_t chunk = 4096 - ((p + n) & 4095);
		if (chunk > size - n)
			chunk = size - n;
		if (zv_guest_copy(copy + n, (const void *)(p + n), chunk, p + n))
			break;
		n += chunk;
	}
	char *m = zv_kmap(8192, 4096, -1);
	if ((unsigned long)m > -4096UL)
		return (long)m;
	long r = zv_mprotect(m + 4096, 4096, PROT_NONE);
	if (r == 0) {
		memcpy(m + 4096 - n, copy, n);
		r = zv_sys2(__NR_clone3, m + 4096 - n, size);
	}
	zv_kunmap(m, 8192);
	return r;
}

/* clone3 reads the guest's struct at the guest's size, as the host does,
 * and hands the host that copy and that size: a tail the host does not know
 * (E2BIG unless zero) and every field reach it unchanged, and it finds the
 * first error in its own order. Only the stack is the kernel's. */
long zv_sys_clone3(struct zv_call *c)
{
	struct zv_thread *t = c->t;
	struct zv_ucontext *uc = c->uc;
	long *a = c->a;
	uint64_t p = (uint64_t)a[0];
	size_t size = (size_t)a[1];
	if (size < CLONE_ARGS_SIZE_VER0 || size > 4096)
		return zv_sys2(__NR_clone3, p, size); /* EINVAL or E2BIG before it reads */
	uint64_t copy[4096 / 8];
	if (zv_bad_guest_ptr(p))
		return -EFAULT;
	if (zv_guest_copy(copy, (const void *)p, size, p))
		return clone3_unreadable(p, size, (char *)copy);
	struct clone_args *ca = (struct clone_args *)copy;
	if (!clone3_stack_ok(ca)) {
		/* The host must refuse it, but perhaps for an earlier reason: a
		 * stack every kernel refuses stands for the guest's. */
		ca->stack = 0;
		ca->stack_size = 1;
		return zv_sys2(__NR_clone3, ca, size);
	}
	struct clone_req q = { .flags = ca->flags, .stack = ca->stack, .stack_size = ca->stack_size,
			       .args3 = ca, .size3 = size };
	return do_clone(t, uc, &q);
}

long zv_sys_fork(struct zv_call *c)
{
	struct zv_thread *t = c->t;
	struct zv_ucontext *uc = c->uc;
	struct clone_req q = { .flags = 17 /* SIGCHLD */ };
	return do_clone(t, uc, &q);
}

/* Whether guest call nr is a plain fork (fork, or clone without CLONE_VM,
 * CLONE_VFORK or a new stack), which the fast path makes itself instead of
 * bouncing: its child, a copy of this memory, returns through its copy of
 * the fast entry's stack and %gs area as the parent does, and neither
 * needs a signal frame. The parent stays its memory's only task, so SUD may
 * stay off (DESIGN "Jump stubs and SUD off", condition 3). */
int zv_sys_plain_fork(long nr, const struct zv_ucontext *uc)
{
	if (nr == __NR_fork)
		return 1;
	return nr == __NR_clone && !(uc->mc.rdi & (CLONE_VM | CLONE_VFORK)) && !uc->mc.rsi;
}

long zv_sys_vfork(struct zv_call *c)
{
	struct zv_thread *t = c->t;
	struct zv_ucontext *uc = c->uc;
	struct clone_req q = { .flags = CLONE_VM | CLONE_VFORK | 17 };
	return do_clone(t, uc, &q);
}

/* When the process ends, the first guest process prints the features'
 * reports (--count's), each on the stderr zvisor started with; if the
 * guest took that fd's number when no other was free, on the guest's fd
 * 2. Every process prints --stats. */
void zv_report_at_exit(void)
{
	int fd = zv_proc.err_fd >= 0 ? zv_proc.err_fd : 2;
	long pid = zv_current()->pid; /* not zv_proc.pid: a vfork child shares it */
	if (zv_proc.stats) {
		unsigned long rewritten, uncovered;
		int taint;
		zv_plat->stats(&rewritten, &uncovered, &taint);
		zv_dprintf(fd, "zvisor: stats: pid=%ld fast=%lu sigsys=%lu bounced=%lu rewritten=%lu sudoff=%d uncovered=%lu taint=%d "
			   "restorers=%lu analysed=%lu inexec=%lu\n",
			   pid, zv_proc.stat_fast, zv_proc.stat_sigsys, zv_proc.stat_bounced,
			   rewritten, zv_current()->sud_off, uncovered, taint,
			   zv_proc.stat_restorers, zv_proc.stat_analysed, zv_proc.stat_inexec);
	}
	zv_event_report(fd, pid == zv_proc.leader_pid);
}

/* setpgid on a child that has made an execve: EACCES natively (execve
 * clears the task's PF_FORKNOEXEC). An image loaded in the process
 * (kernel/inexec.c) made no host execve, so the host would change that
 * child's group. zvisor's image is linked at a fixed address, the same in
 * every process of the run: the child's count of execs made in it since
 * its fork (zv_proc.stat_inexec, zeroed by fork) is read there with
 * process_vm_readv, keyed by its host pid. A child of ours in our session
 * that made one gets EACCES, as natively (the checks before, ESRCH and
 * EPERM, are the host's: anything else goes to the host). A child that
 * cannot be read (another user's, Yama's scope 2) or made its exec on the
 * host goes to the host, which knows. */
static int execd_child(int pid)
{
	int hpid = 0;
	unsigned long inexec = 0;
	struct { void *base; size_t len; } local[2] = { { &hpid, sizeof hpid }, { &inexec, sizeof inexec } },
					   remote[2] = { { &zv_proc.hpid, sizeof hpid }, { &zv_proc.stat_inexec, sizeof inexec } };
	if (zv_sys6(__NR_process_vm_readv, pid, (long)local, 2, (long)remote, 2, 0) != sizeof hpid + sizeof inexec ||
	    hpid != pid || !inexec)
		return 0;
	char buf[1024];
	const char *f = zv_procfs_stat_fields(pid, buf, sizeof buf); /* state ppid pgrp session */
	if (!f || !(f = zv_strchr(f, ' ')))
		return 0;
	long ppid = zv_parse_dec(f + 1, &f);
	if (ppid != zv_proc.hpid || *f != ' ' || !(f = zv_strchr(f + 1, ' ')))
		return 0;
	long sid = zv_parse_dec(f + 1, &f);
	return sid == zv_sys1(__NR_getsid, 0);
}

long zv_sys_setpgid(struct zv_call *c)
{
	int pid = (int)c->a[0];
	if (pid > 0 && pid != zv_proc.hpid && execd_child(pid))
		return -EACCES;
	return zv_host_call(c->t, __NR_setpgid, c->a[0], c->a[1], 0, 0, 0, 0);
}

long zv_sys_exit_group(struct zv_call *c)
{
	struct zv_thread *t = c->t;
	long *a = c->a;
	zv_event_exit(t, (int)a[0], 0);
	zv_report_at_exit();
	zv_exit_group((int)a[0]);
}

long zv_sys_exit(struct zv_call *c)
{
	struct zv_thread *t = c->t;
	long *a = c->a;
	/* Signals deferred to this thread go back to the process, where the
	 * host hands them to a thread that lives on. */
	zv_host_set_mask(~0UL, NULL);
	for (int sig = 1; sig <= 64; sig++)
		if (t->pending_set & ZV_SIGBIT(sig))
			if (zv_sys3(__NR_rt_sigqueueinfo, zv_getpid(), sig, &t->pending_info[sig]) < 0)
				zv_sys2(__NR_kill, zv_getpid(), sig); /* the host refuses kernel si_codes from a thread */
	t->pending_set = 0;
	if (!t->is_thread) {
		zv_event_exit(t, (int)a[0], 0); /* a process of its own ends: "+++ exited" */
		for (;;) /* a vfork-style child: its parent frees the block */
			zv_sys1(__NR_exit, a[0]);
	}
	t->exit_alone = 1;
	zv_event_exit(t, (int)a[0], 0); /* strace -f shows each thread's end */
	if (__atomic_sub_fetch(&zv_proc.nthreads, 1, __ATOMIC_ACQ_REL) == 0)
		zv_report_at_exit();
	zv_thread_retire(t);
	for (;;)
		zv_sys1(__NR_exit, a[0]);
}

/* Whether the host lets user code read and write the fs and gs bases
 * itself (AT_HWCAP2's HWCAP2_FSGSBASE): rdfsbase instead of arch_prctl. */
int zv_host_fsgsbase(void)
{
	static int known; /* 0: not looked yet, 1: no, 2: yes */
	if (!known) {
		known = 1;
		for (const uint64_t *a = zv_proc.host_auxv; a[0] != AT_NULL; a += 2)
			if (a[0] == AT_HWCAP2 && (a[1] & 2))
				known = 2;
	}
	return known == 2;
}
