/* execve (DESIGN 5.5): the new image runs under zvisor again and shows what
 * the guest asked for: argv[0], /proc/self/exe, AT_EXECFN and the auxv the
 * host would build. Failing execs return the host's errno; a #! script runs.
 * Stage 1 checks the errors, execs from a multithreaded process into
 * /proc/self/exe (stage 2, argv[0] "renamed"), which execs a script that
 * exits 7. */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static const char *errname(int e)
{
	static const struct { int e; const char *n; } t[] = {
		{ ENOENT, "ENOENT" }, { EACCES, "EACCES" }, { ENOEXEC, "ENOEXEC" },
		{ ENOTDIR, "ENOTDIR" }, { EFAULT, "EFAULT" }, { ELOOP, "ELOOP" },
		{ ENAMETOOLONG, "ENAMETOOLONG" }, { EISDIR, "EISDIR" }, { EINVAL, "EINVAL" },
		{ ETXTBSY, "ETXTBSY" }, { E2BIG, "E2BIG" }, { EPERM, "EPERM" },
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (t[i].e == e)
			return t[i].n;
	return "other";
}

static void show_image(int argc, char **argv)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	exe[n < 0 ? 0 : n] = 0;
	const char *execfn = (const char *)getauxval(AT_EXECFN);
	printf("argc %d, argv[0] %s\n", argc, argv[0]);
	printf("/proc/self/exe %s\n", exe);
	printf("AT_EXECFN %s\n", execfn ? execfn : "(none)");

	/* auxv as found above envp on the initial stack: the keys in order, and
	 * the values that do not depend on the address space layout */
	char **e = environ;
	while (*e)
		e++;
	Elf64_auxv_t *av = (Elf64_auxv_t *)(e + 1);
	printf("auxv keys:");
	for (Elf64_auxv_t *a = av; a->a_type != AT_NULL; a++)
		printf(" %lu", (unsigned long)a->a_type);
	printf("\n");
	static const unsigned long same[] = { AT_PAGESZ, AT_PHENT, AT_PHNUM, AT_FLAGS, AT_UID,
					      AT_EUID, AT_GID, AT_EGID, AT_SECURE, AT_CLKTCK,
					      AT_HWCAP, AT_HWCAP2, AT_MINSIGSTKSZ };
	printf("auxv values:");
	for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++)
		printf(" %lu=%#lx", same[i], getauxval(same[i]));
	printf("\n");
	const char *plat = (const char *)getauxval(AT_PLATFORM);
	printf("AT_PLATFORM %s, AT_RANDOM set %d, AT_SYSINFO_EHDR is an ELF %d\n", plat ? plat : "(none)",
	       getauxval(AT_RANDOM) != 0,
	       getauxval(AT_SYSINFO_EHDR) && !memcmp((void *)getauxval(AT_SYSINFO_EHDR), ELFMAG, 4));
	/* AT_PHDR points at our own program headers, AT_ENTRY at our entry */
	const Elf64_Phdr *ph = (const Elf64_Phdr *)getauxval(AT_PHDR);
	int has_self = 0;
	for (unsigned long i = 0; ph && i < getauxval(AT_PHNUM); i++)
		if (ph[i].p_type == PT_PHDR || ph[i].p_type == PT_LOAD)
			has_self = 1;
	printf("AT_PHDR looks like program headers %d\n", has_self);

	/* /proc/self/auxv shows the same vector */
	Elf64_auxv_t pv[64];
	int fd = open("/proc/self/auxv", O_RDONLY);
	ssize_t got = fd < 0 ? -1 : read(fd, pv, sizeof(pv));
	close(fd);
	int match = got > 0;
	for (int i = 0; match && i < (int)(got / sizeof(pv[0])); i++)
		if (pv[i].a_type != av[i].a_type || pv[i].a_un.a_val != av[i].a_un.a_val)
			match = 0;
	printf("/proc/self/auxv matches the stack %d\n", match);
	fflush(stdout);
}

static void try_exec(const char *what, const char *path)
{
	char *argv[] = { "x", NULL };
	errno = 0;
	int r = execve(path, argv, environ);
	printf("exec %s: %d %s\n", what, r, errname(errno));
}

static void write_file(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	write(fd, text, strlen(text));
	close(fd);
	chmod(path, mode);
}

static int pipefd[2];
static void *spinner(void *arg)
{
	char c;
	if (arg)
		read(pipefd[0], &c, 1); /* blocked in the host */
	else
		for (;;)
			getppid();
	return NULL;
}

static void stage1(int argc, char **argv)
{
	show_image(argc, argv);

	char dir[] = "/tmp/zvexecXXXXXX", path[64];
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		exit(1);
	}
	try_exec("missing file", "/nonexistent/program");
	snprintf(path, sizeof(path), "%s/noexec", dir);
	write_file(path, "#!/bin/sh\necho should not run\n", 0644);
	try_exec("file without x permission", path);
	snprintf(path, sizeof(path), "%s/garbage", dir);
	write_file(path, "this is not a program\n", 0755);
	try_exec("text file without #!", path);
	snprintf(path, sizeof(path), "%s/empty", dir);
	write_file(path, "", 0755);
	try_exec("empty file", path);
	snprintf(path, sizeof(path), "%s/badinterp", dir);
	write_file(path, "#!/nonexistent/interpreter\n", 0755);
	try_exec("script with a missing interpreter", path);
	try_exec("directory", dir);
	try_exec("path through a file", "/etc/passwd/x");
	try_exec("NULL path", NULL);
	errno = 0;
	char *av[] = { "zv-no-such-command", NULL };
	execvp("zv-no-such-command", av);
	printf("execvp of an unknown command: %s\n", errname(errno));
	fflush(stdout);

	/* fexecve (execveat with AT_EMPTY_PATH) from a child */
	pid_t pid = fork();
	if (pid == 0) {
		int fd = open("/bin/echo", O_RDONLY);
		char *eargv[] = { "echo", "fexecve works", NULL };
		fexecve(fd, eargv, environ);
		_exit(127);
	}
	int st;
	waitpid(pid, &st, 0);
	printf("fexecve child exit %d\n", WEXITSTATUS(st));

	/* through a close-on-exec fd (CPython's os.execve(fd, ...)): an ELF
	 * runs, and sees the name the host gives it; a #! script cannot */
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
		char *eargv[] = { "fdimage", "fdimage", NULL };
		syscall(SYS_execveat, fd, "", eargv, environ, AT_EMPTY_PATH);
		printf("execveat of a close-on-exec fd: %s\n", errname(errno));
		_exit(127);
	}
	waitpid(pid, &st, 0);
	printf("execveat of a close-on-exec fd: exit %d\n", WEXITSTATUS(st));
	snprintf(path, sizeof(path), "%s/fdscript", dir);
	write_file(path, "#!/bin/sh\necho script through an fd\n", 0755);
	int sfd = open(path, O_RDONLY | O_CLOEXEC);
	char *sargv0[] = { "fdscript", NULL };
	errno = 0;
	syscall(SYS_execveat, sfd, "", sargv0, environ, AT_EMPTY_PATH);
	printf("execveat of a #! script through a close-on-exec fd: %s\n", errname(errno));
	close(sfd);
	unlink(path);
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		int dfd = open("/bin", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		char *eargv[] = { "echo", "execveat of a name under a directory fd works", NULL };
		syscall(SYS_execveat, dfd, "echo", eargv, environ, 0);
		_exit(127);
	}
	waitpid(pid, &st, 0);
	printf("execveat under a directory fd: exit %d\n", WEXITSTATUS(st));

	snprintf(path, sizeof(path), "%s/noexec", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/garbage", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/empty", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/badinterp", dir);
	unlink(path);
	rmdir(dir);

	/* exec from a multithreaded process: the other threads must vanish */
	pipe(pipefd);
	pthread_t t;
	pthread_create(&t, NULL, spinner, NULL);
	pthread_create(&t, NULL, spinner, (void *)1);
	pthread_create(&t, NULL, spinner, (void *)1);
	usleep(20000);
	printf("exec /proc/self/exe with 3 other threads running\n");
	fflush(stdout);
	char *sargv[] = { "renamed", "stage2", NULL };
	execve("/proc/self/exe", sargv, environ);
	printf("exec /proc/self/exe failed: %s\n", errname(errno));
	exit(1);
}

static void stage2(int argc, char **argv)
{
	show_image(argc, argv);
	/* only this thread is left after the exec */
	int threads = 0;
	char line[256];
	FILE *f = fopen("/proc/self/status", "r");
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "Threads:", 8))
			threads = atoi(line + 8);
	if (f)
		fclose(f);
	printf("threads after exec: %d\n", threads);
	char dir[] = "/tmp/zvexecXXXXXX", path[64];
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		exit(1);
	}
	snprintf(path, sizeof(path), "%s/script.sh", dir);
	write_file(path,
		   "#!/bin/sh\n"
		   "echo \"script: \\$0=$(basename \"$0\") \\$1=$1 \\$#=$#\"\n"
		   "rm -rf \"$(dirname \"$0\")\"\n"
		   "exit 7\n",
		   0755);
	char *sargv[] = { "ignored-argv0", "from-stage2", NULL };
	fflush(stdout);
	execve(path, sargv, environ);
	printf("exec of the script failed: %s\n", errname(errno));
	exit(1);
}

/* The image execveat started through a close-on-exec fd: its name and
 * that it holds no fd beyond stdio. */
static void fdimage(void)
{
	const char *execfn = (const char *)getauxval(AT_EXECFN);
	int fds = 0;
	for (int fd = 0; fd < 1024; fd++)
		fds += fcntl(fd, F_GETFD) >= 0;
	printf("fdimage: AT_EXECFN %s, open fds %d\n", execfn ? execfn : "(none)", fds);
	exit(0);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 1 && !strcmp(argv[1], "fdimage"))
		fdimage();
	if (argc > 1 && !strcmp(argv[1], "stage2"))
		stage2(argc, argv);
	else
		stage1(argc, argv);
	return 1;
}
