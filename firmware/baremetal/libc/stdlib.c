// SPDX-License-Identifier: MIT
/* Number parsing and errno of the firmware's C library. */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>

int errno;

static int digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'Z')
		return c - 'A' + 10;
	return 99;
}

unsigned long long strtoull(const char *s, char **end, int base)
{
	const char *p = s, *start;
	unsigned long long v = 0;
	bool neg = false, over = false;

	while (*p == ' ' || (*p >= '\t' && *p <= '\r'))
		p++;
	if (*p == '+' || *p == '-')
		neg = *p++ == '-';
	if ((base == 0 || base == 16) && p[0] == '0' && (p[1] | 0x20) == 'x' && digit(p[2]) < 16) {
		p += 2;
		base = 16;
	} else if (base == 0) {
		base = p[0] == '0' ? 8 : 10;
	}
	if (base < 2 || base > 36) {
		errno = EINVAL;
		if (end)
			*end = (char *)s;
		return 0;
	}
	for (start = p; digit(*p) < base; p++) {
		unsigned d = (unsigned)digit(*p);

		if (v > (ULLONG_MAX - d) / (unsigned)base)
			over = true;
		v = v * (unsigned)base + d;
	}
	if (end)
		*end = (char *)(p == start ? s : p);
	if (over) {
		errno = ERANGE;
		return ULLONG_MAX;
	}
	return neg ? 0 - v : v;
}

unsigned long strtoul(const char *s, char **end, int base)
{
	return strtoull(s, end, base);    /* long is 64 bits on AArch64 */
}
