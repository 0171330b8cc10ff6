// SPDX-License-Identifier: MIT
/* A JSON text built in memory (json_out.h). */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_out.h"

static bool reserve(struct pccx_json_out *j, size_t more)
{
	size_t cap;
	char *p;

	if (j->oom)
		return false;
	if (j->n + more + 1 <= j->cap)
		return true;
	cap = j->cap ? j->cap : 256;
	while (cap < j->n + more + 1) {
		if (cap > SIZE_MAX / 2)
			goto oom;
		cap *= 2;
	}
	p = realloc(j->p, cap);
	if (!p)
		goto oom;
	j->p = p;
	j->cap = cap;
	return true;
oom:
	j->oom = true;
	return false;
}

void pccx__json_out_raw(struct pccx_json_out *j, const char *s, size_t n)
{
	if (!reserve(j, n))
		return;
	memcpy(j->p + j->n, s, n);
	j->n += n;
	j->p[j->n] = '\0';
}

void pccx__json_out_printf(struct pccx_json_out *j, const char *fmt, ...)
{
	va_list ap;
	int len;

	va_start(ap, fmt);
	len = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (len < 0) {
		j->oom = true;
		return;
	}
	if (!reserve(j, (size_t)len))
		return;
	va_start(ap, fmt);
	vsnprintf(j->p + j->n, (size_t)len + 1, fmt, ap);
	va_end(ap);
	j->n += (size_t)len;
}

/* Length of the UTF-8 character at s[0..n) (RFC 3629: no overlongs, surrogates, > U+10FFFF), 0
 * when the bytes there are not one. */
static size_t utf8_char(const unsigned char *s, size_t n)
{
	size_t len, i;
	uint32_t c;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2, c = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3, c = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4, c = s[0] & 0x07;
	else
		return 0;
	if (n < len)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	if ((len == 3 && (c < 0x800 || (c >= 0xd800 && c <= 0xdfff))) ||
	    (len == 4 && (c < 0x10000 || c > 0x10ffff)))
		return 0;
	return len;
}

void pccx__json_out_str(struct pccx_json_out *j, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, k;

	pccx__json_out_raw(j, "\"", 1);
	while (i < n) {
		unsigned char c = u[i];

		if (c == '"' || c == '\\') {
			char e[2] = { '\\', (char)c };

			pccx__json_out_raw(j, e, 2);
			i++;
		} else if (c < 0x20) {
			if (c == '\n')
				pccx__json_out_raw(j, "\\n", 2);
			else if (c == '\t')
				pccx__json_out_raw(j, "\\t", 2);
			else if (c == '\r')
				pccx__json_out_raw(j, "\\r", 2);
			else
				pccx__json_out_printf(j, "\\u%04x", c);
			i++;
		} else if ((k = utf8_char(u + i, n - i)) != 0) {
			pccx__json_out_raw(j, s + i, k);
			i += k;
		} else {
			pccx__json_out_raw(j, "\xef\xbf\xbd", 3);	/* U+FFFD */
			i++;
		}
	}
	pccx__json_out_raw(j, "\"", 1);
}

size_t pccx__utf8_whole(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t start = n, back = 0;

	/* the last character's first byte: at most 3 continuation bytes back */
	while (start > 0 && back < 4 && (u[start - 1] & 0xc0) == 0x80) {
		start--;
		back++;
	}
	if (start == 0)
		return n;
	start--;
	if (u[start] < 0x80 || utf8_char(u + start, n - start))
		return n;
	/* a lead byte whose character is not complete yet: cut before it */
	if (u[start] >= 0xc2 && u[start] <= 0xf4 && n - start < (u[start] >= 0xf0 ? 4u :
								   u[start] >= 0xe0 ? 3u : 2u))
		return start;
	return n;
}

void pccx__json_out_free(struct pccx_json_out *j)
{
	free(j->p);
	memset(j, 0, sizeof(*j));
}
