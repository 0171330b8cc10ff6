/* SPDX-License-Identifier: MIT */
/*
 * pccx chat: the conversation as turns, and the file /save writes and /load reads (a JSON
 * document, docs/chat.md): the model's identity, the sampler settings and every turn with its
 * text and the token ids it put into the context.
 */
#ifndef PCCX_CLI_CHAT_FILE_H
#define PCCX_CLI_CHAT_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pccx/sampler.h"
#include "pccx/status.h"

/* One turn: role "user" or "model", its text, the ids it put into the context. */
struct pccx_cli_chat_turn {
	char *role;
	char *text;		/* NUL-terminated; may hold bytes that are not UTF-8 */
	int32_t *ids;		/* NULL: a turn read from a file without "tokens" */
	size_t n_ids;
};

struct pccx_cli_chat_conv {
	struct pccx_cli_chat_turn *turns;
	size_t n, cap;
};

/* Append a turn (the strings and ids are copied). */
PCCX_MUST_CHECK int pccx_cli_chat_add(struct pccx_cli_chat_conv *c, const char *role,
				      const char *text, const int32_t *ids, size_t n_ids);
void pccx_cli_chat_clear(struct pccx_cli_chat_conv *c);

/*
 * Write the conversation to path (replaced whole, or left as it was on failure). Refuses a
 * path that exists and is not a regular file.
 */
PCCX_MUST_CHECK int pccx_cli_chat_save(const char *path, const char *model_id,
				       const pccx_sampler_config *sc,
				       const struct pccx_cli_chat_conv *c, pccx_diag *d);
/*
 * Read a file /save wrote (or one written by hand in that format): refuses a malformed file,
 * one saved for another model (model_id differs), a role out of turn, a conversation that does
 * not end with a model turn. *out and *sc are filled only on success.
 */
PCCX_MUST_CHECK int pccx_cli_chat_read(const char *path, const char *model_id,
				       struct pccx_cli_chat_conv *out, pccx_sampler_config *sc,
				       pccx_diag *d);

#endif /* PCCX_CLI_CHAT_FILE_H */
