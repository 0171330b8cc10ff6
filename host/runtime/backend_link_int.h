/* SPDX-License-Identifier: MIT */
/* What the link backend's files share: its state and the request call. */
#ifndef PCCX_BACKEND_LINK_INT_H
#define PCCX_BACKEND_LINK_INT_H

#include "backend_link.h"

#define PCCX_LINK_CHUNK 4096u   /* the unit of "changed since the board saw it" */

struct link_buf {
	uint32_t handle, access;
	uint64_t size;
	uint8_t *host;              /* the host copy */
	uint64_t *sum;              /* per chunk: hash of what the board holds */
	bool touched;               /* written by the host since the last sync */
};

struct pccx_link_backend {
	struct pccx_link_transport t;
	char what[128];
	struct pccx_link_board board;
	uint32_t max_payload;       /* min(board's, ours) */
	uint8_t *tx, *rxbuf;
	struct pccx_link_rx rx;
	uint32_t seq;
	bool resync;                /* a request went unanswered: resynchronise first */
	uint32_t timeout_ms;        /* a request's reply: 0 for the default */
	bool dead;                  /* the transport failed */
	struct link_buf *buf;
	uint32_t n_buf, cap_buf;
	/* the job image and the host-only buffer it is uploaded into */
	uint8_t *img;
	uint64_t img_cap;
	uint32_t img_handle;
	uint64_t img_size;
};

/* The reply to one request. */
struct link_reply {
	const uint8_t *p;           /* payload (inside the receive buffer) */
	uint32_t len;
};

/*
 * Send the request (payload already at b->tx + PCCX_LINK_HDR, len bytes) and read its reply
 * within timeout_ms. Returns 0 with *rep, or a status with the diag naming the request: an
 * error reply (the board's code and text), a reply too short for `want` bytes, a timeout,
 * the link failing.
 */
int pccx__link_request(struct pccx_link_backend *b, uint8_t type, uint32_t len, uint32_t want,
		       uint32_t timeout_ms, struct link_reply *rep, pccx_diag *d);

/* The buffer of a handle, or NULL. */
struct link_buf *pccx__link_buf(struct pccx_link_backend *b, uint32_t handle);
/* Upload every chunk of every device buffer that differs from what the board holds. */
int pccx__link_sync_up(struct pccx_link_backend *b, pccx_diag *d);
/* Download [off, off + len) of a buffer into its host copy (and note the board holds it). */
int pccx__link_download(struct pccx_link_backend *b, struct link_buf *lb, uint64_t off,
			uint64_t len, pccx_diag *d);
/* Upload [off, off + len) of a buffer's host copy, in frames of at most max_payload. */
int pccx__link_upload(struct pccx_link_backend *b, struct link_buf *lb, uint64_t off,
		      uint64_t len, pccx_diag *d);

/* Upload a job image (not a buffer with a host copy) to the start of a host-only buffer. */
int pccx__link_upload_image(struct pccx_link_backend *b, uint32_t handle, const uint8_t *src,
			    uint64_t len, pccx_diag *d);
/* Forget what the board holds of [off, off + len): the next sync uploads those chunks. */
void pccx__link_forget(struct link_buf *lb, uint64_t off, uint64_t len);
/* BUF_FREE of a handle. */
int pccx__link_free_handle(struct pccx_link_backend *b, uint32_t handle, pccx_diag *d);

#endif /* PCCX_BACKEND_LINK_INT_H */
