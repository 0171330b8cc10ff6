/* SPDX-License-Identifier: MIT */
/*
 * The USB transport of the link backend (docs/usb.md): a byte stream to a board's pccx
 * interface over its bulk endpoints, through libusb-1.0 (loaded when a device is opened).
 */
#ifndef PCCX_TRANSPORT_USB_H
#define PCCX_TRANSPORT_USB_H

#include <stddef.h>

#include "pccx/status.h"
#include "pccx_link.h"

struct pccx_usb_link;

/*
 * Open the first USB device with the pccx interface and VID:PID spec (hexadecimal; NULL or
 * "": the board daemon's default, docs/usb.md) and claim the interface. PCCX_ERR_NOT_FOUND
 * when no such device is attached, PCCX_ERR_UNSUPPORTED without libusb-1.0.
 */
PCCX_MUST_CHECK int pccx__usb_open(const char *spec, struct pccx_usb_link **out, pccx_diag *d);
void pccx__usb_close(struct pccx_usb_link *u);

/* Send all n bytes (timeout_ms per transfer of at most 64 KiB; 0: none). 0 or a status. */
PCCX_MUST_CHECK int pccx__usb_write(struct pccx_usb_link *u, const void *buf, size_t n,
				    unsigned timeout_ms, pccx_diag *d);
/*
 * Receive at least one and at most n bytes into buf (*got), waiting up to timeout_ms (0:
 * forever). PCCX_ERR_TIMEOUT when nothing came; PCCX_ERR_IO when the device is gone.
 */
PCCX_MUST_CHECK int pccx__usb_read(struct pccx_usb_link *u, void *buf, size_t n,
				   unsigned timeout_ms, size_t *got, pccx_diag *d);

/*
 * The same device as the link's byte transport (pccx_link.h), for the link backend: reads
 * return 0 on a timeout and -1 once the device is gone; a write the board does not take
 * within 10 s fails. name (n bytes) receives "usb VID:PID (bus B device D)" for messages.
 */
PCCX_MUST_CHECK int pccx__usb_transport_open(const char *spec, struct pccx_link_transport *t,
					     char *name, size_t n, pccx_diag *d);

#endif /* PCCX_TRANSPORT_USB_H */
