/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "diag.h"
#include "fileio.h"
#include "modelfile_util.h"

int pccx__modelfile_map_file(const char *path, pccx_modelfile_map *m, pccx_diag *d)
{
	struct stat st;
	void *p;
	int fd, rc;

	m->data = NULL;
	m->size = 0;
	m->mapping = NULL;
	m->fd = -1;
	rc = pccx__open_regular(path, PCCX_ERR_NOT_FOUND, &fd, &st, d);
	if (rc)
		return rc;
	if ((uint64_t)st.st_size > (uint64_t)SIZE_MAX) {
		close(fd);
		return pccx__fail(d, PCCX_ERR_RANGE,
				  "%s: file of %lld bytes does not fit the address space",
				  path, (long long)st.st_size);
	}
	if (st.st_size == 0) {
		close(fd);
		return PCCX_OK;
	}
	p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED) {
		int e = errno;

		close(fd);
		return pccx__fail(d, e == ENOMEM ? PCCX_ERR_NOMEM : PCCX_ERR_IO,
				  "%s: cannot map: %s",
				  path, strerror(e));
	}
	m->data = p;
	m->size = (size_t)st.st_size;
	m->mapping = p;
	m->fd = fd;
	return PCCX_OK;
}

int pccx__modelfile_read(const pccx_modelfile_map *m, const char *name, const uint8_t *p,
			 size_t len, uint8_t *buf, const uint8_t **out, pccx_diag *d)
{
	uint64_t off = (uint64_t)(p - m->data);
	size_t done = 0;
	ssize_t n;

	*out = p;
	if (!m->mapping)
		return PCCX_OK;
	while (done < len) {
		n = pread(m->fd, buf + done, len - done, (off_t)(off + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)	/* 0: the file shrank since it was opened */
			return pccx__fail(d, PCCX_ERR_IO,
					  "%s: cannot read %zu bytes at offset %llu: %s", name,
					  len - done, (unsigned long long)(off + done), n ?
					  strerror(errno) :
					  "the file ends there (it shrank since it was opened)");
		done += (size_t)n;
	}
	*out = buf;
	return PCCX_OK;
}

void pccx__modelfile_will_read(const pccx_modelfile_map *m, const uint8_t *p, uint64_t len)
{
	if (m->mapping && len)
		(void)posix_fadvise(m->fd, (off_t)(p - m->data), (off_t)len, POSIX_FADV_WILLNEED);
}

void pccx__modelfile_release(const pccx_modelfile_map *m, const void *p, uint64_t len)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), lo, hi;
	uintptr_t start = (uintptr_t)m->mapping, end = start + m->size;

	if (!m->mapping || !p || (uintptr_t)p < start || (uintptr_t)p >= end)
		return;
	if (len > end - (uintptr_t)p)
		len = end - (uintptr_t)p;
	lo = ((uintptr_t)p + page - 1) / page * page;
	hi = ((uintptr_t)p + len) / page * page;
	/* advice only: if the kernel declines, the pages simply stay resident */
	if (lo < hi)
		(void)madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

void pccx__modelfile_unmap(pccx_modelfile_map *m)
{
	if (m->mapping) {
		munmap(m->mapping, m->size);
		close(m->fd);
	}
	m->data = NULL;
	m->size = 0;
	m->mapping = NULL;
	m->fd = -1;
}

/* ------------------------------------------------------------------------------------- */

struct pccx_modelfile_arena_block {
	struct pccx_modelfile_arena_block *next;
	size_t pad;		/* keeps the payload 16-byte aligned */
	_Alignas(16) unsigned char mem[];
};

#define ARENA_CHUNK ((size_t)64 << 10)

void *pccx__modelfile_arena_alloc(pccx_modelfile_arena *a, size_t n)
{
	struct pccx_modelfile_arena_block *b;
	size_t need = (n + 15) & ~(size_t)15;
	size_t cap;

	if (need < n)
		return NULL;
	if (a->head && a->cap - a->used >= need) {
		void *p = a->head->mem + a->used;

		a->used += need;
		return p;
	}
	cap = need > ARENA_CHUNK ? need : ARENA_CHUNK;
	if (cap > SIZE_MAX - sizeof(*b))
		return NULL;
	b = malloc(sizeof(*b) + cap);
	if (!b)
		return NULL;
	if (need > ARENA_CHUNK && a->head) {
		/* A large object gets its own block behind the current one, which stays open. */
		b->next = a->head->next;
		a->head->next = b;
		return b->mem;
	}
	b->next = a->head;
	a->head = b;
	a->cap = cap;
	a->used = need;
	return b->mem;
}

char *pccx__modelfile_arena_strndup(pccx_modelfile_arena *a, const char *s, size_t n)
{
	char *p;

	if (n == SIZE_MAX)
		return NULL;
	p = pccx__modelfile_arena_alloc(a, n + 1);
	if (!p)
		return NULL;
	if (n)
		memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

void pccx__modelfile_arena_free(pccx_modelfile_arena *a)
{
	struct pccx_modelfile_arena_block *b = a->head;

	while (b) {
		struct pccx_modelfile_arena_block *next = b->next;

		free(b);
		b = next;
	}
	a->head = NULL;
	a->used = 0;
	a->cap = 0;
}

/* ------------------------------------------------------------------------------------- */

static uint64_t fnv1a(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	while (*s) {
		h ^= (unsigned char)*s++;
		h *= 0x100000001b3ull;
	}
	return h;
}

int pccx__modelfile_index_init(pccx_modelfile_index *ix, size_t n)
{
	size_t cap = 16;

	ix->names = NULL;
	ix->slots = NULL;
	ix->count = 0;
	while (cap < 2 * n) {
		if (cap > SIZE_MAX / 4 / sizeof(uint32_t))
			return PCCX_ERR_NOMEM;
		cap *= 2;
	}
	if (n > UINT32_MAX - 1)
		return PCCX_ERR_RANGE;
	ix->slots = calloc(cap, sizeof(*ix->slots));
	ix->names = calloc(cap, sizeof(*ix->names));
	if (!ix->slots || !ix->names) {
		pccx__modelfile_index_free(ix);
		return PCCX_ERR_NOMEM;
	}
	ix->mask = cap - 1;
	return PCCX_OK;
}

int pccx__modelfile_index_add(pccx_modelfile_index *ix, const char *name, uint32_t idx,
			      uint32_t *dup)
{
	size_t i = (size_t)fnv1a(name) & ix->mask;

	while (ix->slots[i]) {
		if (strcmp(ix->names[i], name) == 0) {
			if (dup)
				*dup = ix->slots[i] - 1;
			return 0;
		}
		i = (i + 1) & ix->mask;
	}
	ix->slots[i] = idx + 1;
	ix->names[i] = name;
	ix->count++;
	return 1;
}

int64_t pccx__modelfile_index_find(const pccx_modelfile_index *ix, const char *name)
{
	size_t i;

	if (!ix->slots || !name)
		return -1;
	i = (size_t)fnv1a(name) & ix->mask;
	while (ix->slots[i]) {
		if (strcmp(ix->names[i], name) == 0)
			return (int64_t)ix->slots[i] - 1;
		i = (i + 1) & ix->mask;
	}
	return -1;
}

void pccx__modelfile_index_free(pccx_modelfile_index *ix)
{
	free(ix->slots);
	free(ix->names);
	ix->slots = NULL;
	ix->names = NULL;
	ix->count = 0;
	ix->mask = 0;
}

/* ------------------------------------------------------------------------------------- */

#define SINK_STAGE ((size_t)1 << 20)

void pccx__modelfile_sink_mem(pccx_modelfile_sink *s)
{
	memset(s, 0, sizeof(*s));
	s->fd = -1;
}

/* A sink that writes to the open file fd, through a staging buffer for small writes. */
static int sink_fd(pccx_modelfile_sink *s, int fd)
{
	memset(s, 0, sizeof(*s));
	s->fd = fd;
	s->stage = malloc(SINK_STAGE);
	if (!s->stage) {
		s->status = PCCX_ERR_NOMEM;
		return PCCX_ERR_NOMEM;
	}
	return PCCX_OK;
}

static void sink_fd_write(pccx_modelfile_sink *s, const uint8_t *p, size_t n)
{
	while (n && s->status == PCCX_OK) {
		ssize_t r = write(s->fd, p, n);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			s->err = errno;
			s->status = PCCX_ERR_IO;
			return;
		}
		if (r == 0) {
			s->err = ENOSPC;
			s->status = PCCX_ERR_IO;
			return;
		}
		p += r;
		n -= (size_t)r;
		s->on_disk += (uint64_t)r;
	}
}

/* Flush staged bytes; returns the sink status. */
static int sink_flush(pccx_modelfile_sink *s)
{
	if (s->fd >= 0 && s->stage_len) {
		sink_fd_write(s, s->stage, s->stage_len);
		s->stage_len = 0;
	}
	return s->status;
}

void pccx__modelfile_sink_write(pccx_modelfile_sink *s, const void *p, size_t n)
{
	if (s->status != PCCX_OK || n == 0)
		return;
	if (s->fd < 0) {
		if (n > SIZE_MAX - s->len) {
			s->status = PCCX_ERR_NOMEM;
			return;
		}
		if (s->len + n > s->cap) {
			size_t cap = s->cap ? s->cap : 4096;
			uint8_t *nb;

			while (cap < s->len + n)
				cap = cap > SIZE_MAX / 2 ? s->len + n : cap * 2;
			nb = realloc(s->buf, cap);
			if (!nb) {
				s->status = PCCX_ERR_NOMEM;
				return;
			}
			s->buf = nb;
			s->cap = cap;
		}
		memcpy(s->buf + s->len, p, n);
		s->len += n;
	} else if (n >= SINK_STAGE) {
		if (sink_flush(s) == PCCX_OK)
			sink_fd_write(s, p, n);
	} else {
		if (s->stage_len + n > SINK_STAGE && sink_flush(s) != PCCX_OK)
			return;
		memcpy(s->stage + s->stage_len, p, n);
		s->stage_len += n;
	}
	if (s->status == PCCX_OK)
		s->written += n;
}

void pccx__modelfile_sink_zeros(pccx_modelfile_sink *s, size_t n)
{
	static const uint8_t z[256];

	while (n) {
		size_t k = n < sizeof(z) ? n : sizeof(z);

		pccx__modelfile_sink_write(s, z, k);
		n -= k;
	}
}

void pccx__modelfile_sink_free(pccx_modelfile_sink *s)
{
	free(s->buf);
	free(s->stage);
	s->buf = NULL;
	s->stage = NULL;
	s->len = s->cap = s->stage_len = 0;
}

/* ------------------------------------------------------------------------------------- */

int pccx__modelfile_write_atomic(const char *path,
				 int (*emit)(void *ctx, pccx_modelfile_sink *s, pccx_diag *d),
				 void *ctx, pccx_diag *d)
{
	static unsigned counter;
	char *dcopy, *bcopy, *tmp = NULL;
	const char *dir, *base;
	pccx_modelfile_sink s;
	int fd = -1, rc, tries;
	size_t tlen;

	if (!path || !*path)
		return pccx__fail(d, PCCX_ERR_INVALID, "output path is empty");
	rc = pccx__output_dest_check(path, d);
	if (rc)
		return rc;
	dcopy = strdup(path);
	bcopy = strdup(path);
	if (!dcopy || !bcopy) {
		free(dcopy);
		free(bcopy);
		return pccx__fail(d, PCCX_ERR_NOMEM, "%s: out of memory", path);
	}
	dir = dirname(dcopy);
	base = basename(bcopy);
	tlen = strlen(dir) + strlen(base) + 64;
	tmp = malloc(tlen);
	if (!tmp) {
		rc = pccx__fail(d, PCCX_ERR_NOMEM, "%s: out of memory", path);
		goto out;
	}
	for (tries = 0; tries < 100; tries++) {
		snprintf(tmp, tlen, "%s/.%s.tmp.%ld.%u", dir, base, (long)getpid(),
			 __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED));
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
		if (fd >= 0 || errno != EEXIST)
			break;
	}
	if (fd < 0) {
		rc = pccx__fail(d, PCCX_ERR_IO, "%s: cannot create temporary file in %s: %s",
				path, dir, strerror(errno));
		goto out;
	}
	rc = sink_fd(&s, fd);
	if (rc != PCCX_OK) {
		rc = pccx__fail(d, rc, "%s: out of memory", path);
		goto fail_unlink;
	}
	rc = emit(ctx, &s, d);
	if (rc == PCCX_OK)
		rc = sink_flush(&s);
	if (rc == PCCX_OK && fsync(fd) != 0) {
		s.err = errno;
		rc = PCCX_ERR_IO;
	}
	if (rc != PCCX_OK) {
		if (s.status != PCCX_OK)
			rc = pccx__fail(d, s.status, "%s: write failed after %llu bytes: %s", path,
					(unsigned long long)(s.fd >= 0 ? s.on_disk : s.written),
					s.status == PCCX_ERR_IO ? strerror(s.err) :
								 pccx_strerror(s.status));
		else if (s.err)
			rc = pccx__fail(d, rc, "%s: fsync failed: %s", path, strerror(s.err));
		pccx__modelfile_sink_free(&s);
		goto fail_unlink;
	}
	pccx__modelfile_sink_free(&s);
	if (close(fd) != 0) {
		fd = -1;
		rc = pccx__fail(d, PCCX_ERR_IO, "%s: close failed: %s", path, strerror(errno));
		goto fail_unlink;
	}
	fd = -1;
	if (rename(tmp, path) != 0) {
		rc = pccx__fail(d, PCCX_ERR_IO, "%s: cannot rename temporary file into place: %s",
				path, strerror(errno));
		goto fail_unlink;
	}
	/* Make the rename itself durable; failure here leaves a complete file, so ignore it. */
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		(void)fsync(fd);
		close(fd);
	}
	fd = -1;
	rc = PCCX_OK;
	goto out;

fail_unlink:
	if (fd >= 0)
		close(fd);
	unlink(tmp);
out:
	free(tmp);
	free(dcopy);
	free(bcopy);
	return rc;
}
