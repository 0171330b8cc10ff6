// SPDX-License-Identifier: MIT
/*
 * Guest tests of /dev/pccx (run by tests/qemu/init.c in the QEMU guest, with
 * pccx-simd as the device). Each test prints "PCCX-TEST ok NAME" or
 * "PCCX-TEST FAIL NAME: line: what"; the exit status is 1 if any failed.
 *
 *   pccx-tests [name,name,...]     run only the named tests
 *
 * Results of jobs run through the driver are compared bit for bit with the
 * same job run in this process on the same cycle simulator through the same
 * command engine (the in-process path).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pccx/pccx.h"
#include "guest_check.h"
#include "pccx_asm.h"
#include "backend_kernel.h"
#include "backend_sim.h"
#include "kernel_dev.h"
#include "pccx_sim.h"

#define SYSFS "/sys/class/misc/pccx/"
#define SIMLINK_PARAM "/sys/module/pccx_simlink/parameters/"

/* ---- small helpers ----------------------------------------------------------------- */

static int dev_open(void)
{
	int fd = pccx__kernel_dev_open(NULL);

	CHECK(fd >= 0);
	return fd;
}

static long read_long(const char *path)
{
	char buf[64] = { 0 };
	int fd = open(path, O_RDONLY);
	ssize_t r;

	if (fd < 0)
		return -1;
	r = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	return r > 0 ? strtol(buf, NULL, 0) : -1;
}

static int read_text(const char *path, char *buf, size_t n)
{
	int fd = open(path, O_RDONLY);
	ssize_t r;

	buf[0] = 0;
	if (fd < 0)
		return -errno;
	r = read(fd, buf, n - 1);
	close(fd);
	if (r < 0)
		return -errno;
	buf[r] = 0;
	return 0;
}

static int write_text(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY);
	ssize_t r;

	if (fd < 0)
		return -errno;
	r = write(fd, s, strlen(s));
	close(fd);
	return r == (ssize_t)strlen(s) ? 0 : -errno;
}

/* Send a command to pccx-simd and read its one-line answer. */
static int simd(const char *cmd, char *out, size_t n)
{
	int ctl = open("/run/simd.ctl", O_WRONLY | O_NONBLOCK);
	int rsp = open("/run/simd.rsp", O_RDONLY | O_NONBLOCK);
	char line[64];
	struct pollfd p;
	ssize_t r = 0;

	if (ctl < 0 || rsp < 0)
		return -1;
	snprintf(line, sizeof(line), "%s\n", cmd);
	if (write(ctl, line, strlen(line)) < 0)
		r = -1;
	p.fd = rsp;
	p.events = POLLIN;
	if (!r && poll(&p, 1, 10000) == 1)
		r = read(rsp, out, n - 1);
	else
		r = -1;
	close(ctl);
	close(rsp);
	if (r <= 0)
		return -1;
	out[r] = 0;
	return 0;
}

/* Path of a debugfs file of the (only) device: /sys/kernel/debug/pccx/<device>/<name>. */
static const char *dbgfs(const char *name)
{
	static char path[512];
	struct dirent *de;
	DIR *d = opendir("/sys/kernel/debug/pccx");

	snprintf(path, sizeof(path), "/nonexistent");
	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/sys/kernel/debug/pccx/%s/%s", de->d_name, name);
		break;
	}
	if (d)
		closedir(d);
	return path;
}

static uint32_t rng_state = 12345;

static uint32_t rnd(void)
{
	rng_state = rng_state * 1664525u + 1013904223u;
	return rng_state >> 8;
}

/* A finite FP32 value of modest magnitude (2^-9 .. 1) with a random 23-bit mantissa. */
static uint32_t rnd_f32(void)
{
	uint32_t a = rnd(), b = rnd();

	return ((a >> 20) & 1) << 31 | (118 + (a % 9)) << 23 | (b & 0x7fffff);
}

static int assemble(const char *text, uint64_t *w, uint32_t max)
{
	uint32_t n = 0;
	const char *p = text;

	while (*p) {
		const char *e = strchr(p, '\n');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		struct pccx_asm_error err;
		bool has;
		uint64_t word;

		if (pccx__asm_line(p, len, &word, &has, &err))
			return -1;
		if (has) {
			if (n == max)
				return -1;
			w[n++] = word;
		}
		p += len + (e ? 1 : 0);
	}
	return (int)n;
}

/* ---- the hand-built job: y = exp(W x), W (32, 32) f32 streamed over 4 ports ----------- */

#define JOB_K 32
#define JOB_N 32
#define JOB_X_BYTES (JOB_K * 4)
#define JOB_W_BYTES (JOB_N * JOB_K * 4)		/* 4096: one page */
#define JOB_Y_BYTES (JOB_N * 4)

static const char job_text[] =
	"memset cache=fmap entry=0 a=32 b=1 c=1\n"
	"memset cache=weight entry=1 a=32 b=32 c=1\n"
	"memcpy dest=0 src=0 desc=0 fshape=0 +from_host\n"
	"gemv dest=0x20 src=0 wshape=1 fshape=0\n"
	"memset cache=fmap entry=2 a=32 b=1 c=1\n"
	"cvo func=exp src=0x20 dst=0x40 len=32\n"
	"memcpy dest=0 src=0x40 desc=1 fshape=2 +to_host\n";

struct job {
	uint64_t insn[16];
	uint32_t n_insn;
	struct pccx_ioc_dma_desc dma[2];
	struct pccx_ioc_stream_desc stream[4];
	uint8_t x[JOB_X_BYTES], w[JOB_W_BYTES];
};

/* Handles 1 (x), 2 (W), 3 (y) in the in-process run; the device run substitutes its own. */
static void job_make(struct job *j, uint32_t seed)
{
	unsigned i, p;

	memset(j, 0, sizeof(*j));
	rng_state = seed;
	j->n_insn = (uint32_t)assemble(job_text, j->insn, 16);
	for (i = 0; i < JOB_X_BYTES / 4; i++) {
		uint32_t v = rnd_f32();

		memcpy(j->x + 4 * i, &v, 4);
	}
	for (i = 0; i < JOB_W_BYTES / 4; i++) {
		uint32_t v = rnd_f32();

		memcpy(j->w + 4 * i, &v, 4);
	}
	j->dma[0] = (struct pccx_ioc_dma_desc){ 1, PCCX_DESC_TO_DEVICE, 0, JOB_X_BYTES };
	j->dma[1] = (struct pccx_ioc_dma_desc){ 3, PCCX_DESC_FROM_DEVICE, 0, JOB_Y_BYTES };
	for (p = 0; p < 4; p++)
		j->stream[p] = (struct pccx_ioc_stream_desc){ 2, p, p * (JOB_W_BYTES / 4),
							      JOB_W_BYTES / 4 };
}

/* In-process: the in-process backend (the same engine driving the same simulator). */
static int job_run_inproc(const struct job *j, uint8_t *y)
{
	struct pccx_job_view v = { j->insn, j->n_insn, NULL, 2, NULL, 4 };
	struct pccx_dma_desc dma[2];
	struct pccx_stream_desc stream[4];
	struct pccx_sim_backend *b;
	uint32_t h[4] = { 0 };
	pccx_diag d;
	unsigned i;
	int r;

	if (pccx__sim_backend_create(NULL, &b, &d))
		return -1;
	r = pccx__sim_backend_buf_alloc(b, 4096, PCCX_BUF_DEV_READ, &h[1], &d) ||
	    pccx__sim_backend_buf_alloc(b, 4096, PCCX_BUF_DEV_READ, &h[2], &d) ||
	    pccx__sim_backend_buf_alloc(b, 4096, PCCX_BUF_DEV_WRITE, &h[3], &d);
	if (!r) {
		memcpy(pccx__sim_backend_buf_map(b, h[1], NULL), j->x, JOB_X_BYTES);
		memcpy(pccx__sim_backend_buf_map(b, h[2], NULL), j->w, JOB_W_BYTES);
		memcpy(dma, j->dma, sizeof(dma));
		memcpy(stream, j->stream, sizeof(stream));
		dma[0].handle = h[1];
		dma[1].handle = h[3];
		for (i = 0; i < 4; i++)
			stream[i].handle = h[2];
		v.dma = dma;
		v.stream = stream;
		r = pccx__sim_backend_submit_wait(b, &v, NULL, NULL, &d);
		if (r)
			fprintf(stderr, "in-process run: %s\n", d.msg);
	}
	if (!r)
		memcpy(y, pccx__sim_backend_buf_map(b, h[3], NULL), JOB_Y_BYTES);
	pccx__sim_backend_destroy(b);
	return r ? -1 : 0;
}

/* Device-side buffers of one job. */
struct dev_job {
	struct pccx_bo_create bo[4];
	uint8_t *map[4];
	struct pccx_ioc_dma_desc dma[2];
	struct pccx_ioc_stream_desc stream[4];
};

static int dev_job_setup(int fd, const struct job *j, struct dev_job *dj)
{
	static const uint32_t flags[4] = { 0, PCCX_BO_DEV_READ, PCCX_BO_DEV_READ,
					   PCCX_BO_DEV_WRITE };
	int h, r;
	unsigned p;

	memset(dj, 0, sizeof(*dj));
	for (h = 1; h <= 3; h++) {
		r = pccx__kernel_dev_bo_create(fd, 4096, flags[h], &dj->bo[h]);
		if (r)
			return r;
		r = pccx__kernel_dev_bo_map(fd, &dj->bo[h], (void **)&dj->map[h]);
		if (r)
			return r;
	}
	memcpy(dj->map[1], j->x, JOB_X_BYTES);
	memcpy(dj->map[2], j->w, JOB_W_BYTES);
	memset(dj->map[3], 0xEE, 4096);
	memcpy(dj->dma, j->dma, sizeof(dj->dma));
	memcpy(dj->stream, j->stream, sizeof(dj->stream));
	dj->dma[0].handle = dj->bo[1].handle;
	dj->dma[1].handle = dj->bo[3].handle;
	for (p = 0; p < 4; p++)
		dj->stream[p].handle = dj->bo[2].handle;
	return 0;
}

static void dev_job_free(int fd, struct dev_job *dj)
{
	int h;

	for (h = 1; h <= 3; h++) {
		if (dj->map[h])
			pccx__kernel_dev_bo_unmap(dj->map[h], dj->bo[h].size);
		if (dj->bo[h].handle)
			pccx__kernel_dev_bo_destroy(fd, dj->bo[h].handle);
	}
}

static int dev_job_submit(int fd, const struct job *j, struct dev_job *dj, uint64_t timeout_ns,
			  uint64_t *id)
{
	struct pccx_submit s;
	int r = pccx__kernel_dev_submit(fd, j->insn, j->n_insn, dj->dma, 2, dj->stream, 4,
					timeout_ns,
					&s);

	*id = s.job_id;
	if (r)
		printf("  submit: %d verr %d where %u index %u\n", r, s.verr, s.vwhere, s.vindex);
	return r;
}

/* Run the job with this seed through /dev/pccx and in-process; 0 when bit-exact. */
static int job_roundtrip(int fd, uint32_t seed)
{
	struct job j;
	struct dev_job dj;
	struct pccx_wait w;
	uint8_t want[JOB_Y_BYTES];
	uint64_t id = 0;
	int r;

	job_make(&j, seed);
	if (j.n_insn != 7)
		return -100;
	if (job_run_inproc(&j, want))
		return -101;
	r = dev_job_setup(fd, &j, &dj);
	if (!r)
		r = dev_job_submit(fd, &j, &dj, 0, &id);
	if (!r)
		r = pccx__kernel_dev_wait(fd, id, pccx__kernel_dev_deadline(60000000000ll), &w);
	if (r && r != -ENOENT)
		printf("  job %llu: %s hw_error 0x%08x at %u info 0x%llx retired %llu\n",
		       (unsigned long long)id, pccx__kernel_dev_status_name(w.status), w.hw_error,
		       w.fault_index, (unsigned long long)w.error_info,
		       (unsigned long long)w.retired);
	if (!r && memcmp(dj.map[3], want, JOB_Y_BYTES))
		r = -102;
	if (!r && dj.map[3][JOB_Y_BYTES] != 0xEE)
		r = -103;	/* nothing written past the 128-byte transfer */
	dev_job_free(fd, &dj);
	return r;
}

/* ---- tests ------------------------------------------------------------------------ */

static void test_info(void)
{
	int fd = dev_open();
	struct pccx_get_info gi;
	struct pccx_info info;
	uint8_t small[8];
	uint8_t big[sizeof(info) + 64];
	struct stat st;

	memset(&gi, 0, sizeof(gi));
	CHECK_RET(ioctl(fd, PCCX_IOCTL_GET_INFO, &gi) ? -errno : 0, 0);
	CHECK(gi.size == sizeof(struct pccx_info));
	gi.ptr = (uintptr_t)small;
	gi.size = sizeof(small);
	memset(small, 0xAA, sizeof(small));
	CHECK_RET(ioctl(fd, PCCX_IOCTL_GET_INFO, &gi) ? -errno : 0, 0);
	CHECK(small[0] == PCCX_UAPI_VERSION);
	gi.ptr = (uintptr_t)big;
	gi.size = sizeof(big);
	memset(big, 0xAA, sizeof(big));
	CHECK_RET(ioctl(fd, PCCX_IOCTL_GET_INFO, &gi) ? -errno : 0, 0);
	CHECK(big[sizeof(info)] == 0 && big[sizeof(big) - 1] == 0);
	gi.pad = 1;
	CHECK_RET(ioctl(fd, PCCX_IOCTL_GET_INFO, &gi) ? -errno : 0, -EINVAL);
	gi.pad = 0;
	gi.ptr = 16;
	CHECK_RET(ioctl(fd, PCCX_IOCTL_GET_INFO, &gi) ? -errno : 0, -EFAULT);

	CHECK_RET(pccx__kernel_dev_info(fd, &info), 0);
	CHECK(info.uapi_version == PCCX_UAPI_VERSION);
	CHECK(info.flags & PCCX_INFO_EXTENDED);
	CHECK(info.flags & PCCX_INFO_SIMULATED);
	CHECK(!(info.flags & PCCX_INFO_WEDGED));
	CHECK((info.hw_id >> 32) == 0x50434358u);
	CHECK(info.l2_words == 114688);
	CHECK(info.dma_addr_bits >= 32);
	CHECK(info.max_insn == 1u << 20);
	CHECK(stat("/dev/pccx", &st) == 0 && (st.st_mode & 0777) == 0660);
	pccx__kernel_dev_close(fd);
}

static void test_bad_ioctls(void)
{
	int fd = dev_open();
	char buf[256] = { 0 };

	/* unknown number, wrong size encoded in a known number, wrong direction */
	CHECK_RET(ioctl(fd, _IOWR(PCCX_IOCTL_MAGIC, 0x7f, struct pccx_get_info), buf) ? -errno : 0,
		  -ENOTTY);
	CHECK_RET(ioctl(fd, _IOWR(PCCX_IOCTL_MAGIC, 0x01, struct pccx_get_info), buf) ? -errno : 0,
		  -ENOTTY);
	CHECK_RET(ioctl(fd, _IOR(PCCX_IOCTL_MAGIC, 0x01, struct pccx_bo_create), buf) ? -errno : 0,
		  -ENOTTY);
	CHECK_RET(ioctl(fd, _IOWR('x', 0x01, struct pccx_bo_create), buf) ? -errno : 0, -ENOTTY);
	CHECK_RET(ioctl(fd, PCCX_IOCTL_SUBMIT, (void *)8) ? -errno : 0, -EFAULT);
	CHECK_RET(ioctl(fd, PCCX_IOCTL_WAIT, NULL) ? -errno : 0, -EFAULT);
	pccx__kernel_dev_close(fd);
}

static void test_bo(void)
{
	int fd = dev_open();
	struct pccx_bo_create bo, bo2;
	struct pccx_bo_info bi;
	uint8_t *m;
	int i;

	CHECK_RET(pccx__kernel_dev_bo_create(fd, 5000, PCCX_BO_DEV_READ | PCCX_BO_DEV_WRITE, &bo),
		  0);
	CHECK(bo.handle != 0);
	CHECK(bo.size == 8192);
	CHECK_RET(pccx__kernel_dev_bo_info(fd, bo.handle, &bi), 0);
	CHECK(bi.size == 8192 && bi.flags == (PCCX_BO_DEV_READ | PCCX_BO_DEV_WRITE) &&
	      bi.mmap_offset == bo.mmap_offset);
	CHECK_RET(pccx__kernel_dev_bo_map(fd, &bo, (void **)&m), 0);
	for (i = 0; i < 8192; i++)
		CHECK(m[i] == 0);	/* zeroed */
	memset(m, 0x5A, 8192);
	CHECK_RET(pccx__kernel_dev_bo_create(fd, 1, PCCX_BO_DEV_READ, &bo2), 0);
	CHECK(bo2.handle != bo.handle && bo2.size == 4096);
	/* a second mapping of the same buffer sees the same bytes */
	{
		uint8_t *m2 = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd,
				   (off_t)bo.mmap_offset + 4096);

		CHECK(m2 != MAP_FAILED);
		if (m2 != MAP_FAILED) {
			CHECK(m2[0] == 0x5A && m2[4095] == 0x5A);
			munmap(m2, 4096);
		}
	}
	/* destroy while mapped: the mapping stays valid, the handle is gone */
	CHECK_RET(pccx__kernel_dev_bo_destroy(fd, bo.handle), 0);
	CHECK(m[100] == 0x5A);
	CHECK_RET(pccx__kernel_dev_bo_info(fd, bo.handle, &bi), -ENOENT);
	pccx__kernel_dev_bo_unmap(m, 8192);
	CHECK_RET(pccx__kernel_dev_bo_destroy(fd, bo2.handle), 0);
	pccx__kernel_dev_close(fd);
}

static void test_bo_abuse(void)
{
	int fd = dev_open();
	struct pccx_bo_create bo, c;
	struct pccx_bo_info bi;
	struct pccx_bo_destroy bd;
	struct pccx_info info;
	void *m;

	CHECK_RET(pccx__kernel_dev_info(fd, &info), 0);
	CHECK_RET(pccx__kernel_dev_bo_create(fd, 0, PCCX_BO_DEV_READ, &c), -EINVAL);
	CHECK_RET(pccx__kernel_dev_bo_create(fd, 4096, 0, &c), -EINVAL);
	CHECK_RET(pccx__kernel_dev_bo_create(fd, 4096, 0x4 | PCCX_BO_DEV_READ, &c), -EINVAL);
	CHECK_RET(pccx__kernel_dev_bo_create(fd, info.max_bo_size + 1, PCCX_BO_DEV_READ, &c),
		  -E2BIG);
	CHECK_RET(pccx__kernel_dev_bo_create(fd, ~0ull, PCCX_BO_DEV_READ, &c), -E2BIG);
	/* non-zero output fields on input are must-be-zero */
	memset(&c, 0, sizeof(c));
	c.size = 4096;
	c.flags = PCCX_BO_DEV_READ;
	c.handle = 7;
	CHECK_RET(ioctl(fd, PCCX_IOCTL_BO_CREATE, &c) ? -errno : 0, -EINVAL);
	memset(&bi, 0, sizeof(bi));
	bi.handle = 1;
	bi.size = 1;
	CHECK_RET(ioctl(fd, PCCX_IOCTL_BO_INFO, &bi) ? -errno : 0, -EINVAL);
	memset(&bd, 0, sizeof(bd));
	bd.handle = 1;
	bd.pad = 1;
	CHECK_RET(ioctl(fd, PCCX_IOCTL_BO_DESTROY, &bd) ? -errno : 0, -EINVAL);

	/* unknown handles */
	CHECK_RET(pccx__kernel_dev_bo_info(fd, 0, &bi), -ENOENT);
	CHECK_RET(pccx__kernel_dev_bo_info(fd, 12345, &bi), -ENOENT);
	CHECK_RET(pccx__kernel_dev_bo_info(fd, 0xffffffffu, &bi), -ENOENT);
	CHECK_RET(pccx__kernel_dev_bo_destroy(fd, 0x80000000u), -ENOENT);

	/* double destroy, use after destroy */
	CHECK_RET(pccx__kernel_dev_bo_create(fd, 4096, PCCX_BO_DEV_READ, &bo), 0);
	CHECK_RET(pccx__kernel_dev_bo_destroy(fd, bo.handle), 0);
	CHECK_RET(pccx__kernel_dev_bo_destroy(fd, bo.handle), -ENOENT);
	CHECK_RET(pccx__kernel_dev_bo_map(fd, &bo, &m), -ENOENT);

	/* mmap beyond the buffer, at an offset inside, of a foreign offset */
	CHECK_RET(pccx__kernel_dev_bo_create(fd, 8192, PCCX_BO_DEV_READ, &bo), 0);
	m = mmap(NULL, 3 * 4096, PROT_READ, MAP_SHARED, fd, (off_t)bo.mmap_offset);
	CHECK(m == MAP_FAILED && errno == EINVAL);
	m = mmap(NULL, 2 * 4096, PROT_READ, MAP_SHARED, fd, (off_t)bo.mmap_offset + 4096);
	CHECK(m == MAP_FAILED && errno == EINVAL);
	m = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, (off_t)bo.mmap_offset + 8192);
	CHECK(m == MAP_FAILED && errno == EINVAL);
	m = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
	CHECK(m == MAP_FAILED && errno == ENOENT);
	/* a mapping cannot grow past the buffer */
	m = mmap(NULL, 8192, PROT_READ, MAP_SHARED, fd, (off_t)bo.mmap_offset);
	CHECK(m != MAP_FAILED);
	if (m != MAP_FAILED) {
		CHECK(mremap(m, 8192, 4 * 8192, MREMAP_MAYMOVE) == MAP_FAILED);
		munmap(m, 8192);
	}
	CHECK_RET(pccx__kernel_dev_bo_destroy(fd, bo.handle), 0);
	pccx__kernel_dev_close(fd);
}

/*
 * BO_CREATE whose result cannot be written back (the argument on a read-only page) while
 * another thread of the same file destroys the handles it may be given and a third keeps
 * the memory map busy: the undo must never touch a buffer another thread has seen. Before
 * the handle was reserved unpublished, this underflowed a refcount within ~500 creates and
 * wrapped the file's usage.
 */
struct bo_race {
	int fd;
	volatile int stop;
	long destroyed;
};

static void *bo_race_destroyer(void *arg)
{
	struct bo_race *r = arg;
	uint32_t h = 1;

	while (!r->stop) {
		if (!pccx__kernel_dev_bo_destroy(r->fd, h))
			r->destroyed++;
		h = h % 4 + 1;
	}
	return NULL;
}

static void *bo_race_mapper(void *arg)
{
	struct bo_race *r = arg;

	while (!r->stop) {
		void *m = mmap(NULL, 1 << 20, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (m != MAP_FAILED)
			munmap(m, 1 << 20);
	}
	return NULL;
}

static long fd_memory_kib(int fd)
{
	char path[64], buf[4096];
	const char *m;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	if (read_text(path, buf, sizeof(buf)))
		return -1;
	m = strstr(buf, "pccx-memory:\t");
	return m ? atol(m + strlen("pccx-memory:\t")) : -1;
}

static void test_bo_create_race(void)
{
	struct bo_race r = { dev_open(), 0, 0 };
	struct pccx_bo_create *ro, bo;
	pthread_t t1, t2;
	int i, efault = 0, other = 0;

	ro = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(ro != MAP_FAILED);
	if (ro == MAP_FAILED)
		return;
	memset(ro, 0, sizeof(*ro));
	ro->size = 4096;
	ro->flags = PCCX_BO_DEV_READ;
	CHECK_RET(mprotect(ro, 4096, PROT_READ), 0);
	CHECK_RET(pthread_create(&t1, NULL, bo_race_destroyer, &r), 0);
	CHECK_RET(pthread_create(&t2, NULL, bo_race_mapper, &r), 0);
	for (i = 0; i < 3000; i++) {
		int rc = ioctl(r.fd, PCCX_IOCTL_BO_CREATE, ro) ? -errno : 0;

		if (rc == -EFAULT)
			efault++;
		else
			other++;
	}
	r.stop = 1;
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	printf("  3000 creates: %d EFAULT, %d other; %ld destroys succeeded\n", efault, other,
	       r.destroyed);
	CHECK(efault == 3000);
	/* a buffer nobody was given cannot be destroyed, and the file holds nothing */
	CHECK(r.destroyed == 0);
	CHECK(fd_memory_kib(r.fd) == 0);
	CHECK_RET(pccx__kernel_dev_bo_create(r.fd, 4096, PCCX_BO_DEV_READ, &bo), 0);
	CHECK(fd_memory_kib(r.fd) == 4);
	CHECK_RET(pccx__kernel_dev_bo_destroy(r.fd, bo.handle), 0);
	CHECK(fd_memory_kib(r.fd) == 0);
	munmap(ro, 4096);
	pccx__kernel_dev_close(r.fd);
}

static void test_bo_isolation(void)
{
	int fd = dev_open(), fd2 = dev_open();
	struct pccx_bo_create bo;
	struct pccx_bo_info bi;
	void *m;
	pid_t pid;
	int st;

	CHECK_RET(pccx__kernel_dev_bo_create(fd, 4096, PCCX_BO_DEV_READ, &bo), 0);
	/* another open file does not know this handle */
	CHECK_RET(pccx__kernel_dev_bo_info(fd2, bo.handle, &bi), -ENOENT);
	CHECK_RET(pccx__kernel_dev_bo_destroy(fd2, bo.handle), -ENOENT);
	m = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd2, (off_t)bo.mmap_offset);
	CHECK(m == MAP_FAILED && errno == ENOENT);
	/* nor does another process with its own open file */
	pid = fork();
	if (pid == 0) {
		int f = pccx__kernel_dev_open(NULL);

		_exit(pccx__kernel_dev_bo_info(f, bo.handle, &bi) == -ENOENT &&
		      pccx__kernel_dev_bo_destroy(f, bo.handle) == -ENOENT ? 0 : 1);
	}
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK_RET(pccx__kernel_dev_bo_info(fd, bo.handle, &bi), 0);
	pccx__kernel_dev_close(fd2);
	pccx__kernel_dev_close(fd);
}

static void test_quota(void)
{
	int fd = dev_open(), fd2 = dev_open();
	struct pccx_bo_create bo[64];
	struct pccx_info info;
	uint64_t used0;
	int n = 0, r = 0;

	CHECK_RET(pccx__kernel_dev_info(fd, &info), 0);
	used0 = info.global_used;
	/* the per-file quota (set small by the harness) stops this file */
	while (n < 64 && !(r = pccx__kernel_dev_bo_create(fd, 1 << 20, PCCX_BO_DEV_READ, &bo[n])))
		n++;
	CHECK_RET(r, -ENOSPC);
	CHECK((uint64_t)n * (1 << 20) <= info.fd_quota);
	CHECK((uint64_t)(n + 1) * (1 << 20) > info.fd_quota);
	/* another file still has its own quota, up to the global one */
	if (info.global_quota < 2 * info.fd_quota) {
		struct pccx_bo_create b;
		int m = 0;

		while (m < 64 && !(r = pccx__kernel_dev_bo_create(fd2, 1 << 20, PCCX_BO_DEV_READ,
								  &b)))
			m++;
		CHECK_RET(r, -ENOSPC);
		CHECK(used0 + (uint64_t)(n + m) * (1 << 20) <= info.global_quota);
		CHECK(used0 + (uint64_t)(n + m + 1) * (1 << 20) > info.global_quota);
	}
	pccx__kernel_dev_close(fd2);
	/* freeing returns the memory */
	CHECK_RET(pccx__kernel_dev_bo_destroy(fd, bo[0].handle), 0);
	CHECK_RET(pccx__kernel_dev_bo_create(fd, 1 << 20, PCCX_BO_DEV_READ, &bo[0]), 0);
	pccx__kernel_dev_close(fd);
	fd = dev_open();
	CHECK_RET(pccx__kernel_dev_info(fd, &info), 0);
	CHECK(info.global_used == used0);
	/* fault injection: the next allocation fails */
	CHECK_RET(write_text(dbgfs("fail_alloc"), "1"), 0);
	CHECK_RET(pccx__kernel_dev_bo_create(fd, 4096, PCCX_BO_DEV_READ, &bo[0]), -ENOMEM);
	CHECK_RET(pccx__kernel_dev_bo_create(fd, 4096, PCCX_BO_DEV_READ, &bo[0]), 0);
	pccx__kernel_dev_close(fd);
}

static void test_submit_abuse(void)
{
	int fd = dev_open();
	struct job j;
	struct dev_job dj;
	struct pccx_submit s;
	struct pccx_ioc_dma_desc dma[2];
	struct pccx_ioc_stream_desc stream[4];
	struct pccx_bo_create wo;
	uint64_t bad = 0x5000000000000000ull;	/* opcode 5: illegal */
	uint64_t insn[16];

	job_make(&j, 1);
	CHECK(j.n_insn == 7);
	CHECK_RET(dev_job_setup(fd, &j, &dj), 0);

	/* counts */
	CHECK_RET(pccx__kernel_dev_submit(fd, j.insn, 0, NULL, 0, NULL, 0, 0, &s), -EINVAL);
	CHECK(s.verr == PCCX_ISA_E_JOB_EMPTY);
	CHECK_RET(pccx__kernel_dev_submit(fd, j.insn, 0x80000000u, NULL, 0, NULL, 0, 0, &s),
		  -E2BIG);
	CHECK(s.verr == PCCX_ISA_E_JOB_LIMIT && s.vwhere == PCCX_VW_JOB);
	CHECK_RET(pccx__kernel_dev_submit(fd, j.insn, 7, dj.dma, 0xffffffffu, NULL, 0, 0, &s),
		  -E2BIG);
	CHECK(s.verr == PCCX_ISA_E_JOB_LIMIT && s.vwhere == PCCX_VW_DMA);
	CHECK_RET(pccx__kernel_dev_submit(fd, j.insn, 7, dj.dma, 2, dj.stream, 1u << 20, 0, &s),
		  -E2BIG);
	CHECK(s.verr == PCCX_ISA_E_JOB_LIMIT && s.vwhere == PCCX_VW_STREAM);
	/* pointers */
	CHECK_RET(pccx__kernel_dev_submit(fd, (void *)16, 7, dj.dma, 2, dj.stream, 4, 0, &s),
		  -EFAULT);
	CHECK_RET(pccx__kernel_dev_submit(fd, j.insn, 7, (void *)16, 2, dj.stream, 4, 0, &s),
		  -EFAULT);
	CHECK_RET(pccx__kernel_dev_submit(fd, j.insn, 7, dj.dma, 2, (void *)-4096l, 4, 0, &s),
		  -EFAULT);
	/* must-be-zero flags */
	memset(&s, 0, sizeof(s));
	s.insn_ptr = (uintptr_t)j.insn;
	s.n_insn = 7;
	s.flags = 1;
	CHECK_RET(ioctl(fd, PCCX_IOCTL_SUBMIT, &s) ? -errno : 0, -EINVAL);
	/* an illegal word, reported with its index */
	memcpy(insn, j.insn, sizeof(insn));
	insn[3] = bad;
	CHECK_RET(pccx__kernel_dev_submit(fd, insn, 7, dj.dma, 2, dj.stream, 4, 0, &s), -EINVAL);
	CHECK(s.verr == PCCX_ISA_E_OPCODE && s.vwhere == PCCX_VW_INSN && s.vindex == 3);
	/* descriptors: offset + length overflow, outside, unknown handle, wrong access */
	memcpy(dma, dj.dma, sizeof(dma));
	dma[1].offset = 0xfffffffffffffff0ull;
	CHECK_RET(pccx__kernel_dev_submit(fd, j.insn, 7, dma, 2, dj.stream, 4, 0, &s), -EOVERFLOW);
	CHECK(s.verr == PCCX_ISA_E_BUF_RANGE && s.vwhere == PCCX_VW_DMA && s.vindex == 1);
	dma[1].offset = 4096;
	CHECK_RET(pccx__kernel_dev_submit(fd, j.insn, 7, dma, 2, dj.stream, 4, 0, &s), -EOVERFLOW);
	memcpy(dma, dj.dma, sizeof(dma));
	dma[0].handle = 999;
	CHECK_RET(pccx__kernel_dev_submit(fd, j.insn, 7, dma, 2, dj.stream, 4, 0, &s), -ENOENT);
	CHECK(s.verr == PCCX_ISA_E_BUF_HANDLE && s.vindex == 0);
	memcpy(dma, dj.dma, sizeof(dma));
	dma[1].handle = dj.bo[1].handle;	/* read-only buffer as the destination */
	CHECK_RET(pccx__kernel_dev_submit(fd, j.insn, 7, dma, 2, dj.stream, 4, 0, &s), -EACCES);
	CHECK(s.verr == PCCX_ISA_E_BUF_ACCESS);
	memcpy(dma, dj.dma, sizeof(dma));
	dma[0].flags = 3;
	CHECK_RET(pccx__kernel_dev_submit(fd, j.insn, 7, dma, 2, dj.stream, 4, 0, &s), -EINVAL);
	CHECK(s.verr == PCCX_ISA_E_DESC_FLAGS);
	memcpy(stream, dj.stream, sizeof(stream));
	stream[2].length -= 16;
	CHECK_RET(pccx__kernel_dev_submit(fd, j.insn, 7, dj.dma, 2, stream, 4, 0, &s), -EINVAL);
	CHECK(s.verr == PCCX_ISA_E_STREAM_MISMATCH && s.vwhere == PCCX_VW_PORT &&
	      s.vindex == 2 && s.vexpected == JOB_W_BYTES / 4);
	memcpy(stream, dj.stream, sizeof(stream));
	stream[1].port = 9;
	CHECK_RET(pccx__kernel_dev_submit(fd, j.insn, 7, dj.dma, 2, stream, 4, 0, &s), -EINVAL);
	CHECK(s.verr == PCCX_ISA_E_STREAM_PORT && s.vindex == 1);
	CHECK_RET(pccx__kernel_dev_bo_create(fd, 4096, PCCX_BO_DEV_WRITE, &wo), 0);
	memcpy(stream, dj.stream, sizeof(stream));
	stream[0].handle = wo.handle;		/* streams need device-read access */
	CHECK_RET(pccx__kernel_dev_submit(fd, j.insn, 7, dj.dma, 2, stream, 4, 0, &s), -EACCES);
	/* a handle destroyed before the submit */
	CHECK_RET(pccx__kernel_dev_bo_destroy(fd, wo.handle), 0);
	CHECK_RET(pccx__kernel_dev_submit(fd, j.insn, 7, dj.dma, 2, stream, 4, 0, &s), -ENOENT);
	/* after all this the correct job still runs */
	{
		uint64_t id = 0;
		struct pccx_wait w;

		CHECK_RET(dev_job_submit(fd, &j, &dj, 0, &id), 0);
		CHECK_RET(pccx__kernel_dev_wait(fd, id, pccx__kernel_dev_deadline(60000000000ll),
						&w), 0);
	}
	dev_job_free(fd, &dj);
	pccx__kernel_dev_close(fd);
}

static void test_job(void)
{
	int fd = dev_open();

	CHECK_RET(job_roundtrip(fd, 42), 0);
	CHECK_RET(job_roundtrip(fd, 43), 0);
	pccx__kernel_dev_close(fd);
}

static void test_wait(void)
{
	int fd = dev_open();
	struct job j;
	struct dev_job dj;
	struct pccx_wait w;
	struct pollfd p = { .fd = fd, .events = POLLIN };
	uint64_t id = 0;

	job_make(&j, 7);
	CHECK_RET(dev_job_setup(fd, &j, &dj), 0);
	CHECK_RET(pccx__kernel_dev_wait(fd, 1234567, 0, &w), -ENOENT);
	memset(&w, 0, sizeof(w));
	w.flags = 1;
	CHECK_RET(ioctl(fd, PCCX_IOCTL_WAIT, &w) ? -errno : 0, -EINVAL);
	CHECK(poll(&p, 1, 0) == 0);
	CHECK_RET(dev_job_submit(fd, &j, &dj, 0, &id), 0);
	CHECK(id != 0);
	/* poll() wakes when it completes; WAIT then returns at once */
	CHECK(poll(&p, 1, 60000) == 1 && (p.revents & POLLIN));
	CHECK_RET(pccx__kernel_dev_wait(fd, id, 0, &w), 0);
	CHECK(w.status == PCCX_JOB_DONE && w.retired == 7);
	CHECK(w.submit_ns && w.start_ns >= w.submit_ns && w.end_ns >= w.start_ns);
	/* reaped */
	CHECK_RET(pccx__kernel_dev_wait(fd, id, 0, &w), -ENOENT);
	CHECK(poll(&p, 1, 0) == 0);
	/* a job id of another file is unknown here */
	{
		int fd2 = dev_open();

		CHECK_RET(dev_job_submit(fd, &j, &dj, 0, &id), 0);
		CHECK_RET(pccx__kernel_dev_wait(fd2, id, 0, &w), -ENOENT);
		CHECK_RET(pccx__kernel_dev_wait(fd, id, pccx__kernel_dev_deadline(60000000000ll),
						&w), 0);
		pccx__kernel_dev_close(fd2);
	}
	/* a WAIT that cannot write its outcome back does not reap the job: a later one gets it */
	{
		struct pccx_wait *ro = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
					    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		CHECK(ro != MAP_FAILED);
		CHECK_RET(dev_job_submit(fd, &j, &dj, 0, &id), 0);
		CHECK(poll(&p, 1, 60000) == 1);
		if (ro != MAP_FAILED) {
			memset(ro, 0, sizeof(*ro));
			ro->job_id = id;
			CHECK_RET(mprotect(ro, 4096, PROT_READ), 0);
			CHECK_RET(ioctl(fd, PCCX_IOCTL_WAIT, ro) ? -errno : 0, -EFAULT);
			munmap(ro, 4096);
		}
		CHECK_RET(pccx__kernel_dev_wait(fd, id, 0, &w), 0);
		CHECK(w.status == PCCX_JOB_DONE && w.hw_error == 0);
	}
	dev_job_free(fd, &dj);
	pccx__kernel_dev_close(fd);
}

static int hang_device(void)
{
	char out[64];

	return simd("hang", out, sizeof(out)) || strncmp(out, "armed", 5) ? -1 : 0;
}

static void test_hang(void)
{
	int fd = dev_open();
	struct job j;
	struct dev_job dj;
	struct pccx_wait w;
	uint64_t id = 0, id2 = 0;
	long resets = read_long(SYSFS "reset_count");
	char buf[4096];

	job_make(&j, 9);
	CHECK_RET(dev_job_setup(fd, &j, &dj), 0);
	/* the device stops making progress at the job's first instruction */
	CHECK_RET(hang_device(), 0);
	CHECK_RET(dev_job_submit(fd, &j, &dj, 300000000ull, &id), 0);
	/* a second job queued behind it runs after the recovery */
	CHECK_RET(dev_job_submit(fd, &j, &dj, 0, &id2), 0);
	CHECK_RET(pccx__kernel_dev_wait(fd, id, pccx__kernel_dev_deadline(100000000ll), &w),
		  -ETIME);
	CHECK(w.status == PCCX_JOB_RUNNING);
	CHECK_RET(pccx__kernel_dev_wait(fd, id, pccx__kernel_dev_deadline(60000000000ll), &w),
		  -ETIMEDOUT);
	CHECK(w.status == PCCX_JOB_TIMEOUT);
	CHECK(w.hw_error >> PCCX_FAULT_KIND_SHIFT == PCCX_FAULT_HUNG);
	/* the words pushed before the device froze, and RETIRED as the driver last read it */
	CHECK(w.fault_index >= 1 && w.fault_index <= 9 && w.error_info == w.retired);
	if (w.fault_index < 1 || w.fault_index > 9 || w.error_info != w.retired)
		printf("  hung: pushed %u, info %llu, retired %llu\n", w.fault_index,
		       (unsigned long long)w.error_info, (unsigned long long)w.retired);
	CHECK_RET(pccx__kernel_dev_wait(fd, id2, pccx__kernel_dev_deadline(60000000000ll), &w), 0);
	CHECK(w.status == PCCX_JOB_DONE);
	CHECK(read_long(SYSFS "reset_count") == resets + 1);
	CHECK(read_long(SYSFS "wedged") == 0);
	CHECK_RET(job_roundtrip(fd, 10), 0);
	/* an injected hang (nothing reaches the device) is handled the same way */
	CHECK_RET(write_text(dbgfs("hang_jobs"), "1"), 0);
	CHECK_RET(dev_job_submit(fd, &j, &dj, 200000000ull, &id), 0);
	CHECK_RET(pccx__kernel_dev_wait(fd, id, pccx__kernel_dev_deadline(60000000000ll), &w),
		  -ETIMEDOUT);
	CHECK(w.hw_error >> PCCX_FAULT_KIND_SHIFT == PCCX_FAULT_HANG_INJECTED);
	CHECK_RET(job_roundtrip(fd, 11), 0);
	CHECK(read_text(dbgfs("history"), buf, sizeof(buf)) == 0 && strstr(buf, " timeout "));
	dev_job_free(fd, &dj);
	pccx__kernel_dev_close(fd);
}

static void on_alarm(int sig)
{
	(void)sig;
}

static void test_signal(void)
{
	int fd = dev_open();
	struct job j;
	struct dev_job dj;
	struct pccx_wait w;
	struct sigaction sa;
	uint64_t id = 0;
	int r;

	job_make(&j, 12);
	CHECK_RET(dev_job_setup(fd, &j, &dj), 0);
	CHECK_RET(hang_device(), 0);
	CHECK_RET(dev_job_submit(fd, &j, &dj, 1500000000ull, &id), 0);
	/* without SA_RESTART a signal ends the WAIT with EINTR; the job goes on */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	ualarm(100000, 0);
	memset(&w, 0, sizeof(w));
	w.job_id = id;
	w.timeout_ns = pccx__kernel_dev_deadline(60000000000ll);
	r = ioctl(fd, PCCX_IOCTL_WAIT, &w) ? -errno : 0;
	CHECK_RET(r, -EINTR);
	/* with SA_RESTART the same WAIT is restarted (the deadline is absolute) */
	sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, NULL);
	ualarm(100000, 0);
	r = ioctl(fd, PCCX_IOCTL_WAIT, &w) ? -errno : 0;
	CHECK_RET(r, -ETIMEDOUT);
	ualarm(0, 0);
	signal(SIGALRM, SIG_IGN);
	CHECK_RET(job_roundtrip(fd, 13), 0);
	dev_job_free(fd, &dj);
	pccx__kernel_dev_close(fd);
}

static void test_close_running(void)
{
	struct pccx_info info;
	uint64_t used0;
	int fd = dev_open(), st, i;
	pid_t pid;

	CHECK_RET(pccx__kernel_dev_info(fd, &info), 0);
	used0 = info.global_used;
	/* a process exits with a job on the (stopped) device and several queued */
	pid = fork();
	if (pid == 0) {
		int f = pccx__kernel_dev_open(NULL);
		struct job j;
		struct dev_job dj;
		uint64_t id;

		job_make(&j, 20);
		if (dev_job_setup(f, &j, &dj) || hang_device())
			_exit(2);
		for (i = 0; i < 4; i++)
			if (dev_job_submit(f, &j, &dj, 0, &id))
				_exit(3);
		usleep(200000);
		_exit(0);	/* no WAIT, no destroy, no close */
	}
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	/* its buffers are freed once the driver has aborted the job */
	for (i = 0; i < 100; i++) {
		CHECK_RET(pccx__kernel_dev_info(fd, &info), 0);
		if (info.global_used == used0)
			break;
		usleep(50000);
	}
	CHECK(info.global_used == used0);
	CHECK(read_long(SYSFS "wedged") == 0);
	CHECK_RET(job_roundtrip(fd, 21), 0);
	/* closing a file with finished-but-unreaped jobs and live buffers */
	{
		int f = dev_open();
		struct job j;
		struct dev_job dj;
		uint64_t id;

		job_make(&j, 22);
		CHECK_RET(dev_job_setup(f, &j, &dj), 0);
		CHECK_RET(dev_job_submit(f, &j, &dj, 0, &id), 0);
		usleep(300000);
		pccx__kernel_dev_close(f);	/* the mappings stay valid until unmapped */
		CHECK(dj.map[1][0] == j.x[0]);
		for (i = 1; i <= 3; i++)
			pccx__kernel_dev_bo_unmap(dj.map[i], dj.bo[i].size);
	}
	pccx__kernel_dev_close(fd);
}

/*
 * Jobs of a file nobody else touches, while other processes submit, reset, create and
 * destroy buffers and close files with jobs queued on their own files: each private job
 * ends DONE with the right bits, or ABORTED by one of those RESETs (hw_error says so);
 * FAULT, TIMEOUT or any other cause fails. When the others have stopped, a last job must
 * be DONE. Outcomes are tallied by cause.
 */
#define CONC_JOBS 60

static void conc_noise(int kind, volatile int *stop)
{
	struct job j;
	struct dev_job dj;
	uint64_t id;
	int n = 0;

	job_make(&j, 40 + (uint32_t)kind);
	while (!*stop) {
		int f = pccx__kernel_dev_open(NULL);

		if (f < 0)
			_exit(2);
		if (!dev_job_setup(f, &j, &dj)) {
			int k;

			for (k = 0; k < 3; k++)
				(void)dev_job_submit(f, &j, &dj, 0, &id);
			if (kind == 1 && ++n % 16 == 0)
				(void)pccx__kernel_dev_reset(f);
			if (kind == 0) {
				struct pccx_wait w;

				(void)pccx__kernel_dev_wait(f, id,
							    pccx__kernel_dev_deadline(2000000000ll), &w);
			}
		}
		/* kind 1 closes with its jobs queued or running (and its buffers alive) */
		if (kind == 0) {
			dev_job_free(f, &dj);
			pccx__kernel_dev_close(f);
		} else {
			int h;

			pccx__kernel_dev_close(f);
			for (h = 1; h <= 3; h++)
				if (dj.map[h])
					pccx__kernel_dev_bo_unmap(dj.map[h], dj.bo[h].size);
		}
		/* the guest has one CPU: leave the private file most of it */
		usleep(kind ? 15000 : 5000);
	}
	_exit(0);
}

static void test_concurrent_files(void)
{
	volatile int *stop = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
				  -1, 0);
	unsigned done = 0, by_reset = 0, other = 0, i;
	int fd = dev_open(), st, k;
	uint8_t want[JOB_Y_BYTES];
	struct dev_job dj;
	struct job j;
	pid_t pid[2];

	CHECK(stop != MAP_FAILED);
	if (stop == MAP_FAILED)
		return;
	*stop = 0;
	job_make(&j, 50);
	CHECK_RET(job_run_inproc(&j, want), 0);
	CHECK_RET(dev_job_setup(fd, &j, &dj), 0);
	for (k = 0; k < 2; k++) {
		pid[k] = fork();
		if (pid[k] == 0)
			conc_noise(k, stop);
	}
	for (i = 0; i < CONC_JOBS; i++) {
		struct pccx_wait w;
		uint64_t id = 0;
		int r;

		memset(dj.map[3], 0xEE, 4096);
		r = dev_job_submit(fd, &j, &dj, 0, &id);
		if (!r)
			r = pccx__kernel_dev_wait(fd, id, pccx__kernel_dev_deadline(60000000000ll),
						  &w);
		if (!r && !memcmp(dj.map[3], want, JOB_Y_BYTES)) {
			done++;
		} else if (r == -ECANCELED &&
			   w.hw_error >> PCCX_FAULT_KIND_SHIFT == PCCX_FAULT_RESET) {
			by_reset++;
		} else {
			if (other++ < 5)
				printf("  job %u: %d %s: %s (hw_error 0x%08x at %u, info 0x%llx)\n",
				       i,
				       r, pccx__kernel_dev_status_name(w.status),
				       pccx__kernel_dev_fault_name(w.hw_error), w.hw_error, w.fault_index,
				       (unsigned long long)w.error_info);
		}
	}
	*stop = 1;
	for (k = 0; k < 2; k++)
		CHECK(waitpid(pid[k], &st, 0) == pid[k] && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	printf("  %u private jobs: %u done, %u aborted by a reset, %u otherwise\n", CONC_JOBS,
	       done, by_reset, other);
	/* how many the RESETs hit depends on timing; that nothing else ends them does not */
	CHECK(other == 0);
	/* everything else has stopped: the next job runs */
	CHECK_RET(job_roundtrip(fd, 51), 0);
	CHECK(read_long(SYSFS "wedged") == 0);
	dev_job_free(fd, &dj);
	pccx__kernel_dev_close(fd);
	munmap((void *)stop, 4096);
}

/*
 * Files take turns. While the worker is held by a job that hangs (debugfs hang_jobs, ended
 * by a RESET), file A queues 16 jobs and then file B one: B's job must start right after
 * A's first, not after all 16 (one FIFO across files ran it 17th).
 */
static void test_fair_turns(void)
{
	int fc = dev_open(), fa = dev_open(), fb = dev_open(), k;
	struct dev_job dc, da, db;
	uint64_t idc = 0, ida[16], idb = 0;
	struct pccx_wait w, wa[16], wb;
	struct job j;

	job_make(&j, 60);
	CHECK_RET(dev_job_setup(fc, &j, &dc), 0);
	CHECK_RET(dev_job_setup(fa, &j, &da), 0);
	CHECK_RET(dev_job_setup(fb, &j, &db), 0);
	CHECK_RET(write_text(dbgfs("hang_jobs"), "1"), 0);
	CHECK_RET(dev_job_submit(fc, &j, &dc, 60000000000ull, &idc), 0);
	/* the hanging job holds the worker */
	for (k = 0; k < 200; k++) {
		CHECK_RET(pccx__kernel_dev_wait(fc, idc, 0, &w), -ETIME);
		if (w.status == PCCX_JOB_RUNNING)
			break;
		usleep(10000);
	}
	CHECK(w.status == PCCX_JOB_RUNNING);
	for (k = 0; k < 16; k++)
		CHECK_RET(dev_job_submit(fa, &j, &da, 0, &ida[k]), 0);
	CHECK_RET(dev_job_submit(fb, &j, &db, 0, &idb), 0);
	CHECK_RET(pccx__kernel_dev_reset(fc), 0);
	CHECK_RET(pccx__kernel_dev_wait(fc, idc, pccx__kernel_dev_deadline(60000000000ll), &w),
		  -ECANCELED);
	for (k = 0; k < 16; k++)
		CHECK_RET(pccx__kernel_dev_wait(fa, ida[k],
						pccx__kernel_dev_deadline(60000000000ll), &wa[k]), 0);
	CHECK_RET(pccx__kernel_dev_wait(fb, idb, pccx__kernel_dev_deadline(60000000000ll), &wb), 0);
	/* A's jobs in A's order; B's right after A's first */
	for (k = 1; k < 16; k++)
		CHECK(wa[k].start_ns > wa[k - 1].start_ns);
	CHECK(wb.start_ns > wa[0].start_ns && wb.start_ns < wa[1].start_ns);
	if (!(wb.start_ns < wa[1].start_ns))
		for (k = 0; k < 16 && wa[k].start_ns < wb.start_ns; k++)
			printf("  B started after A's job %d\n", k);
	/*
	 * Files that sat idle do not cut in: B (served just now) queues a job while the worker
	 * is held, then three files idle since before B ran queue one each; B's goes first.
	 */
	{
		int fi[3], n_idle = 3;
		struct dev_job di[3];
		uint64_t idi[3];
		struct pccx_wait wi;

		for (k = 0; k < n_idle; k++) {
			fi[k] = dev_open();
			CHECK_RET(dev_job_setup(fi[k], &j, &di[k]), 0);
		}
		CHECK_RET(job_roundtrip(fb, 61), 0);
		CHECK_RET(write_text(dbgfs("hang_jobs"), "1"), 0);
		CHECK_RET(dev_job_submit(fc, &j, &dc, 60000000000ull, &idc), 0);
		for (k = 0; k < 200; k++) {
			CHECK_RET(pccx__kernel_dev_wait(fc, idc, 0, &w), -ETIME);
			if (w.status == PCCX_JOB_RUNNING)
				break;
			usleep(10000);
		}
		CHECK_RET(dev_job_submit(fb, &j, &db, 0, &idb), 0);
		for (k = 0; k < n_idle; k++)
			CHECK_RET(dev_job_submit(fi[k], &j, &di[k], 0, &idi[k]), 0);
		CHECK_RET(pccx__kernel_dev_reset(fc), 0);
		CHECK_RET(pccx__kernel_dev_wait(fc, idc, pccx__kernel_dev_deadline(60000000000ll), &w),
			  -ECANCELED);
		CHECK_RET(pccx__kernel_dev_wait(fb, idb, pccx__kernel_dev_deadline(60000000000ll), &wb), 0);
		for (k = 0; k < n_idle; k++) {
			CHECK_RET(pccx__kernel_dev_wait(fi[k], idi[k], pccx__kernel_dev_deadline(60000000000ll),
						 &wi), 0);
			CHECK(wb.start_ns < wi.start_ns);
			dev_job_free(fi[k], &di[k]);
			pccx__kernel_dev_close(fi[k]);
		}
	}
	dev_job_free(fc, &dc);
	dev_job_free(fa, &da);
	dev_job_free(fb, &db);
	pccx__kernel_dev_close(fc);
	pccx__kernel_dev_close(fa);
	pccx__kernel_dev_close(fb);
}

static void test_two_processes(void)
{
	pid_t pid[2];
	int k, st;

	for (k = 0; k < 2; k++) {
		pid[k] = fork();
		if (pid[k] == 0) {
			int f = pccx__kernel_dev_open(NULL), i;

			for (i = 0; i < 4; i++)
				if (job_roundtrip(f, 100 + 10 * (uint32_t)k + (uint32_t)i))
					_exit(1);
			_exit(0);
		}
	}
	for (k = 0; k < 2; k++)
		CHECK(waitpid(pid[k], &st, 0) == pid[k] && WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/*
 * Read the 32 FP32 values job_roundtrip() leaves at L2 word 0x40 without writing them: the
 * file that ran the roundtrip sees them, any other file sees zeros (L2 is scrubbed).
 */
static const char peek_text[] =
	"memset cache=fmap entry=0 a=32 b=1 c=1\n"
	"memcpy dest=0 src=0x40 desc=0 fshape=0 +to_host\n";

/* 1: the peek saw non-zero bytes, 0: all zero, < 0: the job failed. */
static int l2_peek(int fd)
{
	uint64_t insn[4], id = 0;
	struct pccx_bo_create bo;
	struct pccx_ioc_dma_desc dma;
	struct pccx_submit s;
	struct pccx_wait w;
	uint8_t *map = NULL;
	int n = assemble(peek_text, insn, 4), r, i;

	if (n != 2)
		return -100;
	r = pccx__kernel_dev_bo_create(fd, 4096, PCCX_BO_DEV_WRITE, &bo);
	if (r)
		return r;
	r = pccx__kernel_dev_bo_map(fd, &bo, (void **)&map);
	if (!r) {
		memset(map, 0xEE, 4096);
		dma = (struct pccx_ioc_dma_desc){ bo.handle, PCCX_DESC_FROM_DEVICE, 0, JOB_Y_BYTES };
		r = pccx__kernel_dev_submit(fd, insn, 2, &dma, 1, NULL, 0, 0, &s);
		id = s.job_id;
	}
	if (!r)
		r = pccx__kernel_dev_wait(fd, id, pccx__kernel_dev_deadline(60000000000ll), &w);
	if (!r) {
		r = 0;
		for (i = 0; i < JOB_Y_BYTES; i++)
			if (map[i])
				r = 1;
		if (map[JOB_Y_BYTES] != 0xEE)
			r = -101;
	}
	if (map)
		pccx__kernel_dev_bo_unmap(map, bo.size);
	pccx__kernel_dev_bo_destroy(fd, bo.handle);
	return r;
}

static void test_l2_isolation(void)
{
	int a = dev_open(), b = dev_open(), st;
	long scrubs, resets = read_long(SYSFS "reset_count");
	pid_t pid;

	/* the same file: nothing is cleared between its jobs */
	CHECK_RET(job_roundtrip(a, 40), 0);
	scrubs = read_long(SYSFS "l2_scrubs");
	CHECK_RET(l2_peek(a), 1);
	CHECK(read_long(SYSFS "l2_scrubs") == scrubs);
	/* another file of the same process */
	CHECK_RET(l2_peek(b), 0);
	CHECK(read_long(SYSFS "l2_scrubs") == scrubs + 1);
	/* another process */
	CHECK_RET(job_roundtrip(a, 41), 0);
	pid = fork();
	if (pid == 0) {
		int f = pccx__kernel_dev_open(NULL);

		_exit(f >= 0 && l2_peek(f) == 0 ? 0 : 1);
	}
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(read_long(SYSFS "l2_scrubs") == scrubs + 3);
	/* scrubs are not recoveries */
	CHECK(read_long(SYSFS "reset_count") == resets);
	pccx__kernel_dev_close(b);
	pccx__kernel_dev_close(a);
}

/*
 * Clearing L2 between files fails (two RESETs that never complete): the job ends FAULT with
 * fault kind BUSY without reaching the device, the device is wedged until a RESET succeeds,
 * and then jobs run again.
 */
static void test_l2_scrub_fails(void)
{
	int a = dev_open(), b = dev_open();
	struct job j;
	struct dev_job dj;
	struct pccx_wait w;
	uint64_t id = 0;
	char out[64];

	CHECK_RET(job_roundtrip(a, 50), 0);
	CHECK(simd("stuck-reset 2", out, sizeof(out)) == 0 && !strncmp(out, "stuck 2", 7));
	job_make(&j, 51);
	CHECK_RET(dev_job_setup(b, &j, &dj), 0);
	CHECK_RET(dev_job_submit(b, &j, &dj, 0, &id), 0);
	CHECK_RET(pccx__kernel_dev_wait(b, id, pccx__kernel_dev_deadline(60000000000ll), &w), -EIO);
	CHECK(w.status == PCCX_JOB_FAULT);
	CHECK((w.hw_error >> PCCX_FAULT_KIND_SHIFT) == PCCX_FAULT_BUSY);
	CHECK(w.retired == 0);
	CHECK(read_long(SYSFS "wedged") == 1);
	CHECK_RET(dev_job_submit(b, &j, &dj, 0, &id), -ENODEV);
	/* the RESET ioctl retries the reset, which now completes */
	CHECK_RET(pccx__kernel_dev_reset(b), 0);
	usleep(300000);
	CHECK(read_long(SYSFS "wedged") == 0);
	CHECK_RET(job_roundtrip(b, 52), 0);
	CHECK_RET(job_roundtrip(a, 53), 0);
	dev_job_free(b, &dj);
	pccx__kernel_dev_close(b);
	pccx__kernel_dev_close(a);
}

static int drop_privileges(void)
{
	return setgroups(0, NULL) || setresgid(65534, 65534, 65534) ||
	       setresuid(65534, 65534, 65534);
}

static void test_reset(void)
{
	int fd = dev_open(), st;
	long resets = read_long(SYSFS "reset_count");
	struct pccx_reset r = { 1, 0 };
	pid_t pid;

	CHECK_RET(ioctl(fd, PCCX_IOCTL_RESET, &r) ? -errno : 0, -EINVAL);
	CHECK_RET(pccx__kernel_dev_reset(fd), 0);
	usleep(200000);
	CHECK(read_long(SYSFS "reset_count") == resets + 1);
	/* a RESET stops the running job: ABORTED, and it says why */
	{
		struct job j;
		struct dev_job dj;
		struct pccx_wait w;
		uint64_t id = 0;

		job_make(&j, 31);
		CHECK_RET(dev_job_setup(fd, &j, &dj), 0);
		CHECK_RET(hang_device(), 0);
		CHECK_RET(dev_job_submit(fd, &j, &dj, 0, &id), 0);
		CHECK_RET(pccx__kernel_dev_wait(fd, id, pccx__kernel_dev_deadline(200000000ll), &w),
			  -ETIME);
		CHECK(w.status == PCCX_JOB_RUNNING);
		CHECK_RET(pccx__kernel_dev_reset(fd), 0);
		CHECK_RET(pccx__kernel_dev_wait(fd, id, pccx__kernel_dev_deadline(60000000000ll),
						&w),
			  -ECANCELED);
		CHECK(w.status == PCCX_JOB_ABORTED);
		CHECK(w.hw_error >> PCCX_FAULT_KIND_SHIFT == PCCX_FAULT_RESET);
		dev_job_free(fd, &dj);
	}
	/* without CAP_SYS_ADMIN */
	pid = fork();
	if (pid == 0) {
		if (drop_privileges())
			_exit(2);
		_exit(pccx__kernel_dev_reset(fd) == -EPERM ? 0 : 1);
	}
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	/* ... nor can such a user open the node (0660 root:root) */
	pid = fork();
	if (pid == 0) {
		if (drop_privileges())
			_exit(2);
		_exit(pccx__kernel_dev_open(NULL) == -EACCES ? 0 : 1);
	}
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK_RET(job_roundtrip(fd, 30), 0);
	pccx__kernel_dev_close(fd);
}

static void test_observability(void)
{
	int fd = dev_open();
	char buf[4096], path[64];
	struct pccx_bo_create bo;

	CHECK(read_text(SYSFS "version", buf, sizeof(buf)) == 0 && strstr(buf, "uapi 1"));
	CHECK(read_long(SYSFS "busy_time_ns") > 0);
	CHECK(read_long(SYSFS "jobs_done") > 0);
	CHECK(read_text(SYSFS "completion", buf, sizeof(buf)) == 0 && !strcmp(buf, "irq\n"));
	CHECK(read_text(dbgfs("regs"), buf, sizeof(buf)) == 0 && strstr(buf, "0x50434358"));
	CHECK(read_text(dbgfs("history"), buf, sizeof(buf)) == 0 && strstr(buf, " done "));
	CHECK_RET(pccx__kernel_dev_bo_create(fd, 3 * 4096, PCCX_BO_DEV_READ, &bo), 0);
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	CHECK(read_text(path, buf, sizeof(buf)) == 0 && strstr(buf, "pccx-memory:\t12 KiB") &&
	      strstr(buf, "pccx-buffers:\t1\n"));
	pccx__kernel_dev_close(fd);
}

static void test_shadow_iommu(void)
{
	char out[64];
	long v0 = read_long(SIMLINK_PARAM "violations");
	int fd = dev_open();

	/* nothing the tests did so far touched memory outside an open window */
	CHECK(v0 == 0);
	/* the simulator cannot map a window the driver has not opened */
	CHECK(simd("probe", out, sizeof(out)) == 0 && !strncmp(out, "refused", 7));
	/* a DataMover read outside every window is refused and reported */
	CHECK(simd("rogue", out, sizeof(out)) == 0 && !strncmp(out, "rogue done", 10));
	CHECK(read_long(SIMLINK_PARAM "violations") == v0 + 1);
	/* the device still works afterwards */
	CHECK_RET(job_roundtrip(fd, 40), 0);
	pccx__kernel_dev_close(fd);
}


/*
 * Not a pass/fail measurement: submit->complete latency and jobs/s of the same job through
 * /dev/pccx (kernel backend) and in-process (sim backend), printed as PCCX-BENCH lines.
 * Under QEMU's emulation the absolute figures say little about a board; the ratio shows the
 * cost of the driver path (each register access is a round trip to the simulator process).
 */
static void test_bench(void)
{
	enum { N = 20 };
	struct job j;
	struct pccx_kernel_backend *kernel_be;
	struct pccx_sim_backend *sb;
	struct pccx_job_view v = { NULL, 0, NULL, 2, NULL, 4 };
	struct pccx_dma_desc dma[2];
	struct pccx_stream_desc stream[4];
	uint32_t kh[4], sh[4];
	double t0, lat_k = 0, lat_s = 0, tk, ts;
	pccx_diag d;
	unsigned i;
	int b;

	job_make(&j, 77);
	v.insn = j.insn;
	v.n_insn = j.n_insn;
	CHECK_RET(pccx__kernel_backend_create(NULL, &kernel_be, &d), 0);
	CHECK_RET(pccx__sim_backend_create(NULL, &sb, &d), 0);
	for (b = 0; b < 2; b++) {
		uint32_t *h = b ? sh : kh;

		for (i = 1; i <= 3; i++) {
			uint32_t acc = i == 3 ? PCCX_BUF_DEV_WRITE : PCCX_BUF_DEV_READ;

			CHECK_RET(b ? pccx__sim_backend_buf_alloc(sb, 4096, acc, &h[i], &d) :
				  pccx__kernel_backend_buf_alloc(kernel_be, 4096, acc, &h[i], &d), 0);
		}
		memcpy(b ? pccx__sim_backend_buf_map(sb, h[1],
						     NULL) : pccx__kernel_backend_buf_map(kernel_be, h[1],
											  NULL),
		       j.x, JOB_X_BYTES);
		memcpy(b ? pccx__sim_backend_buf_map(sb, h[2],
						     NULL) : pccx__kernel_backend_buf_map(kernel_be, h[2],
											  NULL),
		       j.w, JOB_W_BYTES);
	}
	memcpy(dma, j.dma, sizeof(dma));
	memcpy(stream, j.stream, sizeof(stream));
	v.dma = dma;
	v.stream = stream;
	for (b = 0; b < 2; b++) {
		uint32_t *h = b ? sh : kh;

		dma[0].handle = h[1];
		dma[1].handle = h[3];
		for (i = 0; i < 4; i++)
			stream[i].handle = h[2];
		t0 = now_s();
		for (i = 0; i < N && !cur_failed; i++) {
			struct pccx_kernel_backend_result kr;
			struct pccx_sim_backend_result sr;

			if (b) {
				CHECK_RET(pccx__sim_backend_submit_wait(sb, &v, NULL, &sr, &d), 0);
				lat_s += sr.host_seconds;
			} else {
				CHECK_RET(pccx__kernel_backend_submit_wait(kernel_be, &v, NULL, &kr, &d),
					  0);
				lat_k += kr.host_seconds;
			}
		}
		if (b)
			ts = now_s() - t0;
		else
			tk = now_s() - t0;
	}
	CHECK(!memcmp(pccx__kernel_backend_buf_map(kernel_be, kh[3], NULL), pccx__sim_backend_buf_map(sb,
											       sh[3], NULL),
		      JOB_Y_BYTES));
	if (!cur_failed) {
		printf("PCCX-BENCH %u-instruction job, %d runs: /dev/pccx %.0f us/job, %.1f jobs/s; "
		       "in-process %.0f us/job, %.1f jobs/s\n", j.n_insn, N, lat_k / N * 1e6,
		       N / tk, lat_s / N * 1e6, N / ts);
	}
	pccx__kernel_backend_destroy(kernel_be);
	pccx__sim_backend_destroy(sb);
}

/* ---- a tiny Gemma decode through libpccx's kernel backend ------------------------- */

/* the prompt: a chunk of its first four tokens (docs/prefill.md), then a step */
#define GEMMA_PROMPT 5
#define GEMMA_TOKENS 16		/* the tiny (Gemma 3n) runs */
#define GEMMA_MAX_TOKENS 64

struct gemma_run {
	int32_t ids[GEMMA_MAX_TOKENS];
	size_t n;
	struct pccx_stats st;
	double seconds;
};

static int gemma_on_token(void *user, int32_t token, const char *piece, size_t len)
{
	struct gemma_run *r = user;

	(void)piece;
	(void)len;
	if (r->n < GEMMA_MAX_TOKENS)
		r->ids[r->n++] = token;
	return 0;
}

/*
 * n tokens of session s into r: greedy, or drawn by the default sampler (its fixed seed, so the
 * draws are the same wherever the logits are).
 */
static int gemma_draw(pccx_session *s, struct gemma_run *r, size_t n, bool greedy,
		      pccx_diag *d)
{
	struct pccx_sampler_config scfg;

	pccx_sampler_config_default(&scfg);
	if (greedy)
		scfg.temperature = 0;
	return pccx_session_generate(s, &scfg, n, gemma_on_token, r, d);
}

/* n greedy tokens of session s into r. */
static int gemma_tokens(pccx_session *s, struct gemma_run *r, size_t n, pccx_diag *d)
{
	return gemma_draw(s, r, n, true, d);
}

/*
 * A tiny config (synthetic weights, fixed seed) on a libpccx backend: a 1-token prompt and
 * n_tokens (at most GEMMA_MAX_TOKENS) tokens, greedy or sampled (gemma_draw), one job per
 * step. With verify, the
 * reference runs alongside: on the kernel backend the logits and the KV rows of every step are
 * compared bit for bit. A step of "tiny" is ~2,500 instructions and ~7,800 register accesses,
 * every one a round trip to pccx-simd.
 */
static int gemma_run(const char *backend, const char *config, size_t n_tokens, bool greedy,
		     bool verify, struct gemma_run *r, pccx_diag *d)
{
	struct pccx_device_opts dopt = { sizeof(dopt), backend, NULL, NULL, NULL };
	struct pccx_model_opts mopt = { sizeof(mopt), NULL, config, 7, NULL, NULL, NULL };
	struct pccx_session_opts sopt = { .struct_size = sizeof(sopt), .verify = verify };
	static const int32_t prompt[GEMMA_PROMPT] = { 2, 17, 42, 99, 3 };
	pccx_device *dev = NULL;
	pccx_model *model = NULL;
	pccx_session *s = NULL;
	double t0 = now_s();
	int rc;

	memset(r, 0, sizeof(*r));
	rc = pccx_device_open(&dopt, &dev, d);
	if (!rc)
		rc = pccx_model_load(dev, &mopt, &model, d);
	if (!rc)
		rc = pccx_session_create(model, &sopt, &s, d);
	if (!rc)
		rc = pccx_session_prefill(s, prompt, GEMMA_PROMPT, d);
	if (!rc)
		rc = gemma_draw(s, r, n_tokens, greedy, d);
	if (!rc)
		rc = pccx_session_stats(s, &r->st);
	r->seconds = now_s() - t0;
	pccx_session_free(s);
	pccx_model_free(model);
	pccx_device_close(dev);
	return rc;
}

/*
 * `config` decoded through /dev/pccx with verify (logits and KV rows bit-exact with the
 * reference at every job), then in-process: the same tokens and byte counts. A step is
 * jobs_per_step jobs: 1, or 1 + the mixture-of-experts layers (a job ends at each router).
 */
/*
 * The kernel backend counts the weight bytes the jobs' streams name, the in-process simulator
 * those its DataMovers read: fewer in Gemma 3n's sparse layers ("tiny"), whose W_up a device
 * with GEMV rowmask reads only where the activation keeps rows, and whose W_down (q4c, with
 * COLSKIP) only the columns of the hidden units that are not 0; the same elsewhere.
 */
static bool weight_bytes_agree(const char *config, uint64_t read, uint64_t named)
{
	return strcmp(config, "tiny") ? read == named : read < named;
}

static void gemma_decode_jobs(const char *config, size_t n_tokens, bool greedy,
			      unsigned jobs_per_step)
{
	long v0 = read_long(SIMLINK_PARAM "violations");
	struct gemma_run k, sim;
	pccx_diag d = { 0 };
	size_t i;
	int rc;

	rc = gemma_run("kernel", config, n_tokens, greedy, true, &k, &d);
	if (rc) {
		printf("  job %s\n", d.msg);   /* the first differing element, or the error */
		CHECK_RET(rc, 0);
		return;
	}
	CHECK(k.n == n_tokens);
	CHECK(k.st.tokens == n_tokens);
	/*
	 * the prompt: one chunk job and a step (a model with experts: a step per token), then
	 * a step per generated token (fed back)
	 */
	CHECK(k.st.jobs == (jobs_per_step == 1 ? 2 : GEMMA_PROMPT * jobs_per_step) +
			   n_tokens * jobs_per_step);
	CHECK(k.st.weight_bytes > 0);
	CHECK(k.st.device_cycles == 0);
	rc = gemma_run("sim", config, n_tokens, greedy, false, &sim, &d);
	if (rc) {
		printf("  job %s\n", d.msg);
		CHECK_RET(rc, 0);
		return;
	}
	CHECK(sim.n == k.n);
	CHECK(!memcmp(sim.ids, k.ids, k.n * sizeof(k.ids[0])));
	CHECK(weight_bytes_agree(config, sim.st.weight_bytes, k.st.weight_bytes));
	CHECK(sim.st.dma_bytes == k.st.dma_bytes);
	if (!cur_failed) {
		printf("PCCX-BENCH gemma %s, %d+%zu tokens: /dev/pccx with verify %.2f s, "
		       "in-process %.2f s; tokens", config, GEMMA_PROMPT, k.n, k.seconds,
		       sim.seconds);
		for (i = 0; i < k.n; i++)
			printf(" %d", k.ids[i]);
		printf("\n");
	}
	CHECK(read_long(SIMLINK_PARAM "violations") == v0);
}

static void gemma_decode(const char *config, size_t n_tokens, bool greedy)
{
	gemma_decode_jobs(config, n_tokens, greedy, 1);
}

static void test_gemma(void)
{
	gemma_decode("tiny", GEMMA_TOKENS, true);
}

/*
 * Gemma 3's structure through /dev/pccx: the plain residual, q/k norms, MQA, five local layers
 * with a 16-row KV ring each and one global layer; 64 tokens wrap the rings four times. The
 * tokens are sampled: greedy decoding of these synthetic weights repeats the input token
 * (the embedding dominates the residual and the output is tied to it), while sampled ones
 * feed a different token most steps.
 */
static void test_gemma3(void)
{
	gemma_decode("tiny-gemma3", 64, false);
}

/* Gemma 2's: local and global layers alternating, attention-score and final soft-caps. */
static void test_gemma2(void)
{
	gemma_decode("tiny-gemma2", 64, false);
}

/*
 * Gemma 4 dense: per-layer inputs (PLE), the last layers reading the KV of earlier ones (KV
 * donors), k = v on global layers, a head size per layer kind; sampled as Gemma 3's.
 */
static void test_gemma4(void)
{
	gemma_decode("tiny-gemma4", 64, false);
}

/*
 * Gemma 4's mixture of experts: each of the 6 layers ends a job at its router and the host
 * chooses the experts the next job streams, through /dev/pccx as in process (7 jobs a step).
 */
static void test_gemma4_moe(void)
{
	gemma_decode_jobs("tiny-gemma4-moe", GEMMA_TOKENS, false, 7);
}

/* pccx-memory of this process's /dev/pccx file (the one libpccx opened), in KiB; -1 if none. */
static long pccx_fd_memory_kib(void)
{
	char path[64], link[64];
	int fd;

	for (fd = 0; fd < 256; fd++) {
		ssize_t n;

		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		n = readlink(path, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = '\0';
		if (!strcmp(link, "/dev/pccx"))
			return fd_memory_kib(fd);
	}
	return -1;
}

/*
 * Two sessions of one model on /dev/pccx share the model's weight buffers: the second
 * session adds only its KV cache and step buffers, both give the same greedy tokens, and
 * the second keeps working after the first is freed.
 */
static void test_gemma_shared(void)
{
	struct pccx_device_opts dopt = { sizeof(dopt), "kernel", NULL, NULL, NULL };
	struct pccx_model_opts mopt = { sizeof(mopt), NULL, "tiny", 7, NULL, NULL, NULL };
	struct pccx_session_opts sopt = { .struct_size = sizeof(sopt), .verify = false };
	static const int32_t prompt[1] = { 2 };
	struct gemma_run a, b;
	pccx_device *dev = NULL;
	pccx_model *model = NULL;
	pccx_session *sa = NULL, *sb = NULL;
	pccx_diag d = { 0 };
	long m0, m1, m2;
	int rc;

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	rc = pccx_device_open(&dopt, &dev, &d);
	if (!rc)
		rc = pccx_model_load(dev, &mopt, &model, &d);
	m0 = pccx_fd_memory_kib();
	if (!rc)
		rc = pccx_session_create(model, &sopt, &sa, &d);
	if (!rc)
		rc = pccx_session_prefill(sa, prompt, 1, &d);
	if (!rc)
		rc = gemma_tokens(sa, &a, 4, &d);
	m1 = pccx_fd_memory_kib();
	if (!rc)
		rc = pccx_session_create(model, &sopt, &sb, &d);
	if (!rc)
		rc = pccx_session_prefill(sb, prompt, 1, &d);
	if (!rc)
		rc = gemma_tokens(sb, &b, 4, &d);
	m2 = pccx_fd_memory_kib();
	if (rc) {
		printf("  shared: %s\n", d.msg);
		CHECK_RET(rc, 0);
		pccx_session_free(sb);
		pccx_session_free(sa);
		pccx_model_free(model);
		pccx_device_close(dev);
		return;
	}
	CHECK(a.n == 4 && b.n == 4 && !memcmp(a.ids, b.ids, sizeof(a.ids[0]) * 4));
	printf("  pccx-memory: %ld KiB with the model, %ld with one session, %ld with two\n", m0,
	       m1, m2);
	CHECK(m0 >= 0 && m1 > m0 && m2 > m1);
	/* the second session adds less than a third of the first (no second weight copy) */
	CHECK(3 * (m2 - m1) < m1 - m0);
	pccx_session_free(sa);
	rc = gemma_tokens(sb, &b, 2, &d);
	CHECK_RET(rc, 0);
	CHECK(b.n == 6);
	pccx_session_free(sb);
	pccx_model_free(model);
	/* the model's buffers went with it */
	CHECK(pccx_fd_memory_kib() == m0);
	pccx_device_close(dev);
}

/* The tiny model on a backend, prefilled with <bos>: device, model and session. */
struct gemma_ctx {
	pccx_device *dev;
	pccx_model *model;
	pccx_session *s;
};

static int gemma_open(const char *backend, bool verify, struct gemma_ctx *g, pccx_diag *d)
{
	struct pccx_device_opts dopt = { sizeof(dopt), backend, NULL, NULL, NULL };
	struct pccx_model_opts mopt = { sizeof(mopt), NULL, "tiny", 7, NULL, NULL, NULL };
	struct pccx_session_opts sopt = { .struct_size = sizeof(sopt), .verify = verify };
	static const int32_t prompt[1] = { 2 };
	int rc;

	memset(g, 0, sizeof(*g));
	rc = pccx_device_open(&dopt, &g->dev, d);
	if (!rc)
		rc = pccx_model_load(g->dev, &mopt, &g->model, d);
	if (!rc)
		rc = pccx_session_create(g->model, &sopt, &g->s, d);
	if (!rc)
		rc = pccx_session_prefill(g->s, prompt, 1, d);
	return rc;
}

static void gemma_close(struct gemma_ctx *g)
{
	pccx_session_free(g->s);
	pccx_model_free(g->model);
	pccx_device_close(g->dev);
}

/* n greedy tokens on the in-process backend: what the kernel path must give. */
static int gemma_expect(size_t n, struct gemma_run *r, pccx_diag *d)
{
	struct gemma_ctx g;
	int rc = gemma_open("sim", false, &g, d);

	memset(r, 0, sizeof(*r));
	if (!rc)
		rc = gemma_tokens(g.s, r, n, d);
	gemma_close(&g);
	return rc;
}

/*
 * A slow host: pccx-simd lets the device run alone for 20,000 core cycles (2.4 times the
 * overrun grace) after every 11th access of the driver, as if the worker were preempted
 * there; every phase of the command/word sequence gets hit. Logits and KV rows are verified
 * each step and the tokens are the in-process ones.
 */
static void test_gemma_slow_host(void)
{
	struct gemma_run k, want;
	struct gemma_ctx g;
	pccx_diag d = { 0 };
	char out[64];
	int rc;

	CHECK_RET(gemma_expect(4, &want, &d), 0);
	CHECK(simd("slow 11 20000", out, sizeof(out)) == 0 && !strncmp(out, "slow 11", 7));
	memset(&k, 0, sizeof(k));
	rc = gemma_open("kernel", true, &g, &d);
	if (!rc)
		rc = gemma_tokens(g.s, &k, 4, &d);
	if (rc)
		printf("  slow host: %s\n", d.msg);
	CHECK_RET(rc, 0);
	gemma_close(&g);
	CHECK(simd("slow 0 0", out, sizeof(out)) == 0 && !strncmp(out, "slow 0", 6));
	CHECK(k.n == 4 && !memcmp(k.ids, want.ids, sizeof(k.ids[0]) * 4));
}

/*
 * A device fault in the middle of a decode through /dev/pccx (the device raises DMA_SLVERR
 * at instruction 1500 of the next job): the caller gets PCCX_ERR_DEVICE naming the fault, no
 * crash, no buffer left behind; generate again feeds the token whose step failed and the
 * tokens are those of an undisturbed run. The driver reset the device once for it.
 */
static void test_gemma_device_fault(void)
{
	long resets = read_long(SYSFS "reset_count");
	struct gemma_run k, want;
	struct gemma_ctx g;
	pccx_diag d = { 0 };
	char out[64];
	long m0;
	int rc;

	CHECK_RET(gemma_expect(6, &want, &d), 0);
	memset(&k, 0, sizeof(k));
	rc = gemma_open("kernel", true, &g, &d);
	CHECK_RET(rc, 0);
	if (rc) {
		printf("  open: %s\n", d.msg);
		gemma_close(&g);
		return;
	}
	CHECK(simd("fault 1500 3", out, sizeof(out)) == 0 && !strncmp(out, "fault 1500 3", 12));
	rc = gemma_tokens(g.s, &k, 6, &d);
	CHECK_RET(rc, PCCX_ERR_DEVICE);
	CHECK(strstr(d.msg, "hw_error 0x03000103 at instruction 1500") != NULL);
	if (rc != PCCX_ERR_DEVICE || !strstr(d.msg, "at instruction 1500"))
		printf("  fault: %s\n", d.msg);
	CHECK(k.n == 1);
	CHECK(read_long(SYSFS "reset_count") == resets + 1);
	rc = gemma_tokens(g.s, &k, 6 - k.n, &d);
	if (rc)
		printf("  after the fault: %s\n", d.msg);
	CHECK_RET(rc, 0);
	CHECK(k.n == 6 && !memcmp(k.ids, want.ids, sizeof(k.ids[0]) * 6));
	pccx_session_free(g.s);
	g.s = NULL;
	pccx_model_free(g.model);
	g.model = NULL;
	m0 = pccx_fd_memory_kib();
	CHECK(m0 == 0);
	gemma_close(&g);
}

#define PCCX_PARAM "/sys/module/pccx/parameters/"

/*
 * Weights and a KV cache larger than the driver's max_bo_size are split into pieces that no
 * instruction's read or write crosses: the same tokens as in-process, every stage and the KV
 * rows verified against the reference. A limit below one instruction's read is refused with
 * a message saying so.
 */
static void test_gemma_split(void)
{
	long max = read_long(PCCX_PARAM "max_bo_size");
	struct gemma_run k, sim;
	pccx_diag d = { 0 };
	int rc;

	CHECK(max > 0);
	/* below the 2.1 MB of weights and the 640 KiB KV cache of the tiny model: both in pieces */
	CHECK_RET(write_text(PCCX_PARAM "max_bo_size", "524288"), 0);
	rc = gemma_run("kernel", "tiny", GEMMA_TOKENS, true, true, &k, &d);
	if (rc)
		printf("  split: %s\n", d.msg);
	CHECK_RET(rc, 0);
	CHECK(k.n == GEMMA_TOKENS);
	rc = gemma_run("sim", "tiny", GEMMA_TOKENS, true, false, &sim, &d);
	CHECK_RET(rc, 0);
	CHECK(sim.n == k.n && !memcmp(sim.ids, k.ids, k.n * sizeof(k.ids[0])));
	CHECK(weight_bytes_agree("tiny", sim.st.weight_bytes, k.st.weight_bytes));
	/* one GEMV reads more than 4 KiB */
	CHECK_RET(write_text(PCCX_PARAM "max_bo_size", "4096"), 0);
	memset(&d, 0, sizeof(d));
	rc = gemma_run("kernel", "tiny", GEMMA_TOKENS, true, false, &k, &d);
	CHECK_RET(rc, PCCX_ERR_RANGE);
	CHECK(strstr(d.msg, "more than the device's largest buffer (4096 bytes)") != NULL);
	if (rc != PCCX_ERR_RANGE)
		printf("  4 KiB: %d %s\n", rc, d.msg);
	{
		char v[32];

		snprintf(v, sizeof(v), "%ld", max);
		CHECK_RET(write_text(PCCX_PARAM "max_bo_size", v), 0);
	}
}

static const struct {
	const char *name;
	void (*fn)(void);
} tests[] = {
	{ "info", test_info },
	{ "bad-ioctls", test_bad_ioctls },
	{ "bo", test_bo },
	{ "bo-abuse", test_bo_abuse },
	{ "bo-create-race", test_bo_create_race },
	{ "bo-isolation", test_bo_isolation },
	{ "quota", test_quota },
	{ "job-bitexact", test_job },
	{ "submit-abuse", test_submit_abuse },
	{ "wait-poll", test_wait },
	{ "hang-recovery", test_hang },
	{ "signal-during-wait", test_signal },
	{ "close-with-job-running", test_close_running },
	{ "two-processes", test_two_processes },
	{ "concurrent-files", test_concurrent_files },
	{ "fair-turns", test_fair_turns },
	{ "l2-isolation", test_l2_isolation },
	{ "l2-scrub-fails", test_l2_scrub_fails },
	{ "reset-ioctl", test_reset },
	{ "sysfs-debugfs-fdinfo", test_observability },
	{ "shadow-iommu", test_shadow_iommu },
	{ "bench", test_bench },
	/* tiny Gemma decode through /dev/pccx: logits and KV bit-exact, tokens as in-process */
	{ "gemma-decode", test_gemma },
	/* the same for a tiny Gemma 3, 2 and 4, 64 tokens each */
	{ "gemma3-decode", test_gemma3 },
	{ "gemma2-decode", test_gemma2 },
	{ "gemma4-decode", test_gemma4 },
	{ "gemma4-moe-decode", test_gemma4_moe },
	{ "gemma-split-weights", test_gemma_split },
	{ "gemma-shared-weights", test_gemma_shared },
	{ "gemma-slow-host", test_gemma_slow_host },
	{ "gemma-device-fault", test_gemma_device_fault },
};

int main(int argc, char **argv)
{
	const char *only = argc > 1 ? argv[1] : NULL;
	unsigned i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
		if (only && !strstr(only, tests[i].name))
			continue;
		guest_run(tests[i].name, tests[i].fn);
	}
	return guest_summary("pccx-tests");
}
