/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <string.h>

#include "diag.h"

static int vfail(pccx_diag *d, int status, const char *fmt, va_list ap)
{
	if (d) {
		d->status = status;
		vsnprintf(d->msg, sizeof(d->msg), fmt, ap);
	}
	return status;
}

int pccx__fail(pccx_diag *d, int status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfail(d, status, fmt, ap);
	va_end(ap);
	return status;
}

void pccx__diag_clear(pccx_diag *d)
{
	if (d) {
		d->status = PCCX_OK;
		d->msg[0] = '\0';
	}
}

const char *pccx_strerror(int status)
{
	switch (status) {
#define PCCX_STATUS_TEXT(name, value, text) case value: return text;
	PCCX_STATUS_LIST(PCCX_STATUS_TEXT)
#undef PCCX_STATUS_TEXT
	}
	return "unknown status";
}

const char *pccx_status_name(int status)
{
	switch (status) {
#define PCCX_STATUS_NAME(name, value, text) case value: return #name;
	PCCX_STATUS_LIST(PCCX_STATUS_NAME)
#undef PCCX_STATUS_NAME
	}
	return "PCCX_STATUS_UNKNOWN";
}
