// SPDX-License-Identifier: MIT
/*
 * pccx-simd: the cycle simulator (sim/) as the device behind pccx.ko in the
 * QEMU guest. It attaches to /dev/pccx_simlink, answers the driver's register
 * accesses with the simulator's, maps the DMA windows the driver opens (and
 * nothing else) into the simulator's shadow IOMMU, lets simulated time run
 * while the device is busy and nobody is asking, raises the interrupt line on
 * a rising edge, and reports every device access outside a window.
 *
 *   pccx-simd [--ctl FIFO] [--rsp FIFO] [--ready FILE]
 *
 * Control commands (one per line on the --ctl FIFO), for the tests:
 *   hang     from the next instruction word on, the device hangs: it reads as busy
 *            with a full instruction FIFO and makes no progress until the driver
 *            writes RESET
 *   stuck-reset N
 *            the next N RESET writes never complete (RESET reads 1 until the next
 *            RESET write)
 *   slow EVERY CYCLES
 *            a slow host: after every EVERY-th request of the driver the device runs alone
 *            for CYCLES core cycles before the answer (as if the driver were preempted
 *            between two accesses); "slow 0 0" ends it
 *   fault INDEX CAUSE
 *            the device raises ERROR with CAUSE (a PCCX_CAUSE_* number) when instruction
 *            INDEX of a job reaches issue, once (pccx__sim_inject_error)
 *   rogue    make a DataMover read outside every window (must be refused)
 *   probe    try to map a window that is not open (must be refused)
 *   stats    print the simulator's counters
 * Each command answers one line on the --rsp FIFO.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pccx_sim.h"
#include "pccx_simlink.h"
#include "uapi/pccx.h"
#include "pccx_regs.h"

#define RUN_CHUNK 4000u          /* core cycles simulated per step while the driver waits */
#define MAX_WINDOWS 4096

struct window {
	uint32_t id;
	uint64_t addr, size;
	void *map;
	size_t map_len;
};

static pccx_sim *sim;
static int link_fd = -1;
static struct window windows[MAX_WINDOWS];
static unsigned n_windows;
static int armed, frozen;
static int stuck_resets;		/* RESET writes left that never complete */
static int reset_stuck;			/* RESET reads 1 until the next RESET write */
static uint64_t frozen_retired, frozen_cycles;
static unsigned long slow_every, slow_cycles, requests;	/* the "slow" control */
static struct pccx_sim_config cfg;
static uint64_t last_faults;
static long page;

static void die(const char *what)
{
	fprintf(stderr, "pccx-simd: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void report_faults(void)
{
	struct pccx_sim_stats st;
	struct pccx_simlink_fault f;
	uint64_t info = 0;

	pccx__sim_get_stats(sim, &st);
	if (st.window_faults == last_faults)
		return;
	if (pccx__sim_mmio_read64(sim, PCCX_REG_ERROR_INFO, &info))
		info = 0;
	while (last_faults < st.window_faults) {
		memset(&f, 0, sizeof(f));
		f.addr = info;
		f.len = 16;
		if (ioctl(link_fd, PCCX_SIMLINK_FAULT, &f))
			die("FAULT");
		last_faults++;
	}
}

static int irq_line;

static void update_irq(void)
{
	int line = pccx__sim_irq(sim);

	if (line && !irq_line && ioctl(link_fd, PCCX_SIMLINK_IRQ) && errno != ENXIO)
		die("IRQ");
	irq_line = line;
}

static void window_open(const struct pccx_simlink_msg *m)
{
	struct window *w;
	uint32_t acc = 0;
	size_t len = (size_t)((m->size + (uint64_t)page - 1) & ~((uint64_t)page - 1));
	void *p;

	if (n_windows == MAX_WINDOWS) {
		fprintf(stderr, "pccx-simd: too many windows\n");
		return;
	}
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, link_fd,
		 (off_t)m->id * page);
	if (p == MAP_FAILED) {
		fprintf(stderr, "pccx-simd: cannot map window %u: %s\n", m->id, strerror(errno));
		return;
	}
	if (m->access & PCCX_BO_DEV_READ)
		acc |= PCCX_SIM_WIN_READ;
	if (m->access & PCCX_BO_DEV_WRITE)
		acc |= PCCX_SIM_WIN_WRITE;
	if (pccx__sim_dma_window_add(sim, m->addr, m->size, p, acc)) {
		fprintf(stderr, "pccx-simd: window %u at 0x%llx refused by the simulator\n", m->id,
			(unsigned long long)m->addr);
		munmap(p, len);
		return;
	}
	w = &windows[n_windows++];
	w->id = m->id;
	w->addr = m->addr;
	w->size = m->size;
	w->map = p;
	w->map_len = len;
}

static void window_close(const struct pccx_simlink_msg *m)
{
	unsigned i;

	for (i = 0; i < n_windows; i++) {
		if (windows[i].id != m->id)
			continue;
		if (pccx__sim_dma_window_remove(sim, windows[i].addr))
			fprintf(stderr, "pccx-simd: window %u unknown to the simulator\n", m->id);
		munmap(windows[i].map, windows[i].map_len);
		windows[i] = windows[--n_windows];
		return;
	}
}

/* What a hung device reads as: busy, FIFOs full, nothing retiring, no status. */
static bool frozen_read(uint32_t off, __u64 *v)
{
	if (off >= PCCX_DM_PAGE(0)) {
		switch ((off - PCCX_DM_PAGE(0)) % 0x1000) {
		case PCCX_DM_STS_POP:
		case PCCX_DM_STS_LVL:
			*v = 0;
			return true;
		case PCCX_DM_FLAGS:
			*v = PCCX_DM_FLAG_CMD_FULL | PCCX_DM_FLAG_STS_EMPTY;
			return true;
		case PCCX_DM_CMD_LVL:
			*v = cfg.dm_fifo_depth;
			return true;
		}
		return false;
	}
	switch (off) {
	case PCCX_REG_INSTR:
	case PCCX_REG_STATUS:
		*v = PCCX_STATUS_BUSY | ((uint64_t)cfg.instr_fifo_depth << PCCX_STATUS_FIFO_SHIFT);
		return true;
	case PCCX_REG_RETIRED:
		*v = frozen_retired;
		return true;
	case PCCX_REG_CYCLES:
		*v = frozen_cycles;
		return true;
	case PCCX_REG_IRQ_STATUS:
	case PCCX_REG_ERROR:
	case PCCX_REG_ERROR_INFO:
	case PCCX_REG_RESET:
		*v = 0;
		return true;
	}
	return false;
}

/* Answer one request; returns 1 when the device may now have work. */
static int handle(struct pccx_simlink_msg *m)
{
	uint64_t v64 = ~0ull;
	uint32_t v32 = ~0u;
	int work = 0;

	switch (m->op) {
	case PCCX_SIMLINK_RD64:
		if (reset_stuck && m->addr == PCCX_REG_RESET) {
			m->value = 1;
			break;
		}
		if (frozen && frozen_read((uint32_t)m->addr, &m->value))
			break;
		if (pccx__sim_mmio_read64(sim, (uint32_t)m->addr, &v64))
			v64 = ~0ull;
		m->value = v64;
		break;
	case PCCX_SIMLINK_RD32:
		if (frozen && frozen_read((uint32_t)m->addr, &m->value))
			break;
		if (pccx__sim_mmio_read32(sim, (uint32_t)m->addr, &v32))
			v32 = ~0u;
		m->value = v32;
		break;
	case PCCX_SIMLINK_WR64:
		if (m->addr == PCCX_REG_RESET && (m->value & 1)) {
			reset_stuck = stuck_resets > 0;
			if (reset_stuck) {
				stuck_resets--;
				fprintf(stderr, "pccx-simd: RESET written: it never completes\n");
				break;
			}
		}
		if (frozen && !(m->addr == PCCX_REG_RESET && (m->value & 1)))
			break;
		/* an armed hang waits for an instruction: the driver may reset first */
		if (frozen && m->addr == PCCX_REG_RESET) {
			fprintf(stderr, "pccx-simd: RESET written: the device runs again\n");
			frozen = 0;
		}
		if (pccx__sim_mmio_write64(sim, (uint32_t)m->addr, m->value))
			fprintf(stderr, "pccx-simd: write64 0x%llx refused\n",
				(unsigned long long)m->addr);
		if (armed && m->addr == PCCX_REG_INSTR) {
			armed = 0;
			frozen = 1;
			if (pccx__sim_mmio_read64(sim, PCCX_REG_RETIRED, &frozen_retired))
				frozen_retired = 0;
			frozen_cycles = pccx__sim_cycles(sim);
			fprintf(stderr, "pccx-simd: the device hangs now\n");
		}
		work = 1;
		break;
	case PCCX_SIMLINK_WR32:
		if (frozen)
			break;
		if (pccx__sim_mmio_write32(sim, (uint32_t)m->addr, (uint32_t)m->value))
			fprintf(stderr, "pccx-simd: write32 0x%llx refused\n",
				(unsigned long long)m->addr);
		work = 1;
		break;
	case PCCX_SIMLINK_WIN_OPEN:
		window_open(m);
		break;
	case PCCX_SIMLINK_WIN_CLOSE:
		window_close(m);
		break;
	default:
		fprintf(stderr, "pccx-simd: unknown request %u\n", m->op);
		break;
	}
	return work;
}

static void control(const char *cmd, int rsp)
{
	char out[256];

	if (!strcmp(cmd, "hang")) {
		armed = 1;
		snprintf(out, sizeof(out), "armed\n");
	} else if (!strncmp(cmd, "stuck-reset ", 12)) {
		stuck_resets = atoi(cmd + 12);
		snprintf(out, sizeof(out), "stuck %d\n", stuck_resets);
	} else if (!strncmp(cmd, "slow ", 5)) {
		if (sscanf(cmd + 5, "%lu %lu", &slow_every, &slow_cycles) != 2)
			slow_every = slow_cycles = 0;
		snprintf(out, sizeof(out), "slow %lu %lu\n", slow_every, slow_cycles);
	} else if (!strncmp(cmd, "fault ", 6)) {
		unsigned int index, cause;

		if (sscanf(cmd + 6, "%u %u", &index, &cause) == 2 && cause && cause < 256) {
			pccx__sim_inject_error(sim, index, cause);
			snprintf(out, sizeof(out), "fault %u %u\n", index, cause);
		} else {
			snprintf(out, sizeof(out), "bad fault command\n");
		}
	} else if (!strcmp(cmd, "probe")) {
		/* a window id that is not open must not be mappable */
		void *p = mmap(NULL, (size_t)page, PROT_READ, MAP_SHARED, link_fd,
			       (off_t)0x7ffff * page);

		if (p == MAP_FAILED) {
			snprintf(out, sizeof(out), "refused %d\n", errno);
		} else {
			munmap(p, (size_t)page);
			snprintf(out, sizeof(out), "MAPPED\n");
		}
	} else if (!strcmp(cmd, "rogue")) {
		/* a DataMover read of 16 bytes at 0x1000, outside every window */
		uint32_t base = PCCX_DM_PAGE(PCCX_DM_FMAP);
		int r = 0;

		r |= pccx__sim_mmio_write32(sim, base + PCCX_DM_CMD_LO,
					    16u | PCCX_DM_CMD_TYPE_INCR | PCCX_DM_CMD_EOF);
		r |= pccx__sim_mmio_write32(sim, base + PCCX_DM_CMD_HI, 0x1000);
		r |= pccx__sim_mmio_write32(sim, base + PCCX_DM_CMD_EXT, 1);
		r |= pccx__sim_mmio_write32(sim, base + PCCX_DM_CMD_PUSH, 1);
		pccx__sim_advance(sim, RUN_CHUNK);
		report_faults();
		/* leave the device as the driver expects it: reset */
		r |= pccx__sim_mmio_write64(sim, PCCX_REG_RESET, 1);
		(void)pccx__sim_run_until_idle(sim, 1000000);
		snprintf(out, sizeof(out), "rogue %s\n", r ? "mmio-error" : "done");
	} else if (!strcmp(cmd, "stats")) {
		struct pccx_sim_stats st;

		pccx__sim_get_stats(sim, &st);
		snprintf(out, sizeof(out), "cycles %llu retired %llu window_faults %llu\n",
			 (unsigned long long)st.cycles, (unsigned long long)st.retired,
			 (unsigned long long)st.window_faults);
	} else {
		snprintf(out, sizeof(out), "unknown command '%.64s'\n", cmd);
	}
	if (rsp >= 0 && write(rsp, out, strlen(out)) < 0)
		fprintf(stderr, "pccx-simd: response: %s\n", strerror(errno));
}

int main(int argc, char **argv)
{
	const char *ctl_path = NULL, *rsp_path = NULL, *ready = NULL;
	char ctl_buf[256];
	size_t ctl_len = 0;
	int ctl = -1, rsp = -1, busy = 0, i;
	pccx_diag d;

	for (i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--ctl"))
			ctl_path = argv[i + 1];
		else if (!strcmp(argv[i], "--rsp"))
			rsp_path = argv[i + 1];
		else if (!strcmp(argv[i], "--ready"))
			ready = argv[i + 1];
	}
	page = sysconf(_SC_PAGESIZE);
	signal(SIGPIPE, SIG_IGN);

	pccx__sim_config_default(&cfg);
	if (pccx__sim_create(&cfg, &sim, &d)) {
		fprintf(stderr, "pccx-simd: %s\n", d.msg);
		return 1;
	}
	if (ctl_path) {
		mkfifo(ctl_path, 0600);
		ctl = open(ctl_path, O_RDWR | O_NONBLOCK);
		if (ctl < 0)
			die(ctl_path);
	}
	if (rsp_path) {
		mkfifo(rsp_path, 0600);
		rsp = open(rsp_path, O_RDWR | O_NONBLOCK);
		if (rsp < 0)
			die(rsp_path);
	}
	link_fd = open("/dev/pccx_simlink", O_RDWR);
	if (link_fd < 0)
		die("/dev/pccx_simlink");
	if (ioctl(link_fd, PCCX_SIMLINK_ATTACH))
		die("ATTACH");
	if (ready) {
		int fd = open(ready, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (fd >= 0)
			close(fd);
	}

	for (;;) {
		struct pollfd pfd[2] = { { .fd = link_fd, .events = POLLIN },
					 { .fd = ctl, .events = POLLIN } };
		struct pccx_simlink_msg m;
		int n;

		/*
		 * Simulated time runs as on hardware: through the cost of each access, and
		 * freely whenever no request is waiting, also in the middle of a sequence of
		 * accesses (the device does not wait for a driver that was preempted). It stops
		 * only when the device is idle or frozen.
		 */
		n = poll(pfd, ctl >= 0 ? 2 : 1, !busy || frozen ? -1 : 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("poll");
		}
		if (pfd[0].revents & POLLIN) {
			ssize_t r = read(link_fd, &m, sizeof(m));

			if (r < 0 && (errno == EINTR || errno == EAGAIN))
				continue;
			if (r != (ssize_t)sizeof(m))
				die("read");
			busy |= handle(&m);
			if (slow_every && ++requests % slow_every == 0 && !frozen)
				pccx__sim_advance(sim, slow_cycles);
			report_faults();
			update_irq();
			if (write(link_fd, &m, sizeof(m)) != (ssize_t)sizeof(m))
				die("answer");
			continue;
		}
		if (ctl >= 0 && (pfd[1].revents & POLLIN)) {
			ssize_t r = read(ctl, ctl_buf + ctl_len, sizeof(ctl_buf) - 1 - ctl_len);
			char *nl;

			if (r > 0)
				ctl_len += (size_t)r;
			ctl_buf[ctl_len] = 0;
			while ((nl = strchr(ctl_buf, '\n'))) {
				*nl = 0;
				control(ctl_buf, rsp);
				memmove(ctl_buf, nl + 1, ctl_len - (size_t)(nl + 1 - ctl_buf) + 1);
				ctl_len -= (size_t)(nl + 1 - ctl_buf);
			}
			if (ctl_len == sizeof(ctl_buf) - 1)
				ctl_len = 0;
			continue;
		}
		if (busy && !frozen) {
			busy = !pccx__sim_run_until_idle(sim, RUN_CHUNK);
			report_faults();
			update_irq();
		}
	}
}
