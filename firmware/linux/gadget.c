// SPDX-License-Identifier: MIT
/* The configfs gadget of the board daemon (gadget.h). */
#include "gadget.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

static void gpath(const struct pccx_gadget *g, const char *rel, char *out, size_t n)
{
	snprintf(out, n, "%s/%s%s%s", PCCX_GADGET_CONFIGFS, g->name, rel[0] ? "/" : "", rel);
}

static int mkdir_in(const struct pccx_gadget *g, const char *rel, char *msg, size_t n)
{
	char p[512];

	gpath(g, rel, p, sizeof(p));
	if (mkdir(p, 0755) && errno != EEXIST) {
		int e = errno;

		snprintf(msg, n, "mkdir %s: %s%s", p, strerror(e), e == ENOENT ?
			 " (is configfs mounted and libcomposite loaded?)" : "");
		return -e;
	}
	return 0;
}

static int write_in(const struct pccx_gadget *g, const char *rel, const char *val, char *msg,
		    size_t n)
{
	char p[512];
	ssize_t w;
	int fd, e;

	gpath(g, rel, p, sizeof(p));
	fd = open(p, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		goto fail;
	w = write(fd, val, strlen(val));
	if (w < 0) {
		e = errno;
		close(fd);
		errno = e;
		goto fail;
	}
	close(fd);
	return 0;
fail:
	e = errno;
	if (msg)
		snprintf(msg, n, "writing '%s' to %s: %s", val, p, strerror(e));
	return -e;
}

int pccx__gadget_make(struct pccx_gadget *g, char *msg, size_t n)
{
	static const char *const dirs[] = { "", "strings/0x409", "configs/c.1",
					    "configs/c.1/strings/0x409" };
	const struct { const char *rel, *val; } attrs[] = {
		{ "bcdUSB", "0x0200" },
		{ "bcdDevice", "0x0100" },
		{ "strings/0x409/manufacturer", "pccx" },
		{ "strings/0x409/product", "pccx NPU board" },
		{ "strings/0x409/serialnumber", g->serial[0] ? g->serial : "0" },
		{ "configs/c.1/strings/0x409/configuration", "pccx host link" },
		{ "configs/c.1/MaxPower", "100" },
	};
	char v[128], p[512], target[512];
	unsigned int i;
	int r;

	for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		r = mkdir_in(g, dirs[i], msg, n);
		if (r)
			return r;
		g->made |= 1;
	}
	snprintf(v, sizeof(v), "functions/ffs.%s", g->name);
	r = mkdir_in(g, v, msg, n);
	if (r)
		return r;
	snprintf(v, sizeof(v), "0x%04x", g->vid);
	r = write_in(g, "idVendor", v, msg, n);
	snprintf(v, sizeof(v), "0x%04x", g->pid);
	if (!r)
		r = write_in(g, "idProduct", v, msg, n);
	for (i = 0; !r && i < sizeof(attrs) / sizeof(attrs[0]); i++)
		r = write_in(g, attrs[i].rel, attrs[i].val, msg, n);
	if (r)
		return r;
	snprintf(v, sizeof(v), "configs/c.1/ffs.%s", g->name);
	gpath(g, v, p, sizeof(p));
	snprintf(v, sizeof(v), "functions/ffs.%s", g->name);
	gpath(g, v, target, sizeof(target));
	if (symlink(target, p) && errno != EEXIST) {
		r = -errno;
		snprintf(msg, n, "symlink %s: %s", p, strerror(errno));
		return r;
	}
	if (mkdir(g->ffs_dir, 0755) && errno != EEXIST) {
		r = -errno;
		snprintf(msg, n, "mkdir %s: %s", g->ffs_dir, strerror(errno));
		return r;
	}
	if (mount(g->name, g->ffs_dir, "functionfs", 0, NULL)) {
		r = -errno;
		snprintf(msg, n, "mount -t functionfs %s %s: %s", g->name, g->ffs_dir,
			 strerror(errno));
		return r;
	}
	g->made |= 2;
	return 0;
}

/* The first UDC the kernel lists, for a board (or dummy_hcd) with one. */
static int first_udc(char *out, size_t n, char *msg, size_t mn)
{
	DIR *d = opendir("/sys/class/udc");
	struct dirent *de;

	out[0] = 0;
	while (d && (de = readdir(d)))
		if (de->d_name[0] != '.' && !out[0])
			snprintf(out, n, "%s", de->d_name);
	if (d)
		closedir(d);
	if (!out[0]) {
		snprintf(msg, mn, "no USB device controller in /sys/class/udc (load its driver)");
		return -ENODEV;
	}
	return 0;
}

int pccx__gadget_bind(struct pccx_gadget *g, const char *udc, char *msg, size_t n)
{
	char name[256];
	int r;

	if (!udc || !udc[0]) {
		r = first_udc(name, sizeof(name), msg, n);
		if (r)
			return r;
		udc = name;
	}
	return write_in(g, "UDC", udc, msg, n);
}

int pccx__gadget_unbind(struct pccx_gadget *g)
{
	return write_in(g, "UDC", "\n", NULL, 0);
}

static void rm_in(const struct pccx_gadget *g, const char *rel, int is_link)
{
	char p[512];

	gpath(g, rel, p, sizeof(p));
	if (is_link)
		(void)unlink(p);
	else
		(void)rmdir(p);
}

void pccx__gadget_remove(struct pccx_gadget *g)
{
	char v[128];

	if (g->made & 2) {
		(void)pccx__gadget_unbind(g);
		(void)umount(g->ffs_dir);
		(void)rmdir(g->ffs_dir);
	}
	if (!(g->made & 1))
		return;
	(void)pccx__gadget_unbind(g);
	snprintf(v, sizeof(v), "configs/c.1/ffs.%s", g->name);
	rm_in(g, v, 1);
	rm_in(g, "configs/c.1/strings/0x409", 0);
	rm_in(g, "configs/c.1", 0);
	snprintf(v, sizeof(v), "functions/ffs.%s", g->name);
	rm_in(g, v, 0);
	rm_in(g, "strings/0x409", 0);
	rm_in(g, "", 0);
	g->made = 0;
}
