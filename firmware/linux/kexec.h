/* SPDX-License-Identifier: MIT */
/*
 * The board daemon's executor (firmware/core/pccx_fw.h): jobs and buffers through /dev/pccx.
 * A device buffer is a buffer object of the driver, mapped into the daemon; a host-only buffer
 * (a job image) is the daemon's own memory. The link's handles are the daemon's, translated to
 * the driver's in every descriptor of a job, so the host never sees a handle of the driver.
 * A job is SUBMIT, then WAITs of a few milliseconds each from the core's poll, so the daemon
 * keeps reading the link while it runs.
 */
#ifndef PCCX_KEXEC_H
#define PCCX_KEXEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pccx_fw.h"

/* Host-only buffers (job images) the daemon holds at most, all together. */
#define PCCX_KEXEC_HOST_BYTES   (64ull << 20)

struct pccx_kexec_buf {
	uint32_t handle;                /* the link's; 0: free entry */
	uint32_t kh;                    /* the driver's; 0: host-only */
	uint64_t size;                  /* as mapped or allocated */
	uint8_t *mem;
};

struct pccx_kexec {
	char path[256];
	int fd;
	struct pccx_kexec_buf *bufs;
	uint32_t max_bufs;
	uint32_t next_handle;
	uint64_t host_bytes;            /* held by host-only buffers */
	bool running;
	uint64_t job_id;
	/* a job's descriptors with the driver's handles */
	struct pccx_dma_desc *dma;
	struct pccx_stream_desc *stream;
	uint32_t cap_dma, cap_stream;
};

/* Open the device node (NULL: /dev/pccx) with room for max_bufs buffers. 0 or -errno. */
int pccx__kexec_open(struct pccx_kexec *x, const char *path, uint32_t max_bufs, char *msg,
		     size_t n);
/* Free every buffer and close the node: the driver aborts a job still running. */
void pccx__kexec_close(struct pccx_kexec *x);

extern const struct pccx_fw_exec_ops pccx__kexec_ops;

#endif /* PCCX_KEXEC_H */
