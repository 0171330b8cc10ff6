// SPDX-License-Identifier: MIT
/*
 * The link backend's buffers (backend_link.h): a board buffer and its host copy. What the
 * board holds is remembered as one 64-bit hash per 4 KiB chunk, so before a job only chunks
 * whose host bytes changed are uploaded (the weights once, the step's inputs each step),
 * without keeping a second copy of every buffer; only buffers the host wrote since the last
 * job (`touched`) are compared at all.
 */
#include <stdlib.h>
#include <string.h>

#include "backend_link_int.h"
#include "diag.h"

/* A 64-bit hash of a chunk (multiply-rotate over 8-byte words, the tail bytewise). */
static uint64_t chunk_sum(const uint8_t *p, size_t n)
{
	uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
	size_t i;

	for (i = 0; i + 8 <= n; i += 8) {
		uint64_t w;

		memcpy(&w, p + i, 8);
		h ^= w * 0xff51afd7ed558ccdull;
		h = (h << 31 | h >> 33) * 0xc4ceb9fe1a85ec53ull;
	}
	for (; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h ^ h >> 29;
}

static uint64_t n_chunks(uint64_t size)
{
	return (size + PCCX_LINK_CHUNK - 1) / PCCX_LINK_CHUNK;
}

static size_t chunk_len(const struct link_buf *lb, uint64_t c)
{
	uint64_t off = c * PCCX_LINK_CHUNK;

	return (size_t)(lb->size - off < PCCX_LINK_CHUNK ? lb->size - off : PCCX_LINK_CHUNK);
}

/* The board holds the host copy's bytes of chunks [c0, c1). */
static void note_synced(struct link_buf *lb, uint64_t c0, uint64_t c1)
{
	for (; c0 < c1; c0++)
		lb->sum[c0] = chunk_sum(lb->host + c0 * PCCX_LINK_CHUNK, chunk_len(lb, c0));
}

static int upload_raw(struct pccx_link_backend *b, uint32_t handle, uint64_t off,
		      const uint8_t *src, uint64_t len, pccx_diag *d)
{
	uint64_t room = b->max_payload - PCCX_LINK_UPLOAD_HDR;

	while (len) {
		uint64_t n = len < room ? len : room;
		uint8_t *p = b->tx + PCCX_LINK_HDR;
		struct link_reply rep;
		int rc;

		pccx__le32_put(p, handle);
		pccx__le32_put(p + 4, 0);
		pccx__le64_put(p + 8, off);
		memcpy(p + PCCX_LINK_UPLOAD_HDR, src, n);
		rc = pccx__link_request(b, PCCX_LINK_UPLOAD, (uint32_t)(PCCX_LINK_UPLOAD_HDR + n),
					PCCX_LINK_UPLOAD_REP, 0, &rep, d);
		if (rc)
			return rc;
		if (pccx__le64_get(rep.p) != off + n)
			return pccx__fail(d, PCCX_ERR_IO, "%s: UPLOAD of %llu bytes at %llu acknowledged "
					  "up to %llu", b->what, (unsigned long long)n,
					  (unsigned long long)off,
					  (unsigned long long)pccx__le64_get(rep.p));
		off += n;
		src += n;
		len -= n;
	}
	return 0;
}

int pccx__link_upload(struct pccx_link_backend *b, struct link_buf *lb, uint64_t off,
		      uint64_t len, pccx_diag *d)
{
	return upload_raw(b, lb->handle, off, lb->host + off, len, d);
}

int pccx__link_upload_image(struct pccx_link_backend *b, uint32_t handle, const uint8_t *src,
			    uint64_t len, pccx_diag *d)
{
	return upload_raw(b, handle, 0, src, len, d);
}

int pccx__link_download(struct pccx_link_backend *b, struct link_buf *lb, uint64_t off,
			uint64_t len, pccx_diag *d)
{
	uint64_t end = off + len, at = off;

	if (off > lb->size || len > lb->size - off)
		return pccx__fail(d, PCCX_ERR_RANGE, "%s: download of [%llu, +%llu) outside a buffer "
				  "of %llu bytes", b->what, (unsigned long long)off,
				  (unsigned long long)len, (unsigned long long)lb->size);
	while (at < end) {
		uint64_t n = end - at < b->max_payload ? end - at : b->max_payload;
		uint8_t *p = b->tx + PCCX_LINK_HDR;
		struct link_reply rep;
		int rc;

		pccx__le32_put(p, lb->handle);
		pccx__le32_put(p + 4, 0);
		pccx__le64_put(p + 8, at);
		pccx__le32_put(p + 16, (uint32_t)n);
		pccx__le32_put(p + 20, 0);
		rc = pccx__link_request(b, PCCX_LINK_DOWNLOAD, PCCX_LINK_DOWNLOAD_REQ, (uint32_t)n, 0,
					&rep, d);
		if (rc)
			return rc;
		memcpy(lb->host + at, rep.p, n);
		at += n;
	}
	if (len)
		note_synced(lb, off / PCCX_LINK_CHUNK, n_chunks(end));
	return 0;
}

/* Chunks [c0, c1) may differ on the board: make the next sync upload them. */
void pccx__link_forget(struct link_buf *lb, uint64_t off, uint64_t len)
{
	uint64_t c, c1 = n_chunks(off + len);

	for (c = off / PCCX_LINK_CHUNK; c < c1; c++)
		lb->sum[c] = ~chunk_sum(lb->host + c * PCCX_LINK_CHUNK, chunk_len(lb, c));
	lb->touched = true;
}

int pccx__link_sync_up(struct pccx_link_backend *b, pccx_diag *d)
{
	uint32_t i;

	for (i = 0; i < b->n_buf; i++) {
		struct link_buf *lb = &b->buf[i];
		uint64_t c = 0, n = n_chunks(lb->size);

		if (!lb->touched)
			continue;
		while (c < n) {
			uint64_t c1;
			int rc;

			if (chunk_sum(lb->host + c * PCCX_LINK_CHUNK, chunk_len(lb, c)) == lb->sum[c]) {
				c++;
				continue;
			}
			/* a run of changed chunks goes up in as few frames as it takes */
			for (c1 = c + 1; c1 < n && chunk_sum(lb->host + c1 * PCCX_LINK_CHUNK,
							     chunk_len(lb, c1)) != lb->sum[c1]; c1++)
				;
			rc = pccx__link_upload(b, lb, c * PCCX_LINK_CHUNK,
					       (c1 < n ? c1 * PCCX_LINK_CHUNK : lb->size) -
					       c * PCCX_LINK_CHUNK, d);
			if (rc)
				return rc;
			note_synced(lb, c, c1);
			c = c1;
		}
		lb->touched = false;
	}
	return 0;
}

int pccx__link_backend_buf_alloc(struct pccx_link_backend *b, uint64_t size, uint32_t access,
				 uint32_t *handle, pccx_diag *d)
{
	uint8_t *p = b->tx + PCCX_LINK_HDR;
	struct link_reply rep;
	struct link_buf lb = { 0 };
	int rc;

	if (!size || access & ~(uint32_t)(PCCX_BUF_DEV_READ | PCCX_BUF_DEV_WRITE) || !access)
		return pccx__fail(d, PCCX_ERR_INVALID, "%s: a buffer of %llu bytes with access 0x%x",
				  b->what, (unsigned long long)size, access);
	if (b->n_buf == b->cap_buf) {
		uint32_t cap = b->cap_buf ? 2 * b->cap_buf : 16;
		struct link_buf *nb = realloc(b->buf, cap * sizeof(*nb));

		if (!nb)
			return pccx__fail(d, PCCX_ERR_NOMEM, "%s: out of memory", b->what);
		b->buf = nb;
		b->cap_buf = cap;
	}
	lb.host = calloc(1, (size_t)size);
	lb.sum = malloc((size_t)n_chunks(size) * sizeof(*lb.sum));
	if (!lb.host || !lb.sum) {
		free(lb.host);
		free(lb.sum);
		return pccx__fail(d, PCCX_ERR_NOMEM, "%s: no host memory for a buffer of %llu bytes",
				  b->what, (unsigned long long)size);
	}
	pccx__le64_put(p, size);
	pccx__le32_put(p + 8, access);
	pccx__le32_put(p + 12, 0);
	rc = pccx__link_request(b, PCCX_LINK_BUF_CREATE, PCCX_LINK_CREATE_REQ, PCCX_LINK_CREATE_REP,
				0, &rep, d);
	if (rc) {
		free(lb.host);
		free(lb.sum);
		return rc;
	}
	lb.handle = pccx__le32_get(rep.p);
	lb.access = access;
	lb.size = size;
	/* the board's bytes are zero, as the host copy's */
	note_synced(&lb, 0, n_chunks(size));
	b->buf[b->n_buf++] = lb;
	*handle = lb.handle;
	return 0;
}

int pccx__link_free_handle(struct pccx_link_backend *b, uint32_t handle, pccx_diag *d)
{
	struct link_reply rep;
	uint8_t *p = b->tx + PCCX_LINK_HDR;

	pccx__le32_put(p, handle);
	pccx__le32_put(p + 4, 0);
	return pccx__link_request(b, PCCX_LINK_BUF_FREE, PCCX_LINK_FREE_REQ, 0, 0, &rep, d);
}

int pccx__link_backend_buf_free(struct pccx_link_backend *b, uint32_t handle)
{
	struct link_buf *lb = pccx__link_buf(b, handle);
	int rc;

	if (!lb)
		return PCCX_ERR_NOT_FOUND;
	free(lb->host);
	free(lb->sum);
	*lb = b->buf[--b->n_buf];
	rc = pccx__link_free_handle(b, handle, NULL);
	return rc ? PCCX_ERR_IO : 0;
}

void *pccx__link_backend_buf_map(struct pccx_link_backend *b, uint32_t handle, uint64_t *size)
{
	struct link_buf *lb = pccx__link_buf(b, handle);

	if (!lb)
		return NULL;
	if (size)
		*size = lb->size;
	lb->touched = true;
	return lb->host;
}

void pccx__link_backend_buf_touch(struct pccx_link_backend *b, uint32_t handle)
{
	struct link_buf *lb = pccx__link_buf(b, handle);

	if (lb)
		lb->touched = true;
}
