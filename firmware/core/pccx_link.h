/* SPDX-License-Identifier: MIT */
/*
 * The host-link wire format (docs/link.md): frames, message types, payload layouts, error
 * codes, the CRC, the receiver state machine and the byte-transport interface. Freestanding
 * (pccx_env.h only, no allocation): the board's core (firmware/core), the board ports and
 * libpccx's link backends all compile this one definition.
 *
 * Sending a frame: put the payload at frame + PCCX_LINK_HDR, call pccx__link_seal() with the
 * header fields, write the PCCX_LINK_OVERHEAD + len bytes it returns.
 * Receiving: a struct pccx_link_rx over a buffer of PCCX_LINK_OVERHEAD + max_payload bytes;
 * pccx__link_rx_feed() the bytes as they come; it stops at each event (a whole frame, or an
 * error the receiver should report) so the caller handles it before feeding the rest.
 */
#ifndef PCCX_LINK_H
#define PCCX_LINK_H

#include "pccx_env.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PCCX_LINK_MAGIC           0x4c584350u   /* "PCXL" read little-endian */
#define PCCX_LINK_VERSION         1u            /* the version this file describes */
#define PCCX_LINK_VERSION_MIN     1u            /* versions the board speaks */
#define PCCX_LINK_VERSION_MAX     1u
#define PCCX_LINK_HDR             20u           /* header bytes (with its CRC) */
#define PCCX_LINK_OVERHEAD        24u           /* header + payload CRC */
#define PCCX_LINK_MIN_PAYLOAD     4096u
#define PCCX_LINK_MAX_PAYLOAD     (1u << 20)
#define PCCX_LINK_F_REPLY         0x0001u       /* flags: set on every frame the board sends */
#define PCCX_LINK_IDLE_MS         200u          /* a frame stopped this long is dropped */
#define PCCX_LINK_JOB_TIMEOUT_MS  5000u         /* SUBMIT's timeout_ms 0 */

enum pccx_link_type {
	PCCX_LINK_INFO = 0x01,
	PCCX_LINK_PING = 0x02,
	PCCX_LINK_BUF_CREATE = 0x03,
	PCCX_LINK_BUF_FREE = 0x04,
	PCCX_LINK_UPLOAD = 0x05,
	PCCX_LINK_DOWNLOAD = 0x06,
	PCCX_LINK_SUBMIT = 0x07,
	PCCX_LINK_WAIT = 0x08,
	PCCX_LINK_RESET = 0x09,
	PCCX_LINK_STATS = 0x0a,
	PCCX_LINK_ERROR = 0x7f,
};

/* Error reply codes (docs/link.md "Error replies"). */
enum pccx_link_err {
	PCCX_LINK_E_NONE = 0,
	PCCX_LINK_E_HEADER_CRC = 1,
	PCCX_LINK_E_PAYLOAD_CRC = 2,
	PCCX_LINK_E_VERSION = 3,
	PCCX_LINK_E_FLAGS = 4,
	PCCX_LINK_E_TOO_LONG = 5,
	PCCX_LINK_E_TRUNCATED = 6,
	PCCX_LINK_E_TYPE = 7,
	PCCX_LINK_E_LENGTH = 8,
	PCCX_LINK_E_INVALID = 9,
	PCCX_LINK_E_HANDLE = 10,
	PCCX_LINK_E_RANGE = 11,
	PCCX_LINK_E_NOSPACE = 12,
	PCCX_LINK_E_BUSY = 13,
	PCCX_LINK_E_JOB = 14,
	PCCX_LINK_E_VALIDATE = 15,
	PCCX_LINK_E_NOJOB = 16,
	PCCX_LINK_E_DEVICE = 17,
	PCCX_LINK_E_COUNT
};

/* Fixed payload sizes. */
#define PCCX_LINK_INFO_BYTES      160u
#define PCCX_LINK_CREATE_REQ      16u
#define PCCX_LINK_CREATE_REP      16u
#define PCCX_LINK_FREE_REQ        8u
#define PCCX_LINK_UPLOAD_HDR      16u           /* then at least one data byte */
#define PCCX_LINK_UPLOAD_REP      8u
#define PCCX_LINK_DOWNLOAD_REQ    24u
#define PCCX_LINK_SUBMIT_REQ      24u
#define PCCX_LINK_SUBMIT_REP      8u
#define PCCX_LINK_WAIT_REQ        8u
#define PCCX_LINK_WAIT_REP        64u
#define PCCX_LINK_RESET_REQ       8u
#define PCCX_LINK_RESET_REP       8u
#define PCCX_LINK_STATS_BYTES     64u
#define PCCX_LINK_ERR_BYTES       40u           /* then up to PCCX_LINK_ERR_MSG bytes of text */
#define PCCX_LINK_ERR_MSG         88u
#define PCCX_LINK_NAME_BYTES      32u

/* Job image (SUBMIT): the job file of docs/job.md without a buffer table. */
#define PCCX_LINK_JOB_HDR         32u

/* WAIT status: the kernel UAPI's PCCX_JOB_* values. */
#define PCCX_LINK_JOB_RUNNING     1u
#define PCCX_LINK_JOB_DONE        2u
#define PCCX_LINK_JOB_FAULT       3u
#define PCCX_LINK_JOB_TIMEOUT     4u
#define PCCX_LINK_JOB_ABORTED     5u

/* WAIT hw_error[31:24]: the kernel UAPI's PCCX_FAULT_* values. */
#define PCCX_LINK_FAULT_SHIFT     24
#define PCCX_LINK_FAULT_BUSY      2u
#define PCCX_LINK_FAULT_DEVICE    3u
#define PCCX_LINK_FAULT_DM_STATUS 4u
#define PCCX_LINK_FAULT_DM_TAG    5u
#define PCCX_LINK_FAULT_XLATE     6u
#define PCCX_LINK_FAULT_ADDR      7u
#define PCCX_LINK_FAULT_RETIRED   8u
#define PCCX_LINK_FAULT_HUNG      9u
#define PCCX_LINK_FAULT_RESET     11u
#define PCCX_LINK_FAULT_WEDGED    14u

/* RESET flags. */
#define PCCX_LINK_RESET_FREE_ALL  0x1u          /* also free every buffer: a new owner */

/* INFO flags. */
#define PCCX_LINK_INFO_SIMULATED  0x1u
#define PCCX_LINK_INFO_WEDGED     0x2u

/* ---- little-endian fields ---------------------------------------------------------------- */

static inline void pccx__le16_put(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static inline void pccx__le32_put(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static inline void pccx__le64_put(uint8_t *p, uint64_t v)
{
	pccx__le32_put(p, (uint32_t)v);
	pccx__le32_put(p + 4, (uint32_t)(v >> 32));
}

static inline uint16_t pccx__le16_get(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t pccx__le32_get(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static inline uint64_t pccx__le64_get(const uint8_t *p)
{
	return (uint64_t)pccx__le32_get(p) | (uint64_t)pccx__le32_get(p + 4) << 32;
}

/* ---- frames ------------------------------------------------------------------------------ */

/* CRC-32 (IEEE, reflected 0xEDB88320): crc 0 to start, then the previous return to go on. */
uint32_t pccx__link_crc32(uint32_t crc, const void *data, size_t n);

struct pccx_link_hdr {
	uint8_t version;
	uint8_t type;
	uint16_t flags;
	uint32_t seq;
	uint32_t len;
};

/*
 * Write the header of a frame whose payload (len bytes) is already at frame + PCCX_LINK_HDR,
 * and the payload CRC after it. Returns the frame's size, PCCX_LINK_OVERHEAD + len.
 */
size_t pccx__link_seal(uint8_t *frame, uint8_t type, uint16_t flags, uint32_t seq, uint32_t len);

/* ---- the receiver ------------------------------------------------------------------------ */

enum pccx_link_rx_state { PCCX_LINK_RX_HUNT, PCCX_LINK_RX_HEADER, PCCX_LINK_RX_PAYLOAD,
			  PCCX_LINK_RX_SKIP };

/* What pccx__link_rx_feed() stopped for. */
enum pccx_link_rx_kind {
	PCCX_LINK_RX_NONE,      /* every byte consumed, no event */
	PCCX_LINK_RX_FRAME,     /* a whole frame: ev->hdr, payload at ev->payload */
	PCCX_LINK_RX_BAD,       /* a frame refused: ev->err (HEADER_CRC, PAYLOAD_CRC, VERSION,
				 * FLAGS, TOO_LONG, TRUNCATED), ev->hdr when it was read */
};

struct pccx_link_rx_event {
	int kind;                       /* enum pccx_link_rx_kind */
	int err;                        /* enum pccx_link_err for PCCX_LINK_RX_BAD */
	bool have_hdr;                  /* hdr is the frame's (its header CRC was good) */
	struct pccx_link_hdr hdr;
	const uint8_t *payload;         /* inside the receiver's buffer, valid until the next feed */
};

struct pccx_link_rx_stats {
	uint64_t frames;                /* whole frames delivered */
	uint64_t hunted;                /* bytes discarded while hunting for a magic */
	uint64_t header_crc, payload_crc;
	uint64_t skipped;               /* frames skipped by their length */
	uint64_t truncated;
};

struct pccx_link_rx {
	uint8_t *buf;                   /* PCCX_LINK_OVERHEAD + max_payload bytes */
	uint32_t max_payload;
	uint32_t have;                  /* bytes of the current frame in buf */
	int state;                      /* enum pccx_link_rx_state */
	uint64_t skip;                  /* SKIP: bytes still to discard */
	bool accept_replies;            /* the host's receiver: frames must carry REPLY */
	struct pccx_link_hdr hdr;
	struct pccx_link_rx_stats st;
};

/* buf holds PCCX_LINK_OVERHEAD + max_payload bytes. */
void pccx__link_rx_init(struct pccx_link_rx *rx, uint8_t *buf, uint32_t max_payload,
			bool accept_replies);
/*
 * Consume bytes of in[0..n) until an event; returns how many were consumed (the caller feeds
 * the rest after handling the event). ev->kind is PCCX_LINK_RX_NONE when all n were consumed
 * without one.
 */
size_t pccx__link_rx_feed(struct pccx_link_rx *rx, const uint8_t *in, size_t n,
			  struct pccx_link_rx_event *ev);
/* True while a frame is partly received (the idle rule applies). */
bool pccx__link_rx_partial(const struct pccx_link_rx *rx);
/* The idle timeout passed: drop a partial frame. Returns true (and fills ev) if one was. */
bool pccx__link_rx_idle(struct pccx_link_rx *rx, struct pccx_link_rx_event *ev);

/* ---- the byte transport ------------------------------------------------------------------- */

/*
 * A byte stream between host and board, the same shape on both sides: a UART, a pty or Unix
 * socket (serial), USB bulk endpoints, a socketpair in tests.
 *   read:  wait at most timeout_ms (0: do not wait) for at least one byte; return how many
 *          were stored (1..n), 0 when none came in time, or a negative value when the stream
 *          is gone (closed, unplugged).
 *   write: write all n bytes; return 0, or a negative value when they could not be written.
 */
struct pccx_link_transport {
	int (*read)(void *ctx, void *buf, size_t n, uint32_t timeout_ms);
	int (*write)(void *ctx, const void *buf, size_t n);
	void (*close)(void *ctx);       /* may be NULL (the board's ports never close) */
	void *ctx;
};

/* Short name of an error code, e.g. "PAYLOAD_CRC"; "?" for an unknown one. */
const char *pccx__link_err_name(int err);
/* Short name of a message type, e.g. "UPLOAD"; "?" for an unknown one. */
const char *pccx__link_type_name(int type);

#ifdef __cplusplus
}
#endif
#endif /* PCCX_LINK_H */
