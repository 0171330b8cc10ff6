/* SPDX-License-Identifier: MIT */
/*
 * The link backends: a board reached over a byte transport (docs/link.md), with the kernel
 * backend's interface (backend_kernel.h) so libpccx runs sessions on it with the same logic
 * and the same verification. Buffers live on the board; each has a host copy that the caller
 * reads and writes through buf_map: before a job the backend uploads what changed since the
 * board last saw it, after it downloads the ranges the job's device-write descriptors name.
 * "What changed" is looked for only in buffers written since the last job - those whose map
 * was taken since, and those the caller names with buf_touch - by comparing each 4 KiB chunk
 * with a 64-bit hash of what the board holds, so a model's weights are not read again at
 * every job.
 *
 * Transports: transport_serial.c (a tty or a Unix socket: backend "serial"); a USB one gives
 * the same struct pccx_link_transport.
 */
#ifndef PCCX_BACKEND_LINK_H
#define PCCX_BACKEND_LINK_H

#include <stdbool.h>
#include <stdint.h>

#include "backend_kernel.h"
#include "pccx/status.h"
#include "pccx_job.h"
#include "pccx_link.h"

struct pccx_link_backend;

/* What INFO said about the board beyond struct pccx_info. */
struct pccx_link_board {
	char name[PCCX_LINK_NAME_BYTES];
	uint32_t max_payload, max_buffers, flags;
	uint32_t job_timeout_ms;
	uint16_t version_min, version_max;
};

/* The counters of STATS (docs/link.md). */
struct pccx_link_stats {
	uint64_t handled, hunted, header_crc, payload_crc, skipped, truncated, errors;
	uint32_t last_err, last_type;
};

/*
 * Talk to the board on transport t (the backend owns it from here, closing it on destroy or
 * failure); `what` names the link in messages (the path). Sends INFO and checks the version.
 */
PCCX_MUST_CHECK int pccx__link_backend_create(const struct pccx_link_transport *t,
					      const char *what, struct pccx_link_backend **out,
					      pccx_diag *d);
void pccx__link_backend_destroy(struct pccx_link_backend *b);
/* INFO again, as the kernel's GET_INFO fields (max_bo_size: the board's max_buf_size). */
PCCX_MUST_CHECK int pccx__link_backend_info(struct pccx_link_backend *b, struct pccx_info *info);
const struct pccx_link_board *pccx__link_backend_board(const struct pccx_link_backend *b);
PCCX_MUST_CHECK int pccx__link_backend_stats(struct pccx_link_backend *b,
					     struct pccx_link_stats *st, pccx_diag *d);

PCCX_MUST_CHECK int pccx__link_backend_buf_alloc(struct pccx_link_backend *b, uint64_t size,
						 uint32_t access, uint32_t *handle, pccx_diag *d);
PCCX_MUST_CHECK int pccx__link_backend_buf_free(struct pccx_link_backend *b, uint32_t handle);
/*
 * The host copy and size of a buffer; NULL for an unknown handle. Taking the map counts as
 * writing the buffer before the next job; writing it later through a pointer kept from an
 * earlier map needs pccx__link_backend_buf_touch.
 */
void *pccx__link_backend_buf_map(struct pccx_link_backend *b, uint32_t handle, uint64_t *size);
/* The host copy of the buffer was written: the next job uploads what changed of it. */
void pccx__link_backend_buf_touch(struct pccx_link_backend *b, uint32_t handle);

/*
 * Upload what changed, submit, wait, download what the job wrote. Returns 0,
 * PCCX_ERR_VALIDATE (the board's validator refused: diag names the error and where),
 * PCCX_ERR_DEVICE (device or DataMover fault), PCCX_ERR_TIMEOUT (hung: the board reset the
 * device; or the board stopped answering), PCCX_ERR_BUSY (aborted by a reset), PCCX_ERR_IO
 * (the link failed: closed, unplugged).
 */
PCCX_MUST_CHECK int pccx__link_backend_submit_wait(struct pccx_link_backend *b,
						   const struct pccx_job_view *job,
						   const struct pccx_kernel_backend_opts *opts,
						   struct pccx_kernel_backend_result *res,
						   pccx_diag *d);

/* How long a request waits for its reply (0: 10 s). Tests shorten it. */
void pccx__link_backend_set_timeout(struct pccx_link_backend *b, uint32_t ms);

/* RESET: aborts the board's job and soft-resets its device. */
PCCX_MUST_CHECK int pccx__link_backend_reset(struct pccx_link_backend *b, pccx_diag *d);
/* PING with n bytes of payload: one round trip (the link's latency). */
PCCX_MUST_CHECK int pccx__link_backend_ping(struct pccx_link_backend *b, uint32_t n,
					    pccx_diag *d);

/* ---- transports -------------------------------------------------------------------------- */

/*
 * A Unix stream socket (connected) or a tty (raw, 8N1, 115200 baud unless a pseudo-terminal)
 * at path. PCCX_ERR_NOT_FOUND when the path does not exist.
 */
PCCX_MUST_CHECK int pccx__serial_transport_open(const char *path, struct pccx_link_transport *t,
						pccx_diag *d);
/* A transport over a file descriptor the caller opened (a socketpair end); closes it. */
void pccx__fd_transport(int fd, struct pccx_link_transport *t);

#endif /* PCCX_BACKEND_LINK_H */
