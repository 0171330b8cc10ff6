// SPDX-License-Identifier: MIT
/*
 * The board's handlers of INFO, PING, STATS and the buffer messages (docs/link.md). Every
 * field is checked before use; ranges are compared as "offset <= size && n <= size - offset",
 * which cannot wrap.
 */
#include "fw_internal.h"

static void put_name(uint8_t *p, const char *name)
{
	uint32_t i = 0;

	__builtin_memset(p, 0, PCCX_LINK_NAME_BYTES);
	while (name && name[i] && i < PCCX_LINK_NAME_BYTES - 1) {
		p[i] = (uint8_t)name[i];
		i++;
	}
}

int pccx__fw_on_info(struct pccx_fw_server *s, const struct pccx_fw_req *r,
		     struct pccx_fw_refusal *why)
{
	struct pccx_fw_dev_info di;
	struct pccx_vlimits lim;
	uint8_t *p = pccx__fw_reply_payload(s);

	(void)r;
	__builtin_memset(&di, 0, sizeof(di));
	if (s->cfg.exec->info(s->cfg.exec_ctx, &di))
		return pccx__fw_refuse(why, PCCX_LINK_E_DEVICE, 0, 0, "the device cannot be read");
	pccx__vlimits_default(&lim);
	__builtin_memset(p, 0, PCCX_LINK_INFO_BYTES);
	pccx__le16_put(p, PCCX_LINK_VERSION_MIN);
	pccx__le16_put(p + 2, PCCX_LINK_VERSION_MAX);
	pccx__le32_put(p + 4, s->max_payload);
	pccx__le32_put(p + 8, s->cfg.max_bufs);
	pccx__le32_put(p + 12, di.flags | (s->wedged ? PCCX_LINK_INFO_WEDGED : 0));
	pccx__le64_put(p + 16, di.max_buf_size);
	pccx__le64_put(p + 24, di.memory_total);
	pccx__le64_put(p + 32, di.memory_free);
	pccx__le64_put(p + 40, di.hw_id);
	pccx__le64_put(p + 48, di.features);
	pccx__le64_put(p + 56, di.caps);
	pccx__le64_put(p + 64, di.clocks);
	pccx__le32_put(p + 72, di.dma_addr_bits);
	pccx__le32_put(p + 76, di.l2_words);
	pccx__le32_put(p + 80, lim.max_insn);
	pccx__le32_put(p + 84, lim.max_dma);
	pccx__le32_put(p + 88, lim.max_stream);
	pccx__le32_put(p + 92, s->cfg.job_timeout_ms);
	put_name(p + 96, s->cfg.name);
	pccx__le64_put(p + 128, s->st.jobs_done);
	pccx__le64_put(p + 136, di.resets);
	pccx__le64_put(p + 144, s->st.busy_ns);
	return PCCX_LINK_INFO_BYTES;
}

int pccx__fw_on_ping(struct pccx_fw_server *s, const struct pccx_fw_req *r,
		     struct pccx_fw_refusal *why)
{
	(void)why;
	__builtin_memcpy(pccx__fw_reply_payload(s), r->p, r->len);
	return (int)r->len;
}

int pccx__fw_on_stats(struct pccx_fw_server *s, const struct pccx_fw_req *r,
		      struct pccx_fw_refusal *why)
{
	const struct pccx_link_rx_stats *rs = &s->rx.st;
	uint8_t *p = pccx__fw_reply_payload(s);

	(void)r;
	(void)why;
	pccx__le64_put(p, s->st.handled);
	pccx__le64_put(p + 8, rs->hunted);
	pccx__le64_put(p + 16, rs->header_crc);
	pccx__le64_put(p + 24, rs->payload_crc);
	pccx__le64_put(p + 32, rs->skipped);
	pccx__le64_put(p + 40, rs->truncated);
	pccx__le64_put(p + 48, s->st.errors);
	pccx__le64_put(p + 56, (uint64_t)s->st.last_type << 32 | s->st.last_err);
	return PCCX_LINK_STATS_BYTES;
}

int pccx__fw_on_create(struct pccx_fw_server *s, const struct pccx_fw_req *r,
		       struct pccx_fw_refusal *why)
{
	uint64_t size = pccx__le64_get(r->p), largest = 0;
	uint32_t access = pccx__le32_get(r->p + 8), pad = pccx__le32_get(r->p + 12);
	struct pccx_fw_buf *slot = NULL;
	uint8_t *p = pccx__fw_reply_payload(s), *mem = NULL;
	uint32_t i, handle = 0;
	int rc;

	if (pad)
		return pccx__fw_refuse(why, PCCX_LINK_E_INVALID, pad, 0, "pad must be zero");
	if (access & ~(uint32_t)(PCCX_BUF_DEV_READ | PCCX_BUF_DEV_WRITE))
		return pccx__fw_refuse(why, PCCX_LINK_E_INVALID, access, 3,
				       "access has undefined bits");
	if (!size)
		return pccx__fw_refuse(why, PCCX_LINK_E_INVALID, 0, 0, "size 0");
	for (i = 0; i < s->cfg.max_bufs && !slot; i++)
		if (!s->cfg.bufs[i].handle)
			slot = &s->cfg.bufs[i];
	if (!slot)
		return pccx__fw_refuse(why, PCCX_LINK_E_NOSPACE, size, 0,
				       "the buffer table is full");
	rc = s->cfg.exec->buf_alloc(s->cfg.exec_ctx, size, access, &handle, &mem, &largest);
	if (rc)
		return pccx__fw_refuse(why, PCCX_LINK_E_NOSPACE, size, largest,
				       "no room for a buffer of that size");
	if (!handle || !mem || pccx__fw_buf_find(s, handle)) {
		/* an executor that breaks its contract must not corrupt the table */
		if (mem)
			s->cfg.exec->buf_free(s->cfg.exec_ctx, handle);
		return pccx__fw_refuse(why, PCCX_LINK_E_DEVICE, handle, 0,
				       "the executor gave an unusable handle");
	}
	slot->handle = handle;
	slot->access = access;
	slot->size = size;
	slot->mem = mem;
	pccx__le32_put(p, handle);
	pccx__le32_put(p + 4, 0);
	pccx__le64_put(p + 8, size);
	return PCCX_LINK_CREATE_REP;
}

/* The buffer a request names, or a refusal; pad must be zero. */
static struct pccx_fw_buf *named(struct pccx_fw_server *s, const uint8_t *p,
				 struct pccx_fw_refusal *why)
{
	uint32_t handle = pccx__le32_get(p), pad = pccx__le32_get(p + 4);
	struct pccx_fw_buf *b;

	if (pad) {
		pccx__fw_refuse(why, PCCX_LINK_E_INVALID, pad, 0, "pad must be zero");
		return NULL;
	}
	b = pccx__fw_buf_find(s, handle);
	if (!b)
		pccx__fw_refuse(why, PCCX_LINK_E_HANDLE, handle, 0, "no such buffer");
	return b;
}

int pccx__fw_on_free(struct pccx_fw_server *s, const struct pccx_fw_req *r,
		     struct pccx_fw_refusal *why)
{
	struct pccx_fw_buf *b = named(s, r->p, why);

	if (!b)
		return PCCX_FW_REFUSED;
	if (s->job_active)
		return pccx__fw_refuse(why, PCCX_LINK_E_BUSY, s->job_id, 0,
				       "a job is active: WAIT for it first");
	s->cfg.exec->buf_free(s->cfg.exec_ctx, b->handle);
	__builtin_memset(b, 0, sizeof(*b));
	return 0;
}

/* [off, off + n) inside the buffer, or a refusal naming the end and the size. */
static int in_range(const struct pccx_fw_buf *b, uint64_t off, uint64_t n,
		    struct pccx_fw_refusal *why)
{
	if (off <= b->size && n <= b->size - off)
		return 0;
	return pccx__fw_refuse(why, PCCX_LINK_E_RANGE, off > UINT64_MAX - n ? UINT64_MAX : off + n,
			       b->size, "range outside the buffer");
}

int pccx__fw_on_upload(struct pccx_fw_server *s, const struct pccx_fw_req *r,
		       struct pccx_fw_refusal *why)
{
	struct pccx_fw_buf *b = named(s, r->p, why);
	uint64_t off = pccx__le64_get(r->p + 8), n = r->len - PCCX_LINK_UPLOAD_HDR;

	if (!b)
		return PCCX_FW_REFUSED;
	if (s->job_active)
		return pccx__fw_refuse(why, PCCX_LINK_E_BUSY, s->job_id, 0,
				       "a job is active: WAIT for it first");
	if (in_range(b, off, n, why))
		return PCCX_FW_REFUSED;
	__builtin_memcpy(b->mem + off, r->p + PCCX_LINK_UPLOAD_HDR, (size_t)n);
	pccx__le64_put(pccx__fw_reply_payload(s), off + n);
	return PCCX_LINK_UPLOAD_REP;
}

int pccx__fw_on_download(struct pccx_fw_server *s, const struct pccx_fw_req *r,
			 struct pccx_fw_refusal *why)
{
	struct pccx_fw_buf *b = named(s, r->p, why);
	uint64_t off = pccx__le64_get(r->p + 8);
	uint32_t n = pccx__le32_get(r->p + 16), pad = pccx__le32_get(r->p + 20);

	if (!b)
		return PCCX_FW_REFUSED;
	if (pad)
		return pccx__fw_refuse(why, PCCX_LINK_E_INVALID, pad, 0, "pad must be zero");
	if (!n || n > s->max_payload)
		return pccx__fw_refuse(why, PCCX_LINK_E_INVALID, n, s->max_payload,
				       "length must be 1 .. max_payload");
	if (in_range(b, off, n, why))
		return PCCX_FW_REFUSED;
	__builtin_memcpy(pccx__fw_reply_payload(s), b->mem + off, n);
	return (int)n;
}
