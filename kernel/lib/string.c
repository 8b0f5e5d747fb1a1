#include "lib/string.h"

void *memcpy(void *d, const void *s, size_t n)
{
	unsigned char *dp = d;
	const unsigned char *sp = s;
	/* rep movsb is fast on current CPUs and uses no vector registers. */
	asm volatile("rep movsb" : "+D"(dp), "+S"(sp), "+c"(n) : : "memory");
	return d;
}

void *memmove(void *d, const void *s, size_t n)
{
	unsigned char *dp = d;
	const unsigned char *sp = s;
	if (dp <= sp || dp >= sp + n)
		return memcpy(d, s, n);
	while (n--)
		dp[n] = sp[n];
	return d;
}

void *memset(void *d, int c, size_t n)
{
	unsigned char *dp = d;
	asm volatile("rep stosb" : "+D"(dp), "+c"(n) : "a"(c) : "memory");
	return d;
}

int memcmp(const void *a, const void *b, size_t n)
{
	const unsigned char *x = a, *y = b;
	for (size_t i = 0; i < n; i++)
		if (x[i] != y[i])
			return x[i] - y[i];
	return 0;
}

size_t zv_strlen(const char *s)
{
	size_t n = 0;
	while (s[n])
		n++;
	return n;
}

int zv_strcmp(const char *a, const char *b)
{
	while (*a && *a == *b)
		a++, b++;
	return (unsigned char)*a - (unsigned char)*b;
}

int zv_strncmp(const char *a, const char *b, size_t n)
{
	for (; n; n--, a++, b++) {
		if (*a != *b)
			return (unsigned char)*a - (unsigned char)*b;
		if (!*a)
			return 0;
	}
	return 0;
}

char *zv_strchr(const char *s, int c)
{
	for (;; s++) {
		if (*s == (char)c)
			return (char *)s;
		if (!*s)
			return NULL;
	}
}

char *zv_strrchr(const char *s, int c)
{
	const char *last = NULL;
	for (;; s++) {
		if (*s == (char)c)
			last = s;
		if (!*s)
			return (char *)last;
	}
}

size_t zv_strlcpy(char *d, const char *s, size_t n)
{
	size_t len = zv_strlen(s);
	if (n) {
		size_t k = len < n - 1 ? len : n - 1;
		memcpy(d, s, k);
		d[k] = 0;
	}
	return len;
}

int zv_startswith(const char *s, const char *prefix)
{
	return zv_strncmp(s, prefix, zv_strlen(prefix)) == 0;
}

long zv_parse_ulong(const char *s, unsigned long *out)
{
	unsigned long v = 0;
	if (!*s)
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		v = v * 10 + (*s - '0');
	}
	*out = v;
	return 0;
}

/* A lower-case hexadecimal number at s; *end is set past it. */
unsigned long zv_parse_hex(const char *s, const char **end)
{
	unsigned long v = 0;
	for (;; s++) {
		int d = *s >= '0' && *s <= '9' ? *s - '0' : *s >= 'a' && *s <= 'f' ? *s - 'a' + 10 : -1;
		if (d < 0)
			break;
		v = v * 16 + d;
	}
	*end = s;
	return v;
}

long zv_parse_dec(const char *s, const char **end)
{
	int neg = *s == '-';
	long v = 0;
	if (neg)
		s++;
	while (*s >= '0' && *s <= '9')
		v = v * 10 + (*s++ - '0');
	*end = s;
	return neg ? -v : v;
}

const char *zv_env_value(char **envp, const char *name)
{
	size_t n = zv_strlen(name);
	for (; *envp; envp++)
		if (!zv_strncmp(*envp, name, n) && (*envp)[n] == '=')
			return *envp + n + 1;
	return NULL;
}
