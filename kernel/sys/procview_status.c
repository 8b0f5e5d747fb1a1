/* /proc/self/status (and its task forms) as the guest would see it
 * natively (sys/procview.c serves it): the host's text, byte for byte, but
 * for the fields that show zvisor: the signal masks and dispositions (the
 * host's hold zvisor's handlers for SIGSYS, SIGSEGV, SIGBUS and
 * --checkpoint-on's signal, and its own masks), TracerPid, and Seccomp and
 * Seccomp_filters (the guest's filters are run by the kernel; the host's
 * are the seccomp platform's); the pids (Pid, Tgid, PPid, NStgid, NSpid)
 * of a restored tree, as its programs know them; and, through a hook, the
 * lines of virtual ids (Uid, Gid, Groups, Cap*). Another process's status,
 * marked only where ids are virtual (zv_ids_other_hook) or pids a restored
 * tree's, keeps the host's text but for those lines. */
#include "zvisor.h"
#include "sys/layer.h"
#include "sys/procview.h"
#include "lib/string.h"
#include "lib/fmt.h"
#include "lib/syscall.h"

#define SIGSYS_BIT (1UL << 30)


/* The dispositions the guest set: ignored (ign) or caught. */
static void dispositions(struct zv_thread *t, uint64_t *ign, uint64_t *cgt)
{
	struct zv_sighand *sh = t->sighand;
	*ign = *cgt = 0;
	for (int sig = 1; sig <= 64; sig++) {
		uint64_t h = sh->act[sig].handler;
		if (h == ZV_SIG_IGN)
			*ign |= 1UL << (sig - 1);
		else if (h != ZV_SIG_DFL)
			*cgt |= 1UL << (sig - 1);
	}
}

/* The calling thread's mask as the guest believes it. */
static uint64_t own_mask(struct zv_thread *t, struct zv_call *c)
{
	if (c->uc && c->uc != &t->fast.uc) /* a signal frame: its mask is the guest's */
		return zv_guest_mask(t, c->uc);
	uint64_t m = 0;
	zv_sys4(__NR_rt_sigprocmask, 0 /* SIG_BLOCK */, NULL, &m, 8);
	return (m & ~t->host_held & ~zv_kernel_signals()) | t->faults_open | t->kernel_blocked |
	       (t->sigsys_blocked ? SIGSYS_BIT : 0);
}

static uint64_t hex_value(const char *p)
{
	const char *e;
	while (*p == '\t' || *p == ' ')
		p++;
	return zv_parse_hex(p, &e);
}

void zv_pv_guest_sigs(struct zv_thread *t, struct zv_call *c, int tid, uint64_t sig[4])
{
	int own = tid == t->htid;
	struct zv_thread *o = own ? t : zv_thread_find(tid);
	if (own)
		sig[0] |= t->pending_set | (t->sigsys_held ? SIGSYS_BIT : 0);
	sig[1] = own ? own_mask(t, c) : sig[1] & ~zv_kernel_signals();
	if (o && !own) /* the bits the kernel keeps virtual */
		sig[1] |= __atomic_load_n(&o->faults_open, __ATOMIC_RELAXED) | o->kernel_blocked |
			  (o->sigsys_blocked ? SIGSYS_BIT : 0);
	dispositions(t, &sig[2], &sig[3]);
}

#define KEY(k) (kl == sizeof k - 1 && !memcmp(line, k, kl))

static int pid_key(const char *line, size_t kl)
{
	return KEY("Tgid:") || KEY("Pid:") || KEY("PPid:") || KEY("NStgid:") || KEY("NSpid:");
}

/* A line of pids: a restored tree's are the ones its programs know
 * (cr/pids.c); 0 to keep the host's. */
static int pid_line(const char *line, size_t kl, char *buf, size_t size)
{
	const char *e, *v = line + kl;
	while (*v == '\t' || *v == ' ')
		v++;
	long id = zv_parse_dec(v, &e);
	if (e == v || (*e && *e != '\n') || zv_guest_id(id) == id || kl + 16 > size)
		return 0;
	memcpy(buf, line, kl);
	return (int)kl + zv_snprintf(buf + kl, size - kl, "\t%d", (int)zv_guest_id(id));
}

/* The line "Key:\tvalue" rewritten into buf, or 0 to keep the host's. */
static int rewrite(struct zv_thread *t, struct zv_call *c, int tid, const char *line, char *buf, size_t size)
{
	int own = tid == t->htid;
	const char *v = zv_strchr(line, ':');
	if (!v)
		return 0;
	v++;
	size_t kl = (size_t)(v - line);
	uint64_t sig[4] = { 0, 0, 0, 0 };
	int which = KEY("SigPnd:") ? 0 : KEY("SigBlk:") ? 1 : KEY("SigIgn:") ? 2 : KEY("SigCgt:") ? 3 : -1;
	if (which >= 0 && (which || own)) {
		sig[which] = hex_value(v);
		zv_pv_guest_sigs(t, c, tid, sig);
		memcpy(buf, line, kl); /* "SigXxx:" */
		return (int)kl + zv_snprintf(buf + kl, size - kl, "\t%016lx", (unsigned long)sig[which]);
	}
	if (KEY("TracerPid:")) { /* the guest's ptrace: the tracer's guest pid */
		struct zv_thread *o = own ? t : zv_thread_find(tid);
		return zv_snprintf(buf, size, "TracerPid:\t%d", o ? o->tracer_pid : 0);
	}
	if (pid_key(line, kl))
		return pid_line(line, kl, buf, size);
	if (KEY("Seccomp:"))
		return zv_snprintf(buf, size, "Seccomp:\t%d", zv_proc.seccomp.mode);
	if (KEY("Seccomp_filters:"))
		return zv_snprintf(buf, size, "Seccomp_filters:\t%d", zv_proc.seccomp.nfilters);
	struct zv_thread *o = own ? t : zv_thread_find(tid);
	if (zv_ids_status_hook && o && o->cred_valid)
		return zv_ids_status_hook(&o->cred, line, kl, buf, size);
	return 0;
}

/* Another process's line: its pids and ids (oc) rewritten, or 0 to keep it. */
static int other_line(const struct zv_creds *oc, const char *line, char *buf, size_t size)
{
	const char *v = zv_strchr(line, ':');
	if (!v)
		return 0;
	size_t kl = (size_t)(v + 1 - line);
	if (pid_key(line, kl))
		return pid_line(line, kl, buf, size);
	if (!oc || !zv_ids_status_hook)
		return 0;
	return zv_ids_status_hook(oc, line, kl, buf, size);
}

int zv_pv_filter_status(struct zv_thread *t, struct zv_call *c, int tid, int other, const char *raw, size_t len,
			struct zv_pv_buf *out)
{
	struct zv_pv_lines it = { raw, len, 0 };
	struct zv_creds creds;
	const struct zv_creds *oc = other && zv_ids_other_hook && zv_ids_other_hook(tid, raw, len, &creds) ? &creds : NULL;
	size_t n;
	int nl;
	for (const char *line; (line = zv_pv_next_line(&it, &n, &nl));) {
		char buf[512]; /* a Groups line of virtual ids */
		int w = other ? other_line(oc, line, buf, sizeof buf) : rewrite(t, c, tid, line, buf, sizeof buf);
		if ((w > 0 ? zv_pv_put(out, buf, (size_t)w) : zv_pv_put(out, line, n)) < 0 ||
		    (nl && zv_pv_put(out, "\n", 1) < 0))
			return -ENOMEM;
	}
	return 0;
}
