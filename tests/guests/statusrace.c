/* Four threads read their own /proc/self/task/TID/status at once, over and
 * over: each open marks its fd (sys/procview.c) while the others open and
 * close theirs, so the layer's routes are being folded on and off. Every
 * read must show the thread's SigCgt as the guest set it (SIGUSR1 caught),
 * never zvisor's handlers: it prints how many reads differed. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define ROUNDS 300

static int differed[4];
static char want[64];

static void on_usr1(int sig) { (void)sig; }
static void *nothing(void *arg) { return arg; }

/* The SigCgt line of path, in out ("" if none). */
static void sigcgt(const char *path, char *out, size_t n)
{
	char line[256];
	out[0] = 0;
	FILE *f = fopen(path, "r");
	while (f && fgets(line, sizeof line, f))
		if (!strncmp(line, "SigCgt:", 7))
			snprintf(out, n, "%.40s", line);
	if (f)
		fclose(f);
}

static void *reader(void *arg)
{
	long i = (long)arg;
	char path[64], got[64];
	snprintf(path, sizeof path, "/proc/self/task/%ld/status", (long)syscall(SYS_gettid));
	for (int k = 0; k < ROUNDS; k++) {
		sigcgt(path, got, sizeof got);
		if (strcmp(got, want))
			differed[i]++;
	}
	return NULL;
}

int main(void)
{
	signal(SIGUSR1, on_usr1);
	pthread_t first; /* glibc's own handlers (cancellation, setxid) come with a first thread */
	pthread_create(&first, NULL, nothing, NULL);
	pthread_join(first, NULL);
	sigcgt("/proc/self/status", want, sizeof want);
	printf("statusrace: SigCgt %s", want[0] ? "read\n" : "missing\n");
	pthread_t t[4];
	for (long i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, reader, (void *)i);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	printf("statusrace: reads that differed %d %d %d %d\n", differed[0], differed[1], differed[2], differed[3]);
	return 0;
}
