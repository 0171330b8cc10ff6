/* SPDX-License-Identifier: MIT */
/* The firmware's own C library: errno for the few callers that read it (number parsing). */
#ifndef FW_ERRNO_H
#define FW_ERRNO_H

extern int errno;

#define ENOENT  2
#define EIO     5
#define ENOMEM 12
#define EINVAL 22
#define ERANGE 34
#define ENOSYS 38

#endif
