/* SPDX-License-Identifier: MIT */
/*
 * The signal masks of this process's threads, read from /proc: the library's own threads must
 * block every signal, so that Ctrl-C reaches the application's thread that waits for it.
 */
#ifndef PCCX_TEST_THREAD_SIGNALS_H
#define PCCX_TEST_THREAD_SIGNALS_H

/*
 * How many threads other than the calling one this process has; *unblocked is how many of
 * them do not block `sig`. -1 when /proc cannot be read.
 */
int other_threads(int sig, int *unblocked);

#endif
