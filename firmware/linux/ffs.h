/* SPDX-License-Identifier: MIT */
/*
 * The board daemon's USB function on FunctionFS (docs/usb.md): one vendor-specific interface
 * with a bulk IN and a bulk OUT endpoint, full and high speed. The daemon writes the
 * descriptors and strings to ep0, then the gadget can be bound to a UDC; ep0 reports BIND,
 * UNBIND, ENABLE, DISABLE (the host configured or dropped us). The bulk endpoint files are
 * opened non-blocking so that I/O on a disabled function fails at once (-EAGAIN) instead of
 * waiting for the next host, which must never receive a reply meant for the last one.
 */
#ifndef PCCX_FFS_H
#define PCCX_FFS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The interface as the host finds it (host/runtime/transport_usb.c matches these). */
#define PCCX_USB_VID            0x1209  /* pid.codes */
#define PCCX_USB_PID            0x0001  /* pid.codes' test PID: a product needs its own */
#define PCCX_USB_CLASS          0xff    /* vendor specific */
#define PCCX_USB_SUBCLASS       0x70
#define PCCX_USB_PROTOCOL       0x01
#define PCCX_USB_INTERFACE_NAME "pccx host link"

/* The largest read the daemon posts on bulk OUT: larger than any host transfer (docs/usb.md). */
#define PCCX_FFS_READ_MAX       (64 * 1024 + 512)

struct pccx_ffs {
	int ep0;                /* control: descriptors, strings, events */
	int in;                 /* ep1: bulk IN, board -> host */
	int out;                /* ep2: bulk OUT, host -> board */
	unsigned int in_maxpacket;   /* of the enabled configuration (64 full, 512 high speed) */
};

enum pccx_ffs_event {
	PCCX_FFS_NONE,          /* nothing within the timeout */
	PCCX_FFS_BIND,
	PCCX_FFS_UNBIND,
	PCCX_FFS_ENABLE,
	PCCX_FFS_DISABLE,
	PCCX_FFS_OTHER,         /* setup (stalled), suspend, resume */
};

/*
 * Open DIR/ep0 of a mounted FunctionFS instance, write the descriptors and strings, open the
 * bulk endpoint files. Returns 0 or -errno; msg (n bytes) says what failed.
 */
int pccx__ffs_open(struct pccx_ffs *f, const char *dir, char *msg, size_t n);
void pccx__ffs_close(struct pccx_ffs *f);

/* Next ep0 event, waiting up to timeout_ms (-1: forever). Returns the event or -errno. */
int pccx__ffs_event(struct pccx_ffs *f, int timeout_ms);
const char *pccx__ffs_event_name(int ev);

/*
 * Read what the host sent (at most PCCX_FFS_READ_MAX per call is useful). Returns the byte
 * count, or -EAGAIN/-ESHUTDOWN/-ECONNRESET when the function is disabled or goes away,
 * -EINTR when a signal arrived (the daemon stops its reader so), or another -errno.
 */
ssize_t pccx__ffs_read(struct pccx_ffs *f, void *buf, size_t n);

/*
 * Send all n bytes to the host, followed by a zero-length packet when n is a multiple of the
 * endpoint's max packet size (the host's read of a larger buffer ends at a short packet).
 * Returns 0 or -errno as pccx__ffs_read.
 */
int pccx__ffs_write(struct pccx_ffs *f, const void *buf, size_t n);

/* Ask the endpoint for its active max packet size (after ENABLE). */
void pccx__ffs_update_maxpacket(struct pccx_ffs *f);

#endif /* PCCX_FFS_H */
