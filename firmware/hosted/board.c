// SPDX-License-Identifier: MIT
/*
 * The hosted board (board.h): the port a real board's is modelled on. The port owns every
 * table and buffer (here from the heap and one anonymous mapping for the DMA region), hands
 * them to the core once, and loops: read with the server's timeout, feed, poll.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "board.h"
#include "diag.h"
#include "fileio.h"
#include "sim_regs.h"

#define REGION_DEV 0x40000000ull     /* the region's device address (any 64-byte aligned) */

struct pccx_hosted_board {
	pccx_sim *sim;
	uint8_t *region;
	uint64_t region_bytes;
	struct pccx_fw_span *spans;
	struct pccx_fw_buf *bufs;
	uint8_t *rx, *tx;
	struct pccx_fw_regs regs;
	struct pccx_fw_server srv;
	int fd;                          /* the connection being served */
	bool sock;
	/* the corrupt_job knob: the executor is the register executor seen through corrupt_ops */
	uint64_t corrupt_job, jobs;
	struct pccx_job_view job;
};

/* ---- the corrupt_job knob: the register executor, with wrong bytes after one job -------- */

static struct pccx_hosted_board *of_regs(void *ctx)
{
	return (struct pccx_hosted_board *)((char *)ctx - offsetof(struct pccx_hosted_board, regs));
}

static int c_start(void *ctx, const struct pccx_job_view *job, uint32_t timeout_ms,
		   struct pccx_fw_outcome *out)
{
	of_regs(ctx)->job = *job;
	return pccx__fw_regs_exec.start(ctx, job, timeout_ms, out);
}

static uint32_t c_poll(void *ctx, struct pccx_fw_outcome *out)
{
	struct pccx_hosted_board *b = of_regs(ctx);
	uint32_t st = pccx__fw_regs_exec.poll(ctx, out);
	uint32_t i;

	if (st == PCCX_LINK_JOB_RUNNING || ++b->jobs != b->corrupt_job)
		return st;
	/* the last range the job wrote (a decode step's logits) */
	for (i = b->job.n_dma; i--;) {
		const struct pccx_dma_desc *dd = &b->job.dma[i];
		const struct pccx_fw_span *sp = pccx__fw_region_find(&b->regs.region, dd->handle);
		static const uint8_t flt_max[4] = { 0xff, 0xff, 0x7f, 0x7f };

		if (dd->flags != PCCX_DMA_FROM_DEVICE || !sp || dd->offset + 4 > sp->size)
			continue;
		memcpy(b->regs.region.cpu + sp->off + dd->offset, flt_max, 4);
		break;
	}
	return st;
}


/*
 * The descriptor is non-blocking: a host that stops reading its replies makes the write fail
 * after 5 s (the reply is lost, counted by the server), it does not stop the board.
 */
static int board_write(void *ctx, const void *buf, size_t n)
{
	struct pccx_hosted_board *b = ctx;

	return pccx__fd_write_all(b->fd, b->sock, buf, n, 5000);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static int setup(struct pccx_hosted_board *b, const struct pccx_hosted_board_opts *o,
		 pccx_diag *d)
{
	uint32_t max_bufs = o && o->max_bufs ? o->max_bufs : 256;
	uint32_t payload = o && o->max_payload ? o->max_payload : 256u << 10;
	struct pccx_fw_regs_cfg rc;
	struct pccx_fw_server_cfg sc = { 0 };
	int r;

	b->region_bytes = o && o->region_bytes ? o->region_bytes : 64ull << 20;
	b->region = mmap(NULL, b->region_bytes, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (b->region == MAP_FAILED) {
		b->region = NULL;
		return pccx__fail(d, PCCX_ERR_NOMEM, "board: no DMA region of %llu bytes",
				  (unsigned long long)b->region_bytes);
	}
	b->spans = calloc(max_bufs, sizeof(*b->spans));
	b->bufs = calloc(max_bufs, sizeof(*b->bufs));
	b->rx = malloc(PCCX_LINK_OVERHEAD + (size_t)payload);
	b->tx = malloc(PCCX_LINK_OVERHEAD + (size_t)payload);
	if (!b->spans || !b->bufs || !b->rx || !b->tx)
		return pccx__fail(d, PCCX_ERR_NOMEM, "board: out of memory");
	r = pccx__sim_create(NULL, &b->sim, d);
	if (r)
		return r;
	r = pccx__fw_sim_regs_cfg(b->sim, b->region, REGION_DEV, b->region_bytes, b->spans,
				  max_bufs, &rc);
	if (r)
		return pccx__fail(d, r, "board: the simulator refused the DMA region");
	r = pccx__fw_regs_init(&b->regs, &rc);
	if (r)
		return pccx__fail(d, PCCX_ERR_DEVICE, "board: the device is unusable: %s",
				  pccx__engine_fail_name(r));
	sc.exec = &pccx__fw_regs_exec;
	sc.exec_ctx = &b->regs;
	b->corrupt_job = o ? o->corrupt_job : 0;
	if (b->corrupt_job) {
		static struct pccx_fw_exec_ops ops;

		ops = pccx__fw_regs_exec;
		ops.start = c_start;
		ops.poll = c_poll;
		sc.exec = &ops;
	}
	sc.write = board_write;
	sc.write_ctx = b;
	sc.rx = b->rx;
	sc.tx = b->tx;
	sc.buf_size = PCCX_LINK_OVERHEAD + payload;
	sc.bufs = b->bufs;
	sc.max_bufs = max_bufs;
	sc.name = o && o->name ? o->name : "hosted-sim";
	if (pccx__fw_server_init(&b->srv, &sc))
		return pccx__fail(d, PCCX_ERR_INVALID, "board: max_payload %u outside %u..%u",
				  payload, PCCX_LINK_MIN_PAYLOAD, PCCX_LINK_MAX_PAYLOAD);
	return 0;
}

int pccx__hosted_board_create(const struct pccx_hosted_board_opts *o,
			      struct pccx_hosted_board **out, pccx_diag *d)
{
	struct pccx_hosted_board *b = calloc(1, sizeof(*b));
	int rc;

	*out = NULL;
	if (!b)
		return pccx__fail(d, PCCX_ERR_NOMEM, "board: out of memory");
	b->fd = -1;
	rc = setup(b, o, d);
	if (rc) {
		pccx__hosted_board_destroy(b);
		return rc;
	}
	*out = b;
	return 0;
}

void pccx__hosted_board_destroy(struct pccx_hosted_board *b)
{
	if (!b)
		return;
	if (b->sim)
		pccx__sim_destroy(b->sim);
	if (b->region)
		munmap(b->region, b->region_bytes);
	free(b->spans);
	free(b->bufs);
	free(b->rx);
	free(b->tx);
	free(b);
}

struct pccx_fw_server *pccx__hosted_board_server(struct pccx_hosted_board *b)
{
	return &b->srv;
}

int pccx__hosted_board_serve(struct pccx_hosted_board *b, int fd, volatile int *stop)
{
	struct stat sb;
	uint8_t in[65536];

	b->fd = fd;
	b->sock = !fstat(fd, &sb) && S_ISSOCK(sb.st_mode);
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK))
		return -1;
	pccx__fw_server_reconnected(&b->srv);
	while (!stop || !*stop) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int k = poll(&p, 1, (int)pccx__fw_server_read_timeout(&b->srv));

		if (k < 0 && errno != EINTR)
			return -1;
		if (k > 0) {
			ssize_t n = read(fd, in, sizeof(in));

			if (n == 0 || (n < 0 && errno == EIO))
				return 0;   /* the peer closed (EIO: a pty's other side) */
			if (n < 0 && errno != EINTR && errno != EAGAIN)
				return -1;
			if (n > 0)
				pccx__fw_server_feed(&b->srv, in, (size_t)n, now_ms());
		}
		pccx__fw_server_poll(&b->srv, now_ms());
	}
	return 0;
}
