/* SPDX-License-Identifier: MIT */
/*
 * A USB gadget made through configfs for the board daemon (docs/usb.md): the device with
 * pccx's VID/PID and strings, one configuration holding one FunctionFS function, the
 * FunctionFS instance mounted, and binding to / unbinding from a UDC. A board whose own
 * start-up makes the gadget does not need this: the daemon then only takes the mounted
 * FunctionFS directory.
 */
#ifndef PCCX_GADGET_H
#define PCCX_GADGET_H

#include <stddef.h>
#include <stdint.h>

#define PCCX_GADGET_CONFIGFS "/sys/kernel/config/usb_gadget"

struct pccx_gadget {
	char name[64];          /* the gadget's directory and the FunctionFS instance name */
	char ffs_dir[256];      /* where the FunctionFS instance is mounted */
	uint16_t vid, pid;
	char serial[64];
	int made;               /* what to undo: bit 0 configfs tree, bit 1 mount */
};

/* Make the configfs tree and mount the FunctionFS instance. 0 or -errno (msg says where). */
int pccx__gadget_make(struct pccx_gadget *g, char *msg, size_t n);
/* Bind to udc (NULL or "": the first UDC in /sys/class/udc). 0 or -errno. */
int pccx__gadget_bind(struct pccx_gadget *g, const char *udc, char *msg, size_t n);
int pccx__gadget_unbind(struct pccx_gadget *g);
/* Unbind, unmount and remove what pccx__gadget_make made. Ignores what is already gone. */
void pccx__gadget_remove(struct pccx_gadget *g);

#endif /* PCCX_GADGET_H */
