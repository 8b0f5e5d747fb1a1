#ifndef ZV_SYS_SETID_H
#define ZV_SYS_SETID_H
struct zv_thread;
/* sys/setid.c: a new image's first thread t, its ELF (elf) loaded: an
 * image the host exec'd (or zvisor's first: zv_setid_host_image set) takes
 * the set-id file's credentials; AT_SECURE follows the ids. */
void zv_setid_image(struct zv_thread *t, const char *elf);
extern int zv_setid_host_image;
#define ZV_SETID_HOST_PLAIN 1 /* zv_setid_host_image: the host exec'd zvisor for a file without set-id bits */
#define ZV_SETID_HOST_FILE 2  /* ... for a set-user-ID or set-group-ID file (zv_resolved's setid) */
/* A secure exec: AT_SECURE is 1, AT_EUID and AT_EGID the host's ids now. */
extern int zv_setid_secure;
#endif
