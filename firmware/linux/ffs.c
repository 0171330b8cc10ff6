// SPDX-License-Identifier: MIT
/* The FunctionFS function of the board daemon (ffs.h). */
#include "ffs.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <linux/usb/ch9.h>
#include <linux/usb/functionfs.h>

/* A little-endian byte writer: the descriptor blobs are bytes on the wire, not C structs. */
struct blob {
	uint8_t b[256];
	size_t n;
};

static void put8(struct blob *x, unsigned int v)
{
	x->b[x->n++] = (uint8_t)v;
}

static void put16(struct blob *x, unsigned int v)
{
	put8(x, v & 0xff);
	put8(x, v >> 8);
}

static void put32(struct blob *x, uint32_t v)
{
	put16(x, v & 0xffff);
	put16(x, v >> 16);
}

static void set32(struct blob *x, size_t at, uint32_t v)
{
	size_t n = x->n;

	x->n = at;
	put32(x, v);
	x->n = n;
}

/* One speed's descriptors: the interface, then bulk IN (ep1) and bulk OUT (ep2). */
static void put_speed(struct blob *x, unsigned int maxpacket)
{
	put8(x, USB_DT_INTERFACE_SIZE);
	put8(x, USB_DT_INTERFACE);
	put8(x, 0);                     /* bInterfaceNumber: the gadget renumbers it */
	put8(x, 0);                     /* bAlternateSetting */
	put8(x, 2);                     /* bNumEndpoints */
	put8(x, PCCX_USB_CLASS);
	put8(x, PCCX_USB_SUBCLASS);
	put8(x, PCCX_USB_PROTOCOL);
	put8(x, 1);                     /* iInterface: the first string */
	put8(x, USB_DT_ENDPOINT_SIZE);
	put8(x, USB_DT_ENDPOINT);
	put8(x, 1 | USB_DIR_IN);        /* the UDC assigns the real address */
	put8(x, USB_ENDPOINT_XFER_BULK);
	put16(x, maxpacket);
	put8(x, 0);
	put8(x, USB_DT_ENDPOINT_SIZE);
	put8(x, USB_DT_ENDPOINT);
	put8(x, 2 | USB_DIR_OUT);
	put8(x, USB_ENDPOINT_XFER_BULK);
	put16(x, maxpacket);
	put8(x, 0);
}

static void descriptors(struct blob *x)
{
	x->n = 0;
	put32(x, FUNCTIONFS_DESCRIPTORS_MAGIC_V2);
	put32(x, 0);                    /* length, set below */
	put32(x, FUNCTIONFS_HAS_FS_DESC | FUNCTIONFS_HAS_HS_DESC);
	put32(x, 3);                    /* full-speed descriptor count */
	put32(x, 3);                    /* high-speed descriptor count */
	put_speed(x, 64);
	put_speed(x, 512);
	set32(x, 4, (uint32_t)x->n);
}

static void strings(struct blob *x)
{
	const char *s = PCCX_USB_INTERFACE_NAME;

	x->n = 0;
	put32(x, FUNCTIONFS_STRINGS_MAGIC);
	put32(x, 0);
	put32(x, 1);                    /* strings per language */
	put32(x, 1);                    /* languages */
	put16(x, 0x0409);               /* en-US */
	memcpy(x->b + x->n, s, strlen(s) + 1);
	x->n += strlen(s) + 1;
	set32(x, 4, (uint32_t)x->n);
}

static int write_blob(int fd, const struct blob *x)
{
	ssize_t w = write(fd, x->b, x->n);

	if (w < 0)
		return -errno;
	return (size_t)w == x->n ? 0 : -EIO;
}

static int open_ep(const char *dir, const char *name, int flags, char *msg, size_t n)
{
	char path[512];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, flags | O_CLOEXEC);
	if (fd < 0) {
		fd = -errno;
		snprintf(msg, n, "%s: %s", path, strerror(errno));
	}
	return fd;
}

int pccx__ffs_open(struct pccx_ffs *f, const char *dir, char *msg, size_t n)
{
	struct blob x;
	int r;

	f->ep0 = f->in = f->out = -1;
	f->in_maxpacket = 512;
	f->ep0 = open_ep(dir, "ep0", O_RDWR, msg, n);
	if (f->ep0 < 0)
		return f->ep0;
	descriptors(&x);
	r = write_blob(f->ep0, &x);
	if (r) {
		snprintf(msg, n, "%s/ep0: writing the descriptors: %s", dir, strerror(-r));
		goto fail;
	}
	strings(&x);
	r = write_blob(f->ep0, &x);
	if (r) {
		snprintf(msg, n, "%s/ep0: writing the strings: %s", dir, strerror(-r));
		goto fail;
	}
	/* the endpoint files exist once ep0 has both blobs */
	f->in = r = open_ep(dir, "ep1", O_WRONLY | O_NONBLOCK, msg, n);
	if (r < 0)
		goto fail;
	f->out = r = open_ep(dir, "ep2", O_RDONLY | O_NONBLOCK, msg, n);
	if (r < 0)
		goto fail;
	return 0;
fail:
	pccx__ffs_close(f);
	return r;
}

void pccx__ffs_close(struct pccx_ffs *f)
{
	if (f->out >= 0)
		close(f->out);
	if (f->in >= 0)
		close(f->in);
	if (f->ep0 >= 0)
		close(f->ep0);
	f->ep0 = f->in = f->out = -1;
}

/* A control request to the interface: none is defined, so stall it (docs/usb.md). */
static void stall(struct pccx_ffs *f, const struct usb_ctrlrequest *setup)
{
	/* FunctionFS stalls on I/O in the direction opposite to the request's */
	if (setup->bRequestType & USB_DIR_IN)
		(void)!read(f->ep0, NULL, 0);
	else
		(void)!write(f->ep0, NULL, 0);
}

int pccx__ffs_event(struct pccx_ffs *f, int timeout_ms)
{
	struct usb_functionfs_event ev;
	struct pollfd p = { .fd = f->ep0, .events = POLLIN };
	ssize_t r;

	r = poll(&p, 1, timeout_ms);
	if (r < 0)
		return -errno;
	if (r == 0)
		return PCCX_FFS_NONE;
	if (!(p.revents & POLLIN))
		return -EIO;            /* POLLERR/POLLHUP: the caller must not poll again at once */
	r = read(f->ep0, &ev, sizeof(ev));
	if (r < 0)
		return errno == EAGAIN || errno == EINTR ? PCCX_FFS_NONE : -errno;
	if (r != (ssize_t)sizeof(ev))
		return -EIO;
	switch (ev.type) {
	case FUNCTIONFS_BIND:
		return PCCX_FFS_BIND;
	case FUNCTIONFS_UNBIND:
		return PCCX_FFS_UNBIND;
	case FUNCTIONFS_ENABLE:
		return PCCX_FFS_ENABLE;
	case FUNCTIONFS_DISABLE:
		return PCCX_FFS_DISABLE;
	case FUNCTIONFS_SETUP:
		stall(f, &ev.u.setup);
		return PCCX_FFS_OTHER;
	default:
		return PCCX_FFS_OTHER;
	}
}

const char *pccx__ffs_event_name(int ev)
{
	static const char *const names[] = { "none", "bind", "unbind", "enable", "disable",
					     "other" };

	return ev >= 0 && ev <= PCCX_FFS_OTHER ? names[ev] : "error";
}

void pccx__ffs_update_maxpacket(struct pccx_ffs *f)
{
	struct usb_endpoint_descriptor d;

	memset(&d, 0, sizeof(d));
	if (!ioctl(f->in, FUNCTIONFS_ENDPOINT_DESC, &d) && d.wMaxPacketSize)
		f->in_maxpacket = d.wMaxPacketSize & 0x7ff;
}

ssize_t pccx__ffs_read(struct pccx_ffs *f, void *buf, size_t n)
{
	ssize_t r = read(f->out, buf, n);

	return r < 0 ? -errno : r;
}

static int write_once(int fd, const void *p, size_t n)
{
	/* not restarted after EINTR: the signal is the daemon stopping */
	ssize_t w = write(fd, p, n);

	if (w < 0)
		return -errno;
	return (size_t)w == n ? 0 : -EIO;
}

int pccx__ffs_write(struct pccx_ffs *f, const void *buf, size_t n)
{
	const uint8_t *p = buf;
	size_t left = n;
	int r;

	/* one transfer per chunk: FunctionFS copies each write into a kernel buffer */
	while (left) {
		size_t c = left < 64 * 1024 ? left : 64 * 1024;

		r = write_once(f->in, p, c);
		if (r)
			return r;
		p += c;
		left -= c;
	}
	if (n && n % f->in_maxpacket == 0)
		return write_once(f->in, p, 0);
	return 0;
}
