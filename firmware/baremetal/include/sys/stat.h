/* SPDX-License-Identifier: MIT */
/*
 * The firmware has no file system: headers shared with the host name `struct stat` only in
 * prototypes of functions the image does not contain, so an incomplete type is enough.
 */
#ifndef FW_SYS_STAT_H
#define FW_SYS_STAT_H

struct stat;

#endif
