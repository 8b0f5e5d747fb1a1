/* The process's timers and environment in a checkpoint (cr/resources.h):
 * section "timers" holds the itimers and the POSIX timers (their ids,
 * clock, sigevent and remaining time, read from /proc/self/timers and
 * timer_gettime), section "procenv" the rlimits, umask and cwd. Layouts:
 * docs/CHECKPOINT.md, "Timers and the process's environment". POSIX timers
 * come back with their ids through PR_TIMER_CREATE_RESTORE_IDS (Linux
 * 6.16); remaining times are relative, so a timer fires as long after the
 * restore as it had left at the checkpoint. */
#include "cr/procfile.h"
#include "cr/resources.h"
#include "cr/resutil.h"
#include "lib/fmt.h"
#include "lib/string.h"
#include "lib/syscall.h"

#define TIMERS_MAGIC 0x5a56544du  /* "ZVTM" */
#define PROCENV_MAGIC 0x5a565045u /* "ZVPE" */
#define VERSION 1
#define NSEC 1000000000LL
#define NLIMITS 16
#define PR_TIMER_CREATE_RESTORE_IDS_ 77
#define SIGEV_SIGNAL_ 0
#define SIGEV_NONE_ 1
#define SIGEV_THREAD_ID_ 4
#define TIMERS_SIZE (1UL << 20)

struct timers_head {
	uint32_t magic, version;
	uint32_t ntimers;
	uint32_t reserved;
	struct { int64_t value_ns, interval_ns; } itimer[3]; /* ITIMER_REAL, VIRTUAL, PROF */
};

struct ptimer {
	int32_t id, clockid;
	int32_t signo, notify;      /* SIGEV_SIGNAL, SIGEV_NONE or SIGEV_THREAD_ID */
	int32_t tid;                /* SIGEV_THREAD_ID: the host tid at the checkpoint */
	int32_t reserved;
	uint64_t value;             /* sigev_value */
	int64_t value_ns, interval_ns;
};

struct procenv_head {
	uint32_t magic, version;
	uint32_t umask, cwdlen;     /* the cwd (with its NUL) follows the limits */
	struct { uint64_t cur, max; } rlim[NLIMITS];
};

struct its { int64_t isec, insec, vsec, vnsec; };
struct itv { int64_t isec, iusec, vsec, vusec; };
struct ksigevent {
	uint64_t value;
	int32_t signo, notify;
	int32_t tid;
	int32_t pad[11];
};

static long save_procenv(struct zv_cr_out *o);

/* Parses /proc/self/timers (read into buf) into t; the count or -1. */
static long parse_timers(const char *buf, struct ptimer *t, unsigned max)
{
	unsigned n = 0;
	for (const char *l = buf; l; l = zv_cr_next_line(l)) {
		if (!zv_startswith(l, "ID:"))
			continue;
		if (n == max)
			return -1;
		struct ptimer *p = &t[n++];
		*p = (struct ptimer){ .id = (int32_t)zv_cr_dec(l + 3, NULL) };
		const char *sig = zv_cr_field(l, "signal:"), *notify = zv_cr_field(l, "notify:");
		const char *clock = zv_cr_field(l, "ClockID:"), *e;
		if (!sig || !notify || !clock)
			return -1;
		p->signo = (int32_t)zv_cr_dec(sig, &e);
		p->value = *e == '/' ? zv_cr_hex(e + 1, NULL) : 0;
		p->notify = zv_startswith(notify, "none") ? SIGEV_NONE_ : SIGEV_SIGNAL_;
		const char *who = zv_strchr(notify, '/');
		if (who && zv_startswith(who + 1, "tid.")) {
			p->notify = SIGEV_THREAD_ID_;
			p->tid = (int32_t)zv_cr_dec(who + 5, NULL);
		}
		p->clockid = (int32_t)zv_cr_dec(clock, NULL);
	}
	return n;
}

/* A CPU-time clock (clockid < 0: ~pid << 3 | per-thread bit 4 | type)
 * that is this process's own (pid 0, as the kernel records
 * CLOCK_PROCESS_CPUTIME_ID, or the process's host pid, hpid) is made again by
 * the restored process as pid 0's: 0 (*clockid rewritten so), or -1 for
 * another process's clock or a thread's (/proc/self/timers does not say
 * which thread created a timer on its own clock). Other clocks: 0. */
static int own_cpu_clock(int32_t *clockid, int hpid)
{
	if (*clockid >= 0)
		return *clockid > 11 ? -1 : 0;
	int pid = ~(*clockid >> 3);
	if ((*clockid & 7) > 2 || (pid != 0 && pid != hpid))
		return -1;
	*clockid = (int32_t)((~0u << 3) | (uint32_t)(*clockid & 3));
	return 0;
}

long zv_cr_save_timers(struct zv_cr_out *o)
{
	struct zv_cr_buf b = { 0 };
	char *buf = zv_cr_kalloc(TIMERS_SIZE);
	long r = -1;
	if (!buf)
		return zv_cr_refuse(o, "out of memory saving the timers");
	struct timers_head *h = zv_cr_buf_add(&b, sizeof *h);
	long len = zv_cr_read_file("/proc/self/timers", buf, TIMERS_SIZE);
	unsigned max = TIMERS_SIZE / 64; /* a timer's lines are longer than 64 bytes */
	struct ptimer *t = zv_cr_buf_add(&b, max * sizeof *t);
	if (!h || !t) {
		r = zv_cr_refuse(o, "out of memory saving the timers");
		goto out;
	}
	h = (void *)b.p; /* the buffer may have moved */
	t = (void *)(h + 1);
	long n = len < 0 ? 0 : parse_timers(buf, t, max);
	if (len < 0 && len != -ENOENT) {
		r = zv_cr_refuse(o, "cannot read /proc/self/timers: %s", zv_strerror((int)-len));
		goto out;
	}
	if (n < 0) {
		r = zv_cr_refuse(o, "cannot parse /proc/self/timers");
		goto out;
	}
	*h = (struct timers_head){ .magic = TIMERS_MAGIC, .version = VERSION, .ntimers = (uint32_t)n };
	for (long i = 0; i < n; i++) {
		struct its its;
		if (own_cpu_clock(&t[i].clockid, (int)zv_getpid()) < 0) {
			r = zv_cr_refuse(o, "POSIX timer %d: its clock (%d) is %s CPU clock", t[i].id, t[i].clockid,
					 t[i].clockid & 4 ? "a thread's" : "another process's");
			goto out;
		}
		if (zv_sys2(__NR_timer_gettime, t[i].id, &its) < 0) {
			r = zv_cr_refuse(o, "POSIX timer %d: timer_gettime failed", t[i].id);
			goto out;
		}
		t[i].value_ns = its.vsec * NSEC + its.vnsec;
		t[i].interval_ns = its.isec * NSEC + its.insec;
	}
	for (int w = 0; w < 3; w++) {
		struct itv v;
		zv_sys2(__NR_getitimer, w, &v);
		h->itimer[w].value_ns = v.vsec * NSEC + v.vusec * 1000;
		h->itimer[w].interval_ns = v.isec * NSEC + v.iusec * 1000;
	}
	r = zv_cr_put(o, "timers", b.p, sizeof *h + n * sizeof *t);
out:
	zv_cr_kfree(buf, TIMERS_SIZE);
	zv_cr_buf_free(&b);
	if (r < 0)
		return -1;
	return save_procenv(o);
}

static long save_procenv(struct zv_cr_out *o)
{
	struct { struct procenv_head h; char cwd[4096]; } e = { 0 };
	e.h.magic = PROCENV_MAGIC;
	e.h.version = VERSION;
	for (int i = 0; i < NLIMITS; i++)
		zv_sys4(__NR_prlimit64, 0, i, NULL, &e.h.rlim[i]);
	long m = zv_sys1(__NR_umask, 022);
	zv_sys1(__NR_umask, m);
	e.h.umask = (uint32_t)m;
	long n = zv_sys2(__NR_getcwd, e.cwd, sizeof e.cwd);
	if (n < 0 || e.cwd[0] != '/')
		return zv_cr_refuse(o, "the working directory cannot be named (deleted or outside the root)");
	e.h.cwdlen = (uint32_t)n;
	return zv_cr_put(o, "procenv", &e, sizeof e.h + n) < 0 ? -1 : 0;
}

/* Timers the restorer made itself would hold ids the image's may need. */
static void delete_own_timers(void)
{
	char *buf = zv_cr_kalloc(TIMERS_SIZE);
	if (!buf)
		return;
	if (zv_cr_read_file("/proc/self/timers", buf, TIMERS_SIZE) > 0)
		for (const char *l = buf; l; l = zv_cr_next_line(l))
			if (zv_startswith(l, "ID:"))
				zv_sys1(__NR_timer_delete, zv_cr_dec(l + 3, NULL));
	zv_cr_kfree(buf, TIMERS_SIZE);
}

static long make_timer(struct zv_cr_in *in, const struct ptimer *t, int restore_ids)
{
	struct ksigevent sev = { .value = t->value, .signo = t->signo, .notify = t->notify };
	if (t->notify == SIGEV_THREAD_ID_)
		sev.tid = zv_cr_thread_tid(t->tid);
	int id = t->id; /* with restore ids on, the kernel takes the id from here */
	long r = zv_sys3(__NR_timer_create, t->clockid, &sev, &id);
	if (r < 0)
		return zv_cr_in_refuse(in, "POSIX timer %d: cannot be made again: %s", t->id, zv_strerror((int)-r));
	if (id != t->id)
		return zv_cr_in_refuse(in, "POSIX timer %d came back as %d%s", t->id, id,
				       restore_ids ? "" : " (the host has no PR_TIMER_CREATE_RESTORE_IDS: Linux 6.16+)");
	if (t->value_ns) {
		struct its its = { t->interval_ns / NSEC, t->interval_ns % NSEC, t->value_ns / NSEC, t->value_ns % NSEC };
		if ((r = zv_sys4(__NR_timer_settime, id, 0, &its, NULL)) < 0)
			return zv_cr_in_refuse(in, "POSIX timer %d: cannot be set again: %s", t->id,
					       zv_strerror((int)-r));
	}
	return 0;
}

static const struct timers_head *timers_head(struct zv_cr_in *in, const uint8_t *p, uint64_t len)
{
	const struct timers_head *h = (const void *)p;
	if (len < sizeof *h || h->magic != TIMERS_MAGIC || h->version != VERSION ||
	    (len - sizeof *h) / sizeof(struct ptimer) < h->ntimers) {
		zv_cr_in_refuse(in, "the image's timers section is damaged");
		return NULL;
	}
	return h;
}

/* The POSIX timers aimed at a thread (threads == 1) or at the process. */
static long make_timers(struct zv_cr_in *in, const struct timers_head *h, int threads)
{
	const struct ptimer *t = (const void *)(h + 1);
	int restore_ids = h->ntimers && zv_sys5(__NR_prctl, PR_TIMER_CREATE_RESTORE_IDS_, 1, 0, 0, 0) == 0;
	long r = 0;
	for (uint32_t i = 0; i < h->ntimers && r == 0; i++)
		if ((t[i].notify == SIGEV_THREAD_ID_) == threads)
			r = make_timer(in, &t[i], restore_ids);
	if (restore_ids)
		zv_sys5(__NR_prctl, PR_TIMER_CREATE_RESTORE_IDS_, 0, 0, 0, 0);
	return r;
}

static long restore_timers(struct zv_cr_in *in, const uint8_t *p, uint64_t len)
{
	const struct timers_head *h = timers_head(in, p, len);
	if (!h)
		return -1;
	delete_own_timers();
	long r = make_timers(in, h, 0);
	for (int w = 0; w < 3 && r == 0; w++) {
		int64_t v = h->itimer[w].value_ns, iv = h->itimer[w].interval_ns;
		struct itv itv = { iv / NSEC, iv % NSEC / 1000, v / NSEC, v % NSEC / 1000 };
		if (v && itv.vsec == 0 && itv.vusec == 0)
			itv.vusec = 1; /* under a microsecond left: still armed */
		if (v)
			zv_sys3(__NR_setitimer, w, &itv, NULL);
	}
	return r;
}

static long restore_thread_timers(struct zv_cr_in *in, const uint8_t *p, uint64_t len)
{
	const struct timers_head *h = timers_head(in, p, len);
	return h ? make_timers(in, h, 1) : -1;
}

static long restore_procenv(struct zv_cr_in *in, const uint8_t *p, uint64_t len)
{
	const struct procenv_head *h = (const void *)p;
	if (len < sizeof *h || h->magic != PROCENV_MAGIC || h->version != VERSION ||
	    len - sizeof *h < h->cwdlen || !h->cwdlen || p[sizeof *h + h->cwdlen - 1])
		return zv_cr_in_refuse(in, "the image's procenv section is damaged");
	for (int i = 0; i < NLIMITS; i++) {
		struct { uint64_t cur, max; } lim = { h->rlim[i].cur, h->rlim[i].max }, now;
		if (zv_sys4(__NR_prlimit64, 0, i, &lim, NULL) == -EPERM &&
		    zv_sys4(__NR_prlimit64, 0, i, NULL, &now) == 0) {
			/* A hard limit above this process's cannot be raised
			 * without privilege: keep its own. */
			lim.max = now.max;
			if (lim.cur > lim.max)
				lim.cur = lim.max;
			zv_sys4(__NR_prlimit64, 0, i, &lim, NULL);
		}
	}
	zv_sys1(__NR_umask, h->umask);
	const char *cwd = (const char *)(h + 1);
	long r = zv_sys1(__NR_chdir, cwd);
	if (r < 0)
		return zv_cr_in_refuse(in, "the working directory %s: %s", cwd, zv_strerror((int)-r));
	return 0;
}

/* Section name's bytes through fn, released after. */
static long with_section(struct zv_cr_in *in, const char *name,
			 long (*fn)(struct zv_cr_in *, const uint8_t *, uint64_t))
{
	uint64_t len;
	const uint8_t *p = zv_cr_get(in, name, &len);
	if (p == (const void *)-1)
		return -1;
	if (!p)
		return zv_cr_in_refuse(in, "the image has no %s section", name);
	long r = fn(in, p, len);
	zv_cr_release(p, len);
	return r;
}

long zv_cr_restore_thread_timers(struct zv_cr_in *in)
{
	return with_section(in, "timers", restore_thread_timers) < 0 ? -1 : 0;
}

long zv_cr_restore_timers(struct zv_cr_in *in)
{
	if (with_section(in, "procenv", restore_procenv) < 0 || with_section(in, "timers", restore_timers) < 0)
		return -1;
	return 0;
}
