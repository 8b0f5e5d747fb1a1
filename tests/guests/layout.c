/* layout.c: every address the program can see, for a comparison with a
 * native run under `setarch -R` (no randomisation): a mapping, malloc's
 * block, a thread's stack, the auxv's vDSO and interpreter, and
 * /proc/self/maps. `exec` and `vfork` print the same from an image that
 * execve made (the vfork child's) instead. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static void *thread(void *arg)
{
	int local;
	*(void **)arg = (void *)((unsigned long)&local & ~4095UL);
	return NULL;
}

static int show(void)
{
	void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	void *big = malloc(1 << 20);
	void *stack = NULL;
	pthread_t th;
	if (pthread_create(&th, NULL, thread, &stack) || pthread_join(th, NULL))
		return 1;
	printf("mmap %p malloc %p thread stack %p\n", m, big, stack);
	printf("AT_SYSINFO_EHDR %#lx AT_BASE %#lx\n", getauxval(AT_SYSINFO_EHDR), getauxval(AT_BASE));
	FILE *f = fopen("/proc/self/maps", "r");
	if (!f)
		return 1;
	char line[512];
	while (fgets(line, sizeof line, f))
		fputs(line, stdout);
	fclose(f);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return show();
	if (!strcmp(argv[1], "exec")) {
		char *args[] = { argv[0], NULL };
		execv("/proc/self/exe", args);
		perror("execv");
		return 1;
	}
	if (!strcmp(argv[1], "vfork")) {
		fflush(stdout);
		pid_t p = vfork();
		if (p == 0) {
			char *args[] = { argv[0], NULL };
			execv("/proc/self/exe", args);
			_exit(127);
		}
		int st;
		if (p < 0 || waitpid(p, &st, 0) != p)
			return 1;
		return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
	}
	return 2;
}
