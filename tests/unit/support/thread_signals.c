// SPDX-License-Identifier: MIT
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "thread_signals.h"

/* Whether thread `tid`'s SigBlk line has `sig`; -1 when it cannot be read. */
static int blocks(const char *tid, int sig)
{
	char path[64], line[256];
	int r = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%s/status", tid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "SigBlk:", 7)) {
			r = (int)((strtoull(line + 7, NULL, 16) >> (sig - 1)) & 1);
			break;
		}
	fclose(f);
	return r;
}

int other_threads(int sig, int *unblocked)
{
	DIR *d = opendir("/proc/self/task");
	long self = syscall(SYS_gettid);
	struct dirent *e;
	int n = 0;

	*unblocked = 0;
	if (!d)
		return -1;
	while ((e = readdir(d))) {
		int b;

		if (e->d_name[0] == '.' || strtol(e->d_name, NULL, 10) == self)
			continue;
		b = blocks(e->d_name, sig);
		if (b < 0) {
			closedir(d);
			return -1;
		}
		n++;
		*unblocked += !b;
	}
	closedir(d);
	return n;
}
