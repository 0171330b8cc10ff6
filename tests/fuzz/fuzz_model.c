/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the model loader (pccx__gemma_load_gguf) on hostile GGUF files of every
 * family. A GGUF container that parses is not a model: its keys, counts and tensor shapes
 * still have to be checked against each other. The target synthesises a valid tiny GGUF of
 * Gemma 2, Gemma 4 with experts and Gemma 3n at start, then each input picks one and
 * overwrites bytes of its first 64 KiB (the header, the keys and the tensor infos) at the
 * offsets it gives: the loader must load it or refuse it with a message, never crash, and
 * a model it accepts must pass the configuration check.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gemma_gguf.h"
#include "gemma_model.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NBASE 3
#define EDIT_SPAN (64u * 1024u)

static const char *const base_configs[NBASE] = { "tiny-gemma2", "tiny-gemma4-moe", "tiny" };
static uint8_t *base[NBASE];
static size_t base_len[NBASE];
static uint8_t *work;
static int fd = -1;
static char path[64];

static uint8_t *read_all(const char *p, size_t *len)
{
	FILE *f = fopen(p, "rb");
	uint8_t *b = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0 &&
	    (b = malloc((size_t)n)) && fread(b, 1, (size_t)n, f) != (size_t)n) {
		free(b);
		b = NULL;
	}
	*len = b ? (size_t)n : 0;
	fclose(f);
	return b;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char dir[] = "/tmp/pccx-fuzz-model-XXXXXX", file[96];
	size_t i, max = 0;

	(void)argc;
	(void)argv;
	if (!mkdtemp(dir))
		abort();
	for (i = 0; i < NBASE; i++) {
		struct pccx_gemma_config cfg;
		struct pccx_gemma_model *m;
		pccx_diag d = { 0 };

		snprintf(file, sizeof(file), "%s/%zu.gguf", dir, i);
		if (pccx__gemma_config_preset(base_configs[i], &cfg, &d) ||
		    pccx__gemma_model_create(&m, &cfg, &d) || pccx__gemma_synth(m, 1, 1, &d) ||
		    pccx__gemma_save_gguf(m, NULL, file, &d)) {
			fprintf(stderr, "fuzz_model: %s: %s\n", base_configs[i], d.msg);
			abort();
		}
		pccx__gemma_model_free(m);
		base[i] = read_all(file, &base_len[i]);
		unlink(file);
		if (!base[i])
			abort();
		max = base_len[i] > max ? base_len[i] : max;
	}
	rmdir(dir);
	work = malloc(max);
	fd = memfd_create("fuzz-model.gguf", 0);
	if (!work || fd < 0)
		abort();
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pccx_gemma_model *m = NULL;
	pccx_diag d = { 0 };
	size_t b, i, len;

	if (size < 1)
		return 0;
	b = data[0] % NBASE;
	len = base_len[b];
	memcpy(work, base[b], len);
	/* (offset: 2 bytes, value: 1 byte) edits within the first EDIT_SPAN bytes */
	for (i = 1; i + 3 <= size; i += 3) {
		size_t off = ((size_t)data[i] | (size_t)data[i + 1] << 8) % EDIT_SPAN;

		if (off < len)
			work[off] = data[i + 2];
	}
	if (ftruncate(fd, 0) || pwrite(fd, work, len, 0) != (ssize_t)len)
		abort();
	if (pccx__gemma_load_gguf(&m, path, 64, NULL, NULL, &d) == 0) {
		if (pccx__gemma_config_check(&m->cfg, NULL))
			__builtin_trap();
		pccx__gemma_model_free(m);
	} else if (!d.msg[0]) {
		__builtin_trap();
	}
	return 0;
}
