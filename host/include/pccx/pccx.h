/* SPDX-License-Identifier: MIT */
/*
 * libpccx — run Gemma decoders (Gemma 1, 2, 3, 3n and 4) on a pccx v002 NPU.
 *
 *   pccx_device_open()   pick a backend: "sim" (in-process cycle simulator, the default),
 *                        "kernel" (/dev/pccx), "serial" or "usb" (a board over a link,
 *                        docs/link.md)
 *   pccx_model_load()    a GGUF or safetensors checkpoint, or a synthetic model; weights are
 *                        placed in device buffers in stream order
 *   pccx_session_*()     a conversation: KV cache, prefill, token-by-token generation with the
 *                        host sampler, statistics
 *
 * Every function returns a pccx_status (0 success, negative failure; see pccx/status.h) that
 * the caller must check, and fills the optional pccx_diag with a message naming the cause.
 * Objects are not thread-safe: a device, its models and their sessions are used by one
 * thread at a time (open one device per thread to run in parallel). Free sessions before
 * their model, and models before their device; a model's device buffers (the weights on the
 * kernel backend) are shared by its sessions and released with the model.
 */
#ifndef PCCX_PCCX_H
#define PCCX_PCCX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pccx/status.h"
#include "pccx/sampler.h"

#ifdef __cplusplus
extern "C" {
#endif
#pragma GCC visibility push(default) /* what follows is exported by libpccx.so */

#define PCCX_VERSION_MAJOR 0
#define PCCX_VERSION_MINOR 1

typedef struct pccx_device pccx_device;
typedef struct pccx_model pccx_model;
typedef struct pccx_session pccx_session;

/* ---- devices ------------------------------------------------------------------- */

struct pccx_device_opts {
	size_t struct_size;       /* sizeof(struct pccx_device_opts): lets the struct grow */
	const char *backend;      /* "sim" (default when NULL), "kernel", "serial", "usb" */
	const char *path;         /* kernel: device node (default "/dev/pccx"); serial: a tty or
				   * a Unix socket; usb: VID:PID (docs/usb.md) */
	const char *dtb;          /* sim: device-tree blob with the pccx,npu-v002 node (default:
				   * the built-in KV260 configuration) */
	const char *trace_path;   /* sim: write a Chrome/Perfetto trace here (NULL: none) */
};

struct pccx_device_info {
	char backend[16];
	uint32_t hw_version;      /* ID register [31:0] */
	uint32_t features;        /* FEATURES register */
	uint32_t l2_words;
	uint32_t dma_addr_bits;
	uint64_t core_hz, axi_hz;
	uint64_t ddr_bytes_per_s; /* modelled or nominal DDR peak */
};

/* Open a device. Returns PCCX_ERR_NOT_FOUND for an unknown backend or a missing node. */
PCCX_MUST_CHECK int pccx_device_open(const struct pccx_device_opts *opts, pccx_device **dev,
				     pccx_diag *d);
void pccx_device_close(pccx_device *dev);
/* Complete outputs such as the trace file, reporting any write error. */
PCCX_MUST_CHECK int pccx_device_flush(pccx_device *dev, pccx_diag *d);
PCCX_MUST_CHECK int pccx_device_info(pccx_device *dev, struct pccx_device_info *info);

/* ---- models -------------------------------------------------------------------- */

/*
 * Called while a model loads: stage "loading" (a model file) or "synthesising" (a preset),
 * done of total. A loader's notice (the towers of a multimodal checkpoint not read) comes once
 * as a stage of its own, the notice's text, with done == total == 0; it also stays in the
 * load's diag, whose status is PCCX_OK.
 */
typedef void (*pccx_progress_fn)(void *user, const char *stage, uint64_t done, uint64_t total);

struct pccx_model_opts {
	size_t struct_size;
	/*
	 * A directory, *.safetensors or *.json (index) path is a Hugging Face checkpoint
	 * (config.json in the directory / next to the file); anything else is read as GGUF.
	 * NULL: a synthetic model.
	 */
	const char *path;
	const char *synth_config; /* with path == NULL: "tiny", "e2b", "e4b", ... */
	uint64_t synth_seed;
	/*
	 * tokenizer.json. NULL: the GGUF's embedded vocabulary, or for a checkpoint the
	 * tokenizer.json beside it when present.
	 */
	const char *tokenizer;
	pccx_progress_fn progress;
	void *user;
};

PCCX_MUST_CHECK int pccx_model_load(pccx_device *dev, const struct pccx_model_opts *opts,
				    pccx_model **model, pccx_diag *d);
void pccx_model_free(pccx_model *model);

/* ---- sessions ------------------------------------------------------------------ */

struct pccx_session_opts {
	size_t struct_size;
	uint32_t max_context;     /* positions the context may hold (0: all the model's KV cache
				   * holds; more than that is refused) */
	bool verify;              /* run the bit-exact reference alongside and compare every stage */
	uint32_t prompt_chunk;    /* prompt tokens per job (0: as many as L2 holds; 1: one decode
				   * step per token); the bits are those of one step per token */
	bool no_rowmask;          /* stream the sparse layers' W_up and W_down whole even on a
				   * device with FEATURES.ROWMASK / COLSKIP (which read only the
				   * W_up rows and W_down columns the activation keeps); the
				   * logits and KV rows are the same */
};

/* Called for each sampled token with its text piece; return non-zero to stop generating. */
typedef int (*pccx_token_fn)(void *user, int32_t token, const char *piece, size_t len);

struct pccx_stats {
	uint64_t tokens;               /* tokens generated */
	uint64_t prompt_tokens;        /* tokens prefilled */
	double host_seconds;           /* wall time spent in prefill and generation */
	uint64_t device_cycles;        /* simulated core cycles (sim backend; 0 otherwise) */
	uint64_t decode_cycles;        /* of which in generation steps (one token each) */
	uint64_t decode_steps;         /* generation steps run on the device */
	uint64_t decode_weight_bytes;  /* weight bytes streamed by the generation steps */
	double device_seconds;         /* device time at the modelled clock */
	uint64_t weight_bytes;         /* bytes streamed from DDR as weights: on the simulator
					* those read; other backends count those the jobs' weight
					* streams name, more than are read where a GEMV rowmask
					* skips rows (Gemma 3n's sparse layers) */
	uint64_t dma_bytes;            /* other DDR traffic */
	double ddr_utilisation;        /* fraction of the DDR bandwidth ceiling reached */
	uint64_t jobs;                 /* jobs submitted */
};

PCCX_MUST_CHECK int pccx_session_create(pccx_model *model, const struct pccx_session_opts *opts,
					pccx_session **s, pccx_diag *d);
void pccx_session_free(pccx_session *s);

/*
 * Tokenize `text` with the model's tokenizer (chat=true: as one user turn with the generation
 * prompt, in the chat format of the model's family).
 */
PCCX_MUST_CHECK int pccx_session_tokenize(pccx_session *s, const char *text, bool chat,
					  int32_t **ids, size_t *n, pccx_diag *d);
/*
 * Tokenize one turn of a conversation that continues in this session, in the model family's
 * chat format (for Gemma, pccx_chat_render_gemma's): role "user" gives the turn and the
 * generation prompt that opens the model's reply, with the BOS in front when `first` (the turn
 * starts the conversation); role "model" (or "assistant") gives the rest of the reply the user
 * turn opened: its content and the end of turn. After pccx_session_generate, content "" gives
 * what closes the generated reply (the end-of-turn token the sampler stopped at is not in the
 * context). Prefilling the turns of a conversation one after the other puts into the context
 * the ids of the whole conversation rendered at once. PCCX_ERR_INVALID for another role or a
 * model without a tokenizer. *ids is malloc'd (free() it).
 */
PCCX_MUST_CHECK int pccx_session_tokenize_turn(pccx_session *s, const char *role,
					       const char *content, bool first, int32_t **ids,
					       size_t *n, pccx_diag *d);
struct pccx_chat_turn;	/* pccx/tokenizer.h */

/* How pccx_session_tokenize_chat writes a conversation (all zero: the template's defaults). */
struct pccx_chat_options {
	size_t struct_size;	/* sizeof(struct pccx_chat_options): lets the struct grow */
	bool thinking;		/* ask for reasoning (Gemma 4: <|think|> atop the system turn) */
	/*
	 * NULL, or a JSON array of tools in OpenAI's form, [{"type": "function", "function":
	 * {"name", "description", "parameters"}}], declared in the system turn (Gemma 4).
	 */
	const char *tools;
	/*
	 * NULL, or a JSON array with one entry per turn: the turn's message as an OpenAI-style
	 * client sends it (an object, or null), from which a model turn's "tool_calls" and
	 * "reasoning_content" and a "tool" turn's "tool_call_id" / "name" are read (Gemma 4's
	 * agent loop: docs/chat.md, "Tool calls and results"). The turns' contents stay in the
	 * turns. With it the last turn may also be a "tool" turn (the model answers its result).
	 */
	const char *messages;
};

/*
 * Tokenize a conversation (turns of role "system" (first only), "user", "model"/"assistant",
 * alternating from "user" and ending with "user"; with o->messages also "tool" turns, as the
 * last one too) in the model family's chat format, with the
 * generation prompt that opens the model's reply, as the family's chat_template writes it with
 * the options `o` (NULL: none). Thinking or tools asked of a family whose format has no place
 * for them is PCCX_ERR_UNSUPPORTED; tools that are not valid JSON or that the template would
 * not write well are PCCX_ERR_INVALID, the message naming where. *ids is malloc'd (free() it).
 */
PCCX_MUST_CHECK int pccx_session_tokenize_chat(pccx_session *s,
					       const struct pccx_chat_turn *turns, size_t n,
					       const struct pccx_chat_options *o, int32_t **ids,
					       size_t *n_ids, pccx_diag *d);
/*
 * The context's extent: *used positions hold tokens (prefilled, and generated ones fed
 * back), of at most *max (the session's max_context). A step beyond *max fails with
 * PCCX_ERR_RANGE ("context full"): a prefill that would not fit is refused whole.
 */
PCCX_MUST_CHECK int pccx_session_context(const pccx_session *s, uint32_t *used, uint32_t *max);
/*
 * Feed prompt tokens (appended to the context). All or nothing: when a step fails (a device
 * fault PCCX_ERR_DEVICE, a hung job PCCX_ERR_TIMEOUT, a verify mismatch ...) the context is
 * as it was before the call, and the same call may be repeated.
 */
PCCX_MUST_CHECK int pccx_session_prefill(pccx_session *s, const int32_t *ids, size_t n,
					 pccx_diag *d);
/*
 * Generate up to max_tokens tokens with the sampler configuration, calling cb for each.
 * The call that samples the session's first token seeds the sampler with cfg->seed; later
 * calls keep the sampler's position in that stream (their cfg->seed is not used).
 * Stops early at an end-of-turn/end-of-sequence token or when cb returns non-zero.
 * With verify set, returns PCCX_ERR_MISMATCH at the first differing stage; the diag names
 * the stage, the token, the instruction index and the first differing element.
 * When the step that feeds a sampled token fails, that token has been given to cb but is not
 * in the context yet: the next generate call feeds it first and goes on, so after a passing
 * fault (a device error, a hung job) a retry yields the tokens an undisturbed run would;
 * prefill refuses until then. A failure that repeats (a full context, a verify mismatch)
 * fails again on every retry: free the session.
 */
PCCX_MUST_CHECK int pccx_session_generate(pccx_session *s, const struct pccx_sampler_config *cfg,
					  size_t max_tokens, pccx_token_fn cb, void *user,
					  pccx_diag *d);
PCCX_MUST_CHECK int pccx_session_stats(const pccx_session *s, struct pccx_stats *st);

/* Device time per pipeline stage, summed over layers ("L3.attn.q" counts as "attn.q"). */
struct pccx_stage_time {
	char name[48];
	uint64_t cycles;   /* from the end of the previous stage to the end of this one */
	uint64_t count;    /* occurrences summed */
};

/*
 * The stage profile of the generation steps so far (sim backend), most expensive first.
 * *out is malloc'd (free() it).
 */
PCCX_MUST_CHECK int pccx_session_stage_profile(const pccx_session *s, struct pccx_stage_time **out,
					       size_t *n);

struct pccx_tokenizer;
/* The model's tokenizer (NULL when it has none); owned by the model. */
const struct pccx_tokenizer *pccx_session_tokenizer(const pccx_session *s);

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif /* PCCX_PCCX_H */
