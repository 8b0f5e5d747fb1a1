/* Loading a program as the process's image (image.c), for main.c and
 * inexec.c. */
#ifndef ZV_IMAGE_H
#define ZV_IMAGE_H
struct zv_thread;
struct zv_resolved;
struct zv_image;

/* The argv a #! script runs with: its words, then argv[1..]; argv itself
 * for an ELF file. out has room for r->nprefix + argc + 1 pointers. */
char **zv_image_argv(const struct zv_resolved *r, char **argv, char **out);
/* Maps elf (the program, or the last #! interpreter) and its interpreter
 * into this process with the platform's rewriting, covers the vDSO, and
 * makes it the process's: /proc/self/exe, comm (execfn's last part), the
 * break. Ends the process (127, 126) with one line naming path if it
 * cannot. */
void zv_image_load(struct zv_thread *t, const char *path, const char *elf, const char *execfn,
		   struct zv_image *img);

/* inexec.c: an execve made in this process (sys/exec.c's hook). */
void zv_inexec_install(void);
#endif
