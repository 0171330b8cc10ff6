/* SPDX-License-Identifier: MIT */
/* Internal helpers to fill a pccx_diag and return the status in one statement. */
#ifndef PCCX_DIAG_H
#define PCCX_DIAG_H

#include <stdarg.h>
#include "pccx/status.h"

/*
 * Record `status` and a printf-style detail in `d` (ignored when d is NULL) and
 * return `status`, so call sites read:
 *	return pccx__fail(d, PCCX_ERR_FORMAT, "%s: bad magic", path);
 */
int pccx__fail(pccx_diag *d, int status, const char *fmt, ...) __attribute__((format(printf, 3,
										     4)));
/* Reset a diag to "no error". */
void pccx__diag_clear(pccx_diag *d);

#endif
