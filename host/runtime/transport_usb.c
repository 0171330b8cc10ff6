// SPDX-License-Identifier: MIT
/*
 * The USB transport of the link backend (docs/usb.md): a byte stream over the bulk endpoints
 * of the board's pccx interface, through libusb-1.0.
 *
 * libpccx does not link libusb: the transport loads libusb-1.0.so.0 when a `usb` device is
 * opened, so programs that never open one carry no dependency (the static guest programs,
 * a host without libusb) and a machine without libusb gets a message saying so.
 *
 * Every transfer is asynchronous with libusb's own timeout, and the event loop waits at
 * most a second at a time, so no call can hang: a device that goes away (unplugged, the
 * board's gadget unbound) ends the pending transfer with NO_DEVICE and every later call fails
 * at once with PCCX_ERR_IO and the same message.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <libusb-1.0/libusb.h>

#include "diag.h"
#include "pccx_link.h"
#include "transport_usb.h"

/* docs/usb.md: the board daemon's defaults (firmware/linux/ffs.h) */
#define USB_VID         0x1209
#define USB_PID         0x0001
#define USB_CLASS       0xff
#define USB_SUBCLASS    0x70
#define USB_PROTOCOL    0x01
/*
 * One bulk IN read: a multiple of every max packet size, and larger than the board's writes
 * (64 KiB at most), so a write the board ends with a zero-length packet ends one read here.
 */
#define RX_BYTES        (64 * 1024 + 512)
/* One bulk OUT transfer: smaller than the board's read buffer (docs/usb.md). */
#define TX_BYTES        (64 * 1024)
/* A write the board does not take within this long fails: the link's request timeout. */
#define TX_TIMEOUT_MS   10000

#define USB_FNS(X) \
	X(libusb_init) X(libusb_exit) X(libusb_get_device_list) X(libusb_free_device_list) \
	X(libusb_get_device_descriptor) X(libusb_get_active_config_descriptor) \
	X(libusb_free_config_descriptor) X(libusb_open) X(libusb_close) \
	X(libusb_claim_interface) X(libusb_release_interface) X(libusb_alloc_transfer) \
	X(libusb_free_transfer) X(libusb_submit_transfer) X(libusb_cancel_transfer) \
	X(libusb_handle_events_timeout_completed) X(libusb_strerror) \
	X(libusb_get_bus_number) X(libusb_get_device_address) X(libusb_get_configuration)

struct usb_fns {
#define FN_PTR(name) __typeof__(name) *name;
	USB_FNS(FN_PTR)
#undef FN_PTR
};

struct pccx_usb_link {
	void *lib;
	struct usb_fns fn;
	libusb_context *ctx;
	libusb_device_handle *h;
	int iface;
	uint8_t ep_in, ep_out;
	char name[64];                  /* "usb 1209:0001 (bus 1 device 2)" for messages */
	char gone[160];                 /* set once the device is gone: every call fails so */
	uint8_t *rx;
	size_t rx_off, rx_len;
};

static int load_libusb(struct pccx_usb_link *u, pccx_diag *d)
{
	const char *lib = "libusb-1.0.so.0";

	u->lib = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!u->lib)
		return pccx__fail(d, PCCX_ERR_UNSUPPORTED, "backend 'usb' needs libusb-1.0 (%s): %s",
				  lib, dlerror());
#define FN_LOAD(name) \
	*(void **)&u->fn.name = dlsym(u->lib, #name); \
	if (!u->fn.name) \
		return pccx__fail(d, PCCX_ERR_UNSUPPORTED, "backend 'usb': %s has no %s", lib, #name);
	USB_FNS(FN_LOAD)
#undef FN_LOAD
	return 0;
}

/* "VID:PID" in hexadecimal, or NULL/"" for the defaults. */
static int parse_spec(const char *spec, uint16_t *vid, uint16_t *pid, pccx_diag *d)
{
	unsigned int v, p;
	int end = 0;

	*vid = USB_VID;
	*pid = USB_PID;
	if (!spec || !spec[0])
		return 0;
	if (sscanf(spec, "%4x:%4x%n", &v, &p, &end) != 2 || spec[end])
		return pccx__fail(d, PCCX_ERR_INVALID, "backend 'usb': device '%s' is not "
				  "VID:PID in hexadecimal (e.g. %04x:%04x)", spec, USB_VID, USB_PID);
	*vid = (uint16_t)v;
	*pid = (uint16_t)p;
	return 0;
}

/* The pccx interface of a configuration: its number and bulk endpoints, or -1. */
static int find_iface(const struct libusb_config_descriptor *c, uint8_t *in, uint8_t *out)
{
	int i, e;

	for (i = 0; i < c->bNumInterfaces; i++) {
		const struct libusb_interface_descriptor *a;

		if (c->interface[i].num_altsetting < 1)
			continue;
		a = &c->interface[i].altsetting[0];
		if (a->bInterfaceClass != USB_CLASS || a->bInterfaceSubClass != USB_SUBCLASS ||
		    a->bInterfaceProtocol != USB_PROTOCOL)
			continue;
		*in = *out = 0;
		/* the addresses are the UDC's choice: read them, never assume them */
		for (e = 0; e < a->bNumEndpoints; e++) {
			const struct libusb_endpoint_descriptor *ep = &a->endpoint[e];

			if ((ep->bmAttributes & 3) != LIBUSB_TRANSFER_TYPE_BULK)
				continue;
			if (ep->bEndpointAddress & LIBUSB_ENDPOINT_IN)
				*in = ep->bEndpointAddress;
			else
				*out = ep->bEndpointAddress;
		}
		if (*in && *out)
			return a->bInterfaceNumber;
	}
	return -1;
}

/* Open the first device with vid:pid and a pccx interface; *seen counts vid:pid matches. */
static int find_device(struct pccx_usb_link *u, uint16_t vid, uint16_t pid, int *seen,
		       pccx_diag *d)
{
	libusb_device **list;
	ssize_t n = u->fn.libusb_get_device_list(u->ctx, &list), i;
	int rc = PCCX_ERR_NOT_FOUND, r;

	if (n < 0)
		return pccx__fail(d, PCCX_ERR_IO, "backend 'usb': listing the USB devices: %s",
				  u->fn.libusb_strerror((int)n));
	*seen = 0;
	for (i = 0; i < n && rc == PCCX_ERR_NOT_FOUND; i++) {
		struct libusb_device_descriptor dd;
		struct libusb_config_descriptor *c;

		if (u->fn.libusb_get_device_descriptor(list[i], &dd) ||
		    dd.idVendor != vid || dd.idProduct != pid)
			continue;
		(*seen)++;
		if (u->fn.libusb_get_active_config_descriptor(list[i], &c))
			continue;
		u->iface = find_iface(c, &u->ep_in, &u->ep_out);
		u->fn.libusb_free_config_descriptor(c);
		if (u->iface < 0)
			continue;
		snprintf(u->name, sizeof(u->name), "usb %04x:%04x (bus %u device %u)", vid, pid,
			 u->fn.libusb_get_bus_number(list[i]),
			 u->fn.libusb_get_device_address(list[i]));
		r = u->fn.libusb_open(list[i], &u->h);
		rc = r ? pccx__fail(d, PCCX_ERR_IO,
				    "%s: cannot open it: %s%s", u->name, u->fn.libusb_strerror(r),
				    r == LIBUSB_ERROR_ACCESS ? " (permissions of /dev/bus/usb: "
				    "docs/usb.md)" : "") : 0;
	}
	u->fn.libusb_free_device_list(list, 1);
	return rc;
}

int pccx__usb_open(const char *spec, struct pccx_usb_link **out, pccx_diag *d)
{
	struct pccx_usb_link *u;
	uint16_t vid, pid;
	int rc, r, seen = 0;

	*out = NULL;
	rc = parse_spec(spec, &vid, &pid, d);
	if (rc)
		return rc;
	u = calloc(1, sizeof(*u));
	if (!u || !(u->rx = malloc(RX_BYTES))) {
		free(u);
		return pccx__fail(d, PCCX_ERR_NOMEM, "backend 'usb': out of memory");
	}
	rc = load_libusb(u, d);
	if (rc)
		goto fail;
	/* a fresh context per open: without udevd libusb sees no hot-plug events, so a context
	 * made before the board (re)appeared would never list it */
	r = u->fn.libusb_init(&u->ctx);
	if (r) {
		u->ctx = NULL;
		rc = pccx__fail(d, PCCX_ERR_IO, "backend 'usb': libusb_init: %s",
				u->fn.libusb_strerror(r));
		goto fail;
	}
	rc = find_device(u, vid, pid, &seen, d);
	if (rc == PCCX_ERR_NOT_FOUND && seen)
		rc = pccx__fail(d, rc, "backend 'usb': %d USB device(s) %04x:%04x, none with a pccx "
				"interface (class %02x/%02x/%02x, two bulk endpoints)", seen, vid, pid,
				USB_CLASS, USB_SUBCLASS, USB_PROTOCOL);
	else if (rc == PCCX_ERR_NOT_FOUND)
		rc = pccx__fail(d, rc, "backend 'usb': no USB device %04x:%04x (is the board's daemon "
				"running and its gadget bound?)", vid, pid);
	if (rc)
		goto fail;
	r = u->fn.libusb_claim_interface(u->h, u->iface);
	if (r) {
		rc = pccx__fail(d, r == LIBUSB_ERROR_BUSY ? PCCX_ERR_BUSY : PCCX_ERR_IO,
				"%s: claiming interface %d: %s%s", u->name, u->iface,
				u->fn.libusb_strerror(r), r == LIBUSB_ERROR_BUSY ?
				" (another program has it)" : "");
		goto fail;
	}
	*out = u;
	return 0;
fail:
	u->iface = -1;
	pccx__usb_close(u);
	return rc;
}

void pccx__usb_close(struct pccx_usb_link *u)
{
	if (!u)
		return;
	if (u->h) {
		if (u->iface >= 0 && !u->gone[0])
			(void)u->fn.libusb_release_interface(u->h, u->iface);
		u->fn.libusb_close(u->h);
	}
	if (u->ctx)
		u->fn.libusb_exit(u->ctx);
	if (u->lib)
		dlclose(u->lib);
	free(u->rx);
	free(u);
}

static void LIBUSB_CALL on_done(struct libusb_transfer *t)
{
	*(int *)t->user_data = 1;
}

/* Run the event loop until t completes; a failing loop cancels t and waits for its end. */
static void wait_transfer(struct pccx_usb_link *u, struct libusb_transfer *t, int *done)
{
	int cancelled = 0;

	while (!*done) {
		struct timeval tv = { 1, 0 };
		int r = u->fn.libusb_handle_events_timeout_completed(u->ctx, &tv, done);

		if (r < 0 && r != LIBUSB_ERROR_INTERRUPTED && !cancelled) {
			(void)u->fn.libusb_cancel_transfer(t);
			cancelled = 1;
		}
	}
}

/*
 * A transfer that ended in an error on the bus: an unplug often ends it so before usbcore has
 * noticed the disconnect. Ask for the configuration (from sysfs: no bus traffic) for up to a
 * second: NO_DEVICE means it went away.
 */
static bool went_away(struct pccx_usb_link *u)
{
	int i, cfg;

	for (i = 0; i < 20; i++) {
		if (u->fn.libusb_get_configuration(u->h, &cfg) == LIBUSB_ERROR_NO_DEVICE)
			return true;
		usleep(50000);
	}
	return false;
}

/* The device is gone: remember why, so every later call says the same at once. */
static int gone(struct pccx_usb_link *u, const char *what, pccx_diag *d)
{
	if (!u->gone[0])
		snprintf(u->gone, sizeof(u->gone), "%s: the device went away during %s (unplugged, "
			 "or the board's gadget was unbound)", u->name, what);
	return pccx__fail(d, PCCX_ERR_IO, "%s", u->gone);
}

/*
 * One bulk transfer of up to len bytes with a timeout (0: none). *got is what moved, also on
 * a timeout. Returns 0, PCCX_ERR_TIMEOUT or PCCX_ERR_IO.
 */
static int bulk(struct pccx_usb_link *u, uint8_t ep, uint8_t *buf, int len, unsigned timeout_ms,
		int *got, pccx_diag *d)
{
	const char *what = ep & LIBUSB_ENDPOINT_IN ? "a read" : "a write";
	struct libusb_transfer *t;
	int done = 0, r, status;

	*got = 0;
	if (u->gone[0])
		return pccx__fail(d, PCCX_ERR_IO, "%s", u->gone);
	t = u->fn.libusb_alloc_transfer(0);
	if (!t)
		return pccx__fail(d, PCCX_ERR_NOMEM, "%s: out of memory", u->name);
	libusb_fill_bulk_transfer(t, u->h, ep, buf, len, on_done, &done, timeout_ms);
	/* a write of a multiple of the max packet size ends with a zero-length packet */
	if (!(ep & LIBUSB_ENDPOINT_IN))
		t->flags |= LIBUSB_TRANSFER_ADD_ZERO_PACKET;
	r = u->fn.libusb_submit_transfer(t);
	if (r) {
		u->fn.libusb_free_transfer(t);
		if (r == LIBUSB_ERROR_NO_DEVICE)
			return gone(u, what, d);
		return pccx__fail(d, PCCX_ERR_IO, "%s: submitting %s: %s", u->name, what,
				  u->fn.libusb_strerror(r));
	}
	wait_transfer(u, t, &done);
	status = t->status;
	*got = t->actual_length;
	u->fn.libusb_free_transfer(t);
	switch (status) {
	case LIBUSB_TRANSFER_COMPLETED:
		return 0;
	case LIBUSB_TRANSFER_TIMED_OUT:
		return PCCX_ERR_TIMEOUT;
	case LIBUSB_TRANSFER_NO_DEVICE:
		return gone(u, what, d);
	case LIBUSB_TRANSFER_STALL:
		return pccx__fail(d, PCCX_ERR_IO, "%s: endpoint 0x%02x stalled during %s", u->name,
				  ep, what);
	case LIBUSB_TRANSFER_ERROR:
		if (went_away(u))
			return gone(u, what, d);
		return pccx__fail(d, PCCX_ERR_IO, "%s: %s failed with an error on the bus", u->name,
				  what);
	case LIBUSB_TRANSFER_OVERFLOW:
		return pccx__fail(d, PCCX_ERR_IO, "%s: the board sent more than %d bytes in one "
				  "transfer", u->name, len);
	default:
		/* cancelled (a failing event loop) or an error on the bus */
		return pccx__fail(d, PCCX_ERR_IO, "%s: %s failed (transfer status %d)", u->name,
				  what, status);
	}
}

int pccx__usb_write(struct pccx_usb_link *u, const void *buf, size_t n, unsigned timeout_ms,
		    pccx_diag *d)
{
	const uint8_t *p = buf;
	int got, rc;

	while (n) {
		int c = n < TX_BYTES ? (int)n : TX_BYTES;

		/* libusb's buffer is not const, but an OUT transfer only reads it */
		rc = bulk(u, u->ep_out, (uint8_t *)(uintptr_t)p, c, timeout_ms, &got, d);
		if (rc == PCCX_ERR_TIMEOUT)
			return pccx__fail(d, rc, "%s: the board took none of %zu bytes within %u ms "
					  "(%d sent)", u->name, n, timeout_ms, got);
		if (rc)
			return rc;
		p += c;
		n -= (size_t)c;
	}
	return 0;
}

int pccx__usb_read(struct pccx_usb_link *u, void *buf, size_t n, unsigned timeout_ms,
		   size_t *got, pccx_diag *d)
{
	int rc, r;

	*got = 0;
	while (!u->rx_len) {
		/* the whole buffer, so a board's transfer never overflows it */
		rc = bulk(u, u->ep_in, u->rx, RX_BYTES, timeout_ms, &r, d);
		if (rc && rc != PCCX_ERR_TIMEOUT)
			return rc;
		u->rx_off = 0;
		u->rx_len = (size_t)r;
		if (rc && !r)
			return pccx__fail(d, rc, "%s: nothing from the board within %u ms", u->name,
					  timeout_ms);
		/* an empty transfer is a zero-length packet: read on (a new timeout) */
	}
	*got = n < u->rx_len ? n : u->rx_len;
	memcpy(buf, u->rx + u->rx_off, *got);
	u->rx_off += *got;
	u->rx_len -= *got;
	return 0;
}

/* ---- the link's byte transport (pccx_link.h) ----------------------------------------------- */

static int t_read(void *ctx, void *buf, size_t n, uint32_t timeout_ms)
{
	struct pccx_usb_link *u = ctx;
	size_t got;
	int rc;

	/* 0 is "do not wait" here and "no timeout" to libusb: wait a millisecond */
	rc = pccx__usb_read(u, buf, n, timeout_ms ? timeout_ms : 1, &got, NULL);
	if (rc == PCCX_ERR_TIMEOUT)
		return 0;
	return rc ? -1 : (int)got;
}

static int t_write(void *ctx, const void *buf, size_t n)
{
	return pccx__usb_write(ctx, buf, n, TX_TIMEOUT_MS, NULL) ? -1 : 0;
}

static void t_close(void *ctx)
{
	pccx__usb_close(ctx);
}

int pccx__usb_transport_open(const char *spec, struct pccx_link_transport *t, char *name,
			     size_t n, pccx_diag *d)
{
	struct pccx_usb_link *u;
	int rc = pccx__usb_open(spec, &u, d);

	if (rc)
		return rc;
	snprintf(name, n, "%s", u->name);
	t->read = t_read;
	t->write = t_write;
	t->close = t_close;
	t->ctx = u;
	return 0;
}
