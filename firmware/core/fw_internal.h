/* SPDX-License-Identifier: MIT */
/* What the server's files share (firmware/core): the request being handled and its refusal. */
#ifndef PCCX_FW_INTERNAL_H
#define PCCX_FW_INTERNAL_H

#include "pccx_fw.h"

/* A request: its header and payload (inside the rx buffer until the next feed). */
struct pccx_fw_req {
	const struct pccx_link_hdr *hdr;
	const uint8_t *p;
	uint32_t len;
	uint64_t now_ms;
};

/* An error reply's fields (docs/link.md "Error replies"). */
struct pccx_fw_refusal {
	int code;
	uint32_t a0, a1, a2;
	int32_t a3;
	uint64_t a4, a5;
	const char *msg;
};

/*
 * A handler returns the reply's payload length (>= 0; the payload is at
 * pccx__fw_reply_payload()), PCCX_FW_REFUSED with *why filled, or PCCX_FW_DEFERRED (a WAIT
 * answered later).
 */
#define PCCX_FW_REFUSED  (-1)
#define PCCX_FW_DEFERRED (-2)

static inline int pccx__fw_refuse(struct pccx_fw_refusal *why, int code, uint64_t a4,
				  uint64_t a5, const char *msg)
{
	__builtin_memset(why, 0, sizeof(*why));
	why->code = code;
	why->a4 = a4;
	why->a5 = a5;
	why->msg = msg;
	return PCCX_FW_REFUSED;
}

static inline uint8_t *pccx__fw_reply_payload(struct pccx_fw_server *s)
{
	return s->cfg.tx + PCCX_LINK_HDR;
}

/* The table entry of a handle, or NULL (handle 0 is never one). */
struct pccx_fw_buf *pccx__fw_buf_find(struct pccx_fw_server *s, uint32_t handle);

/* Send a reply frame whose payload is already in place. */
void pccx__fw_send(struct pccx_fw_server *s, uint8_t type, uint32_t seq, uint32_t len);
/* Fill the WAIT reply payload from the active job's state; returns its length. */
int pccx__fw_wait_payload(struct pccx_fw_server *s, uint32_t status);

int pccx__fw_on_info(struct pccx_fw_server *s, const struct pccx_fw_req *r,
		     struct pccx_fw_refusal *why);
int pccx__fw_on_ping(struct pccx_fw_server *s, const struct pccx_fw_req *r,
		     struct pccx_fw_refusal *why);
int pccx__fw_on_create(struct pccx_fw_server *s, const struct pccx_fw_req *r,
		       struct pccx_fw_refusal *why);
int pccx__fw_on_free(struct pccx_fw_server *s, const struct pccx_fw_req *r,
		     struct pccx_fw_refusal *why);
int pccx__fw_on_upload(struct pccx_fw_server *s, const struct pccx_fw_req *r,
		       struct pccx_fw_refusal *why);
int pccx__fw_on_download(struct pccx_fw_server *s, const struct pccx_fw_req *r,
			 struct pccx_fw_refusal *why);
int pccx__fw_on_stats(struct pccx_fw_server *s, const struct pccx_fw_req *r,
		      struct pccx_fw_refusal *why);
int pccx__fw_on_submit(struct pccx_fw_server *s, const struct pccx_fw_req *r,
		       struct pccx_fw_refusal *why);
int pccx__fw_on_wait(struct pccx_fw_server *s, const struct pccx_fw_req *r,
		     struct pccx_fw_refusal *why);
int pccx__fw_on_reset(struct pccx_fw_server *s, const struct pccx_fw_req *r,
		      struct pccx_fw_refusal *why);

#endif /* PCCX_FW_INTERNAL_H */
