/* SPDX-License-Identifier: MIT */
/*
 * libpccx status codes. Every public function returns one of these (0 on success,
 * a negative code on failure); pccx_strerror() gives the short text and the
 * function's pccx_diag argument, when not NULL, receives a detail message naming
 * the cause (file, tensor, field, index ...).
 */
#ifndef PCCX_STATUS_H
#define PCCX_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif
#pragma GCC visibility push(default) /* what follows is exported by libpccx.so */

#define PCCX_MUST_CHECK __attribute__((warn_unused_result))

/* X(name, value, text) — the only list of status codes; names and texts are generated from it. */
#define PCCX_STATUS_LIST(X)                                                         \
	X(PCCX_OK,               0,  "success")                                         \
	X(PCCX_ERR_INVALID,     -1,  "invalid argument")                                \
	X(PCCX_ERR_NOMEM,       -2,  "out of memory")                                   \
	X(PCCX_ERR_IO,          -3,  "input/output error")                              \
	X(PCCX_ERR_FORMAT,      -4,  "malformed input file")                            \
	X(PCCX_ERR_UNSUPPORTED, -5,  "unsupported feature or type")                     \
	X(PCCX_ERR_NOT_FOUND,   -6,  "not found")                                       \
	X(PCCX_ERR_RANGE,       -7,  "value out of range")                              \
	X(PCCX_ERR_VALIDATE,    -8,  "job refused by the validator")                    \
	X(PCCX_ERR_DEVICE,      -9,  "device error")                                    \
	X(PCCX_ERR_TIMEOUT,     -10, "timed out")                                       \
	X(PCCX_ERR_BUSY,        -11, "device or resource busy")                         \
	X(PCCX_ERR_MISMATCH,    -12, "results differ from the reference")               \
	X(PCCX_ERR_INTERNAL,    -13, "internal error")

typedef enum pccx_status {
#define PCCX_STATUS_ENUM(name, value, text) name = value,
	PCCX_STATUS_LIST(PCCX_STATUS_ENUM)
#undef PCCX_STATUS_ENUM
} pccx_status;

/* Short, static description of a status code ("unknown status" for foreign values). */
const char *pccx_strerror(int status);
/* The enumerator's name, e.g. "PCCX_ERR_FORMAT". */
const char *pccx_status_name(int status);

/*
 * Detail message of the last failure of a call. Functions that take a
 * `pccx_diag *` fill it (when non-NULL) on failure with one line that names
 * the cause, e.g. "model.gguf: tensor 'blk.3.ffn_up.weight': offset 0x1234 beyond end of file".
 */
typedef struct pccx_diag {
	int status;
	char msg[512];
} pccx_diag;

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif /* PCCX_STATUS_H */
