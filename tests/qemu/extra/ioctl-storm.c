// SPDX-License-Identifier: MIT
/*
 * An extra guest program (scripts/qemu/run.sh runs every C file of tests/qemu/extra in the x86
 * guest after pccx-tests): a bounded storm of hostile ioctls on /dev/pccx from two
 * processes. Arguments are random bytes, random fields of the real argument structs, random
 * handles and job ids, pointers into unmapped and read-only memory, and SUBMITs of random
 * instruction words over the process's real buffers; mmap at random offsets. Afterwards
 * the file still works (a buffer is created, mapped, written, read back and destroyed), and
 * closing it returns every byte of its quota. The kernel log is scanned by init.
 *
 * Exit 0: the device survived; 1: something did not work afterwards.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kernel_dev.h"
#include "uapi/pccx.h"

#define ROUNDS 4000

static uint64_t rng;
/*
 * Pointers the storm hands the kernel must never land in this program's own writable
 * memory (the kernel would write results there and the program would corrupt itself):
 * besides NULL, small values and non-canonical or kernel addresses, they point into a
 * region mapped PROT_NONE.
 */
static uint8_t *guard;
#define GUARD_BYTES (1u << 20)

static uint64_t rnd(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 0x2545F4914F6CDD1Dull;
}

/* A value a careless or hostile caller might pass: edges, small, huge, random. */
static uint64_t nasty(void)
{
	static const uint64_t edge[] = { 0, 1, 2, 3, 4, 16, 4095, 4096, 4097, 0x7fffffff,
					 0x80000000u, 0xffffffffu, 1ull << 32, 1ull << 63,
					 ~0ull, ~0ull - 4095 };

	switch (rnd() % 5) {
	case 0:
		return edge[rnd() % (sizeof(edge) / sizeof(edge[0]))];
	case 1:
		return rnd() % 64;
	case 2:
		return rnd() % 4096;
	case 3:
		return (uintptr_t)guard + rnd() % GUARD_BYTES;
	default:
		return rnd() | (1ull << 63);   /* never a user address */
	}
}

static void storm(int fd, uint8_t *ro, uint8_t *rw, uint32_t *handles, unsigned n_handles)
{
	static const unsigned long cmds[] = { PCCX_IOCTL_GET_INFO, PCCX_IOCTL_BO_CREATE,
					      PCCX_IOCTL_BO_INFO, PCCX_IOCTL_BO_DESTROY,
					      PCCX_IOCTL_SUBMIT, PCCX_IOCTL_WAIT };
	unsigned i, k;

	for (i = 0; i < ROUNDS; i++) {
		unsigned long cmd = cmds[rnd() % (sizeof(cmds) / sizeof(cmds[0]))];
		uint64_t *a = (uint64_t *)(void *)rw;
		void *arg = rw;

		for (k = 0; k < 16; k++)
			a[k] = nasty();
		if (cmd == PCCX_IOCTL_SUBMIT && rnd() % 2) {
			/* a plausible SUBMIT: random words over this process's real buffers */
			struct pccx_submit *s = (void *)rw;
			uint64_t *words = (uint64_t *)(void *)(rw + 1024);
			struct pccx_ioc_stream_desc *sd = (void *)(rw + 2048);

			for (k = 0; k < 32; k++)
				words[k] = rnd();
			for (k = 0; k < 4; k++) {
				sd[k].handle = n_handles ? handles[rnd() % n_handles] : 1;
				sd[k].port = (uint32_t)(rnd() % 5);
				sd[k].offset = rnd() % 8192;
				sd[k].length = (rnd() % 512) * 16;
			}
			memset(s, 0, sizeof(*s));
			s->insn_ptr = (uintptr_t)words;
			s->n_insn = (uint32_t)(rnd() % 33);
			s->stream_ptr = (uintptr_t)sd;
			s->n_stream = (uint32_t)(rnd() % 5);
			s->timeout_ns = 50000000;
		}
		switch (rnd() % 8) {
		case 0:
			arg = ro;               /* readable, not writable */
			break;
		case 1:
			arg = (void *)(uintptr_t)nasty();   /* anywhere */
			break;
		case 2:
			cmd = (cmd & ~0x3fff0000ul) | ((rnd() % 256) << 16);   /* a wrong size */
			break;
		default:
			break;
		}
		(void)ioctl(fd, cmd, arg);
		if (rnd() % 64 == 0) {
			size_t len = 4096 * (1 + rnd() % 4);
			void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
				       (off_t)(nasty() & ~4095ull));

			/* a mapping left behind would keep the file and its buffers alive */
			if (m != MAP_FAILED)
				munmap(m, len);
		}
	}
}

static int run(uint64_t seed)
{
	uint8_t *ro = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *rw = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int fd = pccx__kernel_dev_open(NULL), ok = 1;
	struct pccx_bo_create bo[4];
	struct pccx_info info;
	uint32_t handles[4];
	unsigned i;
	void *m;

	guard = mmap(NULL, GUARD_BYTES, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (fd < 0 || ro == MAP_FAILED || rw == MAP_FAILED || guard == MAP_FAILED) {
		printf("ioctl-storm: setup failed\n");
		return 1;
	}
	rng = seed;
	memset(ro, 0x5a, 4096);
	mprotect(ro, 4096, PROT_READ);
	for (i = 0; i < 4; i++) {
		if (pccx__kernel_dev_bo_create(fd, 8192, PCCX_BO_DEV_READ | PCCX_BO_DEV_WRITE, &bo[i]))
			return 1;
		handles[i] = bo[i].handle;
	}
	storm(fd, ro, rw, handles, 4);
	/* the file still works */
	if (pccx__kernel_dev_info(fd, &info)) {
		printf("ioctl-storm: GET_INFO fails after the storm\n");
		ok = 0;
	}
	if (pccx__kernel_dev_bo_create(fd, 4096, PCCX_BO_DEV_READ, &bo[0]) ||
	    pccx__kernel_dev_bo_map(fd, &bo[0], &m)) {
		printf("ioctl-storm: no buffer after the storm\n");
		ok = 0;
	} else {
		memset(m, 0xa5, 4096);
		if (((uint8_t *)m)[4095] != 0xa5)
			ok = 0;
		pccx__kernel_dev_bo_unmap(m, 4096);
		if (pccx__kernel_dev_bo_destroy(fd, bo[0].handle))
			ok = 0;
	}
	pccx__kernel_dev_close(fd);
	return ok ? 0 : 1;
}

int main(void)
{
	struct pccx_info before, after;
	int fd = pccx__kernel_dev_open(NULL), st, bad = 0;
	uint64_t seed;
	pid_t pid;

	if (fd < 0 || pccx__kernel_dev_info(fd, &before)) {
		printf("ioctl-storm: /dev/pccx: %s\n", strerror(fd < 0 ? -fd : errno));
		return 1;
	}
	seed = (uint64_t)time(NULL) | 1;
	printf("ioctl-storm: seeds 0x1234567 and 0x%llx\n", (unsigned long long)seed);
	fflush(stdout);
	pid = fork();
	if (pid == 0)
		_exit(run(0x1234567ull));
	bad |= run(seed);
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		bad = 1;
	/* jobs the storm left running end on close; then every byte is back */
	for (st = 0; st < 100; st++) {
		if (pccx__kernel_dev_info(fd, &after))
			return 1;
		if (after.global_used == before.global_used)
			break;
		usleep(50000);
	}
	if (after.global_used != before.global_used) {
		printf("ioctl-storm: %llu bytes still charged after close (was %llu)\n",
		       (unsigned long long)after.global_used,
		       (unsigned long long)before.global_used);
		bad = 1;
	}
	pccx__kernel_dev_close(fd);
	printf("ioctl-storm: %d rounds in 2 processes: %s\n", 2 * ROUNDS,
	       bad ? "FAILED" : "the device survived");
	return bad;
}
