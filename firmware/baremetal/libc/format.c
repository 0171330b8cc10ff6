// SPDX-License-Identifier: MIT
/*
 * vsnprintf of the firmware's C library: flags "-+ #0", width and precision (numbers or *),
 * length modifiers hh h l ll z j t, conversions d i u o x X c s p % and f. %f is exact to the
 * printed digits for |v| < 2^64 / 10^precision with precision <= 9 (the reports' figures);
 * beyond that the digits past the 17th significant one are zeros, not the binary value's.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

struct out {
	char *buf;
	size_t size, len;      /* len counts every byte produced, stored or not */
};

static void put(struct out *o, char c)
{
	if (o->len + 1 < o->size)
		o->buf[o->len] = c;
	o->len++;
}

static void put_n(struct out *o, char c, int n)
{
	while (n-- > 0)
		put(o, c);
}

struct spec {
	bool left, plus, space, alt, zero;
	int width, prec;        /* prec < 0: none */
	int len;                /* 0 int, 1 long, 2 long long, -1 short, -2 char, 3 size_t & co */
	char conv;
};

/* Emit a number's digits (already in `digits`, most significant first) with sign and padding. */
static void emit_num(struct out *o, const struct spec *s, const char *prefix, const char *digits,
		     int nd)
{
	int np = (int)strlen(prefix);
	int zeros = s->prec > nd ? s->prec - nd : 0;
	int pad = s->width - np - zeros - nd;

	if (s->zero && !s->left && s->prec < 0) {
		zeros += pad > 0 ? pad : 0;
		pad = 0;
	}
	if (!s->left)
		put_n(o, ' ', pad);
	for (int i = 0; i < np; i++)
		put(o, prefix[i]);
	put_n(o, '0', zeros);
	for (int i = 0; i < nd; i++)
		put(o, digits[i]);
	if (s->left)
		put_n(o, ' ', pad);
}

static int utoa(uint64_t v, unsigned base, bool upper, char *tmp)
{
	const char *dig = upper ? "0123456789ABCDEF" : "0123456789abcdef";
	char rev[24];
	int n = 0;

	do {
		rev[n++] = dig[v % base];
		v /= base;
	} while (v);
	for (int i = 0; i < n; i++)
		tmp[i] = rev[n - 1 - i];
	return n;
}

static void fmt_int(struct out *o, struct spec *s, uint64_t mag, bool neg)
{
	char tmp[24];
	const char *prefix = neg ? "-" : s->plus ? "+" : s->space ? " " : "";
	unsigned base = s->conv == 'o' ? 8 : (s->conv == 'x' || s->conv == 'X' || s->conv == 'p')
						     ? 16 : 10;
	int nd;

	if (s->prec == 0 && mag == 0) {
		nd = 0;
	} else {
		nd = utoa(mag, base, s->conv == 'X', tmp);
	}
	if (s->alt && (s->conv == 'x' || s->conv == 'X' || s->conv == 'p') && mag)
		prefix = s->conv == 'X' ? "0X" : "0x";
	if (s->alt && s->conv == 'o' && (nd == 0 || tmp[0] != '0') && s->prec <= nd)
		s->prec = nd + 1;
	emit_num(o, s, prefix, tmp, nd);
}

/*
 * v * scale rounded to an integer, ties to even, computed exactly: v = m * 2^e with a 53-bit m,
 * and m * scale (scale <= 10^9) fits in 83 bits, so the rounding sees the true value, as the
 * host C library's does. v * scale < 2^64 (the caller scales v down first).
 */
static uint64_t scaled_round(double v, uint64_t scale)
{
	union { double d; uint64_t u; } b = { v };
	int ex = (int)(b.u >> 52 & 0x7ff);
	unsigned __int128 m = b.u & ((1ull << 52) - 1), prod, q, rem, half;
	int e;

	if (!ex) {
		e = -1074;                      /* subnormal */
	} else {
		m |= 1ull << 52;
		e = ex - 1075;
	}
	prod = m * scale;
	if (e >= 0)
		return (uint64_t)(prod << e);
	if (-e >= 120)
		return 0;                       /* below 2^-37: rounds to 0 */
	q = prod >> -e;
	rem = prod & (((unsigned __int128)1 << -e) - 1);
	half = (unsigned __int128)1 << (-e - 1);
	if (rem > half || (rem == half && (q & 1)))
		q++;
	return (uint64_t)q;
}

static void fmt_float(struct out *o, struct spec *s, double v)
{
	static const uint64_t pow10[] = { 1, 10, 100, 1000, 10000, 100000, 1000000, 10000000,
					  100000000, 1000000000 };
	char tmp[64];
	bool neg = v < 0 || (v == 0 && 1 / v < 0);
	int prec = s->prec < 0 ? 6 : s->prec > 9 ? 9 : s->prec;
	int nd = 0, extra = 0;
	uint64_t ip, fp;

	if (v != v) {
		s->prec = -1;
		s->zero = false;
		emit_num(o, s, "", "nan", 3);
		return;
	}
	if (neg)
		v = -v;
	if (v > 1.7e308) {
		s->prec = -1;
		s->zero = false;
		emit_num(o, s, neg ? "-" : s->plus ? "+" : "", "inf", 3);
		return;
	}
	while (v >= 1.8e19 / (double)pow10[prec]) {    /* keep the scaled value in a uint64 */
		v /= 10;
		extra++;
	}
	fp = scaled_round(v, pow10[prec]);
	ip = fp / pow10[prec];
	fp = extra ? 0 : fp % pow10[prec];     /* the digits scaled away are not known */
	nd = utoa(ip, 10, false, tmp);
	while (extra-- > 0)
		tmp[nd++] = '0';
	if (prec || s->alt)
		tmp[nd++] = '.';
	for (int i = prec - 1; i >= 0; i--)
		tmp[nd + i] = (char)('0' + fp % 10), fp /= 10;
	nd += prec;
	s->prec = -1;
	emit_num(o, s, neg ? "-" : s->plus ? "+" : s->space ? " " : "", tmp, nd);
}

static void fmt_str(struct out *o, const struct spec *s, const char *str)
{
	int n;

	if (!str)
		str = "(null)";
	n = (int)strnlen(str, s->prec < 0 ? (size_t)-1 : (size_t)s->prec);
	if (!s->left)
		put_n(o, ' ', s->width - n);
	for (int i = 0; i < n; i++)
		put(o, str[i]);
	if (s->left)
		put_n(o, ' ', s->width - n);
}

static const char *parse_spec(const char *f, struct spec *s, va_list *ap)
{
	memset(s, 0, sizeof(*s));
	s->prec = -1;
	for (;; f++) {
		if (*f == '-') s->left = true;
		else if (*f == '+') s->plus = true;
		else if (*f == ' ') s->space = true;
		else if (*f == '#') s->alt = true;
		else if (*f == '0') s->zero = true;
		else break;
	}
	if (*f == '*') {
		s->width = va_arg(*ap, int);
		if (s->width < 0) {
			s->left = true;
			s->width = -s->width;
		}
		f++;
	} else {
		while (*f >= '0' && *f <= '9')
			s->width = s->width * 10 + (*f++ - '0');
	}
	if (*f == '.') {
		f++;
		s->prec = 0;
		if (*f == '*') {
			s->prec = va_arg(*ap, int);
			f++;
		} else {
			while (*f >= '0' && *f <= '9')
				s->prec = s->prec * 10 + (*f++ - '0');
		}
	}
	for (;; f++) {
		if (*f == 'h') s->len = s->len == -1 ? -2 : -1;
		else if (*f == 'l') s->len = s->len == 1 ? 2 : 1;
		else if (*f == 'z' || *f == 'j' || *f == 't') s->len = 3;
		else break;
	}
	s->conv = *f;
	return *f ? f + 1 : f;
}

static void fmt_signed(struct out *o, struct spec *s, va_list *ap)
{
	int64_t v;

	switch (s->len) {
	case 1: v = va_arg(*ap, long); break;
	case 2: v = va_arg(*ap, long long); break;
	case 3: v = (int64_t)va_arg(*ap, intptr_t); break;
	case -1: v = (short)va_arg(*ap, int); break;
	case -2: v = (signed char)va_arg(*ap, int); break;
	default: v = va_arg(*ap, int); break;
	}
	fmt_int(o, s, v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v, v < 0);
}

static void fmt_unsigned(struct out *o, struct spec *s, va_list *ap)
{
	uint64_t v;

	s->plus = s->space = false;
	switch (s->len) {
	case 1: v = va_arg(*ap, unsigned long); break;
	case 2: v = va_arg(*ap, unsigned long long); break;
	case 3: v = va_arg(*ap, size_t); break;
	case -1: v = (unsigned short)va_arg(*ap, unsigned); break;
	case -2: v = (unsigned char)va_arg(*ap, unsigned); break;
	default: v = va_arg(*ap, unsigned); break;
	}
	fmt_int(o, s, v, false);
}

int vsnprintf(char *restrict buf, size_t size, const char *restrict fmt, va_list ap)
{
	struct out o = { buf, size, 0 };
	struct spec s;
	va_list aq;

	va_copy(aq, ap);
	while (*fmt) {
		if (*fmt != '%') {
			put(&o, *fmt++);
			continue;
		}
		fmt = parse_spec(fmt + 1, &s, &aq);
		switch (s.conv) {
		case 'd': case 'i': fmt_signed(&o, &s, &aq); break;
		case 'u': case 'o': case 'x': case 'X': fmt_unsigned(&o, &s, &aq); break;
		case 'p':
			s.alt = true;
			fmt_int(&o, &s, (uintptr_t)va_arg(aq, void *), false);
			break;
		case 'c': {
			char c = (char)va_arg(aq, int);

			s.prec = -1;
			s.zero = false;
			emit_num(&o, &s, "", &c, 1);
			break;
		}
		case 's': fmt_str(&o, &s, va_arg(aq, const char *)); break;
		case 'f': case 'F': fmt_float(&o, &s, va_arg(aq, double)); break;
		case '%': put(&o, '%'); break;
		default:        /* unknown conversion: shown as written, the mistake visible */
			put(&o, '%');
			if (s.conv)
				put(&o, s.conv);
			break;
		}
	}
	va_end(aq);
	if (size)
		buf[o.len < size ? o.len : size - 1] = '\0';
	return o.len > 0x7fffffff ? 0x7fffffff : (int)o.len;
}

int snprintf(char *restrict buf, size_t size, const char *restrict fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	return n;
}
