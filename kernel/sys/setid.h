#ifndef ZV_SYS_SETID_H
#define ZV_SYS_SETID_H
/* sys/setid.c: the set-id file's credentials for an image the host exec'd
 * (path: the ELF it runs). */
void zv_setid_image(const char *elf);
/* The ids changed: AT_SECURE is 1, AT_EUID and AT_EGID are the new ones. */
extern int zv_setid_secure;
#endif
