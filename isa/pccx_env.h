/* SPDX-License-Identifier: MIT */
/*
 * The only place isa/ touches its environment. isa/ is compiled into the Linux
 * kernel module, the bare-metal firmware and userspace, so it uses nothing but
 * fixed-width integer types, size_t, bool and NULL.
 */
#ifndef PCCX_ENV_H
#define PCCX_ENV_H

#if defined(__KERNEL__)
#include <linux/types.h>
#include <linux/stddef.h>
#elif defined(PCCX_FREESTANDING)
#include <stdint.h>
#include <stddef.h>
#include <stdbool.h>
#else
#include <stdint.h>
#include <stddef.h>
#include <stdbool.h>
#endif

#endif /* PCCX_ENV_H */
