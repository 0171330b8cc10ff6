/* SPDX-License-Identifier: MIT */
/*
 * Test hooks of libpccx's in-process (sim) backend: how the test suite makes the simulated
 * device fail or the host slow, to drive every path a fault or a stall takes through the
 * library. Not part of the public API and not installed. Each returns PCCX_ERR_UNSUPPORTED on
 * another backend (the guest tests reach the simulator behind /dev/pccx through its daemon).
 */
#ifndef PCCX_TESTING_H
#define PCCX_TESTING_H

#include <stdint.h>

#include "pccx/pccx.h"

/*
 * The device raises ERROR with `cause` (PCCX_CAUSE_*) when instruction `index` of the job
 * `job` jobs from now (0: the next one) reaches issue (pccx__sim_inject_error). One shot.
 */
PCCX_MUST_CHECK int pccx__device_test_inject_error(pccx_device *dev, uint64_t job, uint32_t index,
						   uint32_t cause);

/*
 * The first GEMV at or after instruction `index` of the job `job` jobs from now retires with
 * the lowest bit of its first output element flipped, and no error (pccx__sim_inject_flip):
 * a result only a comparison with the reference can catch. One shot; a job with no GEMV from
 * `index` on leaves it armed for the next jobs' GEMVs at or after `index`.
 */
PCCX_MUST_CHECK int pccx__device_test_inject_flip(pccx_device *dev, uint64_t job, uint32_t index);

/*
 * Every job from now on is fed by a slow host: after register access n of a job with
 * n % every == phase, the device runs alone for `cycles` core cycles (pccx_sim_backend_opts).
 * every = 0 turns it off.
 */
PCCX_MUST_CHECK int pccx__device_test_slow_host(pccx_device *dev, uint64_t every, uint64_t phase,
						uint64_t cycles);

#endif /* PCCX_TESTING_H */
