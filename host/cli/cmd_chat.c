// SPDX-License-Identifier: MIT
/*
 * pccx chat: a conversation in the terminal. Each user turn is written in the model family's
 * chat format and only its tokens are prefilled: the conversation so far stays in the session's
 * KV cache. The reply streams token by token; Ctrl-C stops it (the turn is closed as the
 * template writes it), /reset, /save FILE, /load FILE, /help and /quit at the prompt.
 * docs/chat.md describes it and the file format.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "chat_file.h"
#include "diag.h"
#include "gen_run.h"
#include "pccx/tokenizer.h"

struct chat_args {
	struct pccx_cli_gen_args g;
	uint64_t n;
};

#define A(f, type) PCCX_AT(struct chat_args, f, type)
static const struct pccx_opt chat_opts[] = {
	PCCX_OPT(NULL, 'n', PCCX_OPT_UINT, A(n, uint64_t), "N",
		 "tokens a reply has at most (default 256)", .min = 1, .max = 1000000),
	PCCX_CLI_GEN_OPTS(struct chat_args, g),
	PCCX_CLI_SHOW_OPTS(struct chat_args, g),
	{ 0 }
};
#undef A

static const struct pccx_opt_cmd chat_cmd = {
	.name = "chat",
	.usage = "(-m MODEL.gguf | --config NAME [--seed S]) [--tokenizer FILE] [-n N] [options]",
	.about = "A conversation: reads a line, writes it as a user turn in the model's chat "
		 "format,\nprefills only that turn (the conversation so far stays in the KV cache) "
		 "and\nstreams the reply, with a statistics line on stderr. Ctrl-C stops a reply; "
		 "at\nthe prompt Ctrl-C or Ctrl-D ends. /help lists the commands (docs/chat.md).\n",
	.opts = chat_opts,
	.more_title = "sampler (docs/sampling.md)",
	.more = pccx_cli_sampler_opts,
	.more_at = offsetof(struct chat_args, g.sc),
};

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
	(void)sig;
	interrupted = 1;
}

struct chat {
	const struct chat_args *a;
	struct pccx_cli_session cs;
	struct pccx_device_info info;
	pccx_sampler_config sc;		/* the command line's, or the loaded file's */
	struct pccx_cli_chat_conv conv;	/* the turns in the context */
	char model_id[512];
	bool broken;			/* a step failed for good: /reset or /load to go on */
	struct pccx_cli_show show;	/* how replies are printed (gen_show.h) */
	/* the line reader */
	char *buf;
	size_t len, cap;
	bool eof;
};

/* ---- reading lines ------------------------------------------------------------------------ */

enum { LINE_OK, LINE_EOF, LINE_INTR, LINE_ERR };

/*
 * The next line of stdin without its newline (a last line without one counts). SIGINT while
 * waiting: LINE_INTR. SIGINT is blocked but for the wait itself (ppoll), so one that comes
 * just before the wait is not lost.
 */
static int read_line(struct chat *c, char **line)
{
	for (;;) {
		char *nl = c->len ? memchr(c->buf, '\n', c->len) : NULL;
		sigset_t block, old;
		struct pollfd p = { .fd = 0, .events = POLLIN };
		ssize_t r;
		int pr;

		if (nl || (c->eof && c->len)) {
			size_t n = nl ? (size_t)(nl - c->buf) : c->len;

			*line = malloc(n + 1);
			if (!*line)
				return LINE_ERR;
			memcpy(*line, c->buf, n);
			(*line)[n] = '\0';
			n += nl ? 1 : 0;
			memmove(c->buf, c->buf + n, c->len - n);
			c->len -= n;
			return LINE_OK;
		}
		if (c->eof)
			return LINE_EOF;
		if (c->cap - c->len < 4096) {
			char *nb = realloc(c->buf, c->cap + 65536);

			if (!nb)
				return LINE_ERR;
			c->buf = nb;
			c->cap += 65536;
		}
		sigemptyset(&block);
		sigaddset(&block, SIGINT);
		sigprocmask(SIG_BLOCK, &block, &old);
		if (interrupted) {
			sigprocmask(SIG_SETMASK, &old, NULL);
			return LINE_INTR;
		}
		pr = ppoll(&p, 1, NULL, &old);
		sigprocmask(SIG_SETMASK, &old, NULL);
		if (pr < 0) {
			if (errno == EINTR)
				continue;
			return LINE_ERR;
		}
		r = read(0, c->buf + c->len, c->cap - c->len);
		if (r < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return LINE_ERR;
		}
		if (r == 0)
			c->eof = true;
		c->len += (size_t)r;
	}
}

/* ---- the model's identity ----------------------------------------------------------------- */

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s && s[1] ? s + 1 : path;
}

/* What a saved conversation must have been made with: the weights and the tokenizer. */
static void model_identity(struct chat *c)
{
	const struct pccx_model_opts *m = &c->a->g.mopt;
	size_t n = 0, size = sizeof(c->model_id);
	struct stat st;

	if (m->path)
		n += (size_t)snprintf(c->model_id, size, "%s, %lld bytes", base_name(m->path),
				      stat(m->path, &st) ? -1LL : (long long)st.st_size);
	else
		n += (size_t)snprintf(c->model_id, size, "synthetic %s, weight seed %llu",
				      m->synth_config, (unsigned long long)m->synth_seed);
	if (n < size && m->tokenizer)
		n += (size_t)snprintf(c->model_id + n, size - n, "; tokenizer %s, %lld bytes",
				      base_name(m->tokenizer),
				      stat(m->tokenizer, &st) ? -1LL : (long long)st.st_size);
	if (n < size)
		snprintf(c->model_id + n, size - n, "; %zu tokens in the vocabulary",
			 pccx_tokenizer_n_vocab(pccx_session_tokenizer(c->cs.s)));
}

/* ---- turns -------------------------------------------------------------------------------- */

struct reply {
	char *text;
	size_t len, cap;
	int32_t *ids;		/* the tokens given to on_token, in order */
	size_t n_ids, cap_ids;
	bool stopped;		/* Ctrl-C */
	bool nomem;
	struct pccx_cli_show *show;
};

static int on_token(void *user, int32_t token, const char *piece, size_t len)
{
	struct reply *r = user;

	if (interrupted) {
		r->stopped = true;
		return 1;
	}
	if (r->n_ids == r->cap_ids) {
		size_t cap = 2 * r->cap_ids + 64;
		int32_t *ids = realloc(r->ids, cap * sizeof(*ids));

		if (!ids) {
			r->nomem = true;
			return 1;
		}
		r->ids = ids;
		r->cap_ids = cap;
	}
	r->ids[r->n_ids++] = token;
	if (r->len + len + 1 > r->cap) {
		size_t cap = 2 * (r->len + len + 1) + 256;
		char *t = realloc(r->text, cap);

		if (!t) {
			r->nomem = true;
			return 1;
		}
		r->text = t;
		r->cap = cap;
	}
	memcpy(r->text + r->len, piece, len);
	r->len += len;
	r->text[r->len] = '\0';
	/* the display fails only when out of memory */
	if (pccx_cli_show_piece(r->show, token, piece, len, NULL)) {
		r->nomem = true;
		return 1;
	}
	return 0;
}

static uint32_t context_used(const pccx_session *s)
{
	uint32_t used = 0, max = 0;

	return pccx_session_context(s, &used, &max) ? 0 : used;
}

static uint32_t context_max(const pccx_session *s)
{
	uint32_t used = 0, max = 0;

	return pccx_session_context(s, &used, &max) ? 0 : max;
}

static void print_turn_stats(struct chat *c, const struct pccx_stats *before, bool verified)
{
	struct pccx_stats now, delta;

	if (pccx_session_stats(c->cs.s, &now))
		return;
	pccx_cli_gen_stats_since(&now, before, &c->info, &delta);
	pccx_cli_gen_print_stats(&delta, &c->info, verified);
}

/*
 * A user turn: prefill its tokens, stream the reply, close the reply with the format's end of
 * turn, and record both turns. Nothing changes when the turn is refused before the prefill.
 */
static void user_turn(struct chat *c, const char *text)
{
	pccx_session *s = c->cs.s;
	struct reply r = { 0 };
	struct pccx_stats before;
	int32_t *ids = NULL, *close = NULL, *model_ids;
	size_t n_ids = 0, n_close = 0, room, limit, n_reply;
	uint32_t used = context_used(s), max = context_max(s), after_prefill;
	pccx_diag d = { 0 };
	int rc;

	if (c->broken) {
		fprintf(stderr, "pccx chat: the session stopped at a failure: /reset starts a new "
			"conversation, /load FILE restores one\n");
		return;
	}
	rc = pccx_cli_gen_user_turn(s, text, c->conv.n == 0, c->a->g.think, &ids, &n_ids, &d);
	if (!rc)
		rc = pccx_session_tokenize_turn(s, "model", "", false, &close, &n_close, &d);
	if (rc) {
		fprintf(stderr, "pccx chat: %s\n", d.msg[0] ? d.msg : pccx_strerror(rc));
		goto out;
	}
	/* room for the turn, one reply token and the reply's end of turn */
	if ((size_t)used + n_ids + 1 + n_close > max) {
		fprintf(stderr, "pccx chat: the context is full: %u of %u positions used, this turn "
			"needs %zu and its reply at least %zu more; /reset starts a new "
			"conversation (/save FILE keeps this one)\n", used, max, n_ids,
			1 + n_close);
		goto out;
	}
	room = max - used - n_ids - n_close;
	limit = c->a->n < room ? c->a->n : room;
	if (pccx_session_stats(s, &before))
		memset(&before, 0, sizeof(before));
	interrupted = 0;
	rc = pccx_session_prefill(s, ids, n_ids, &d);
	if (rc) {
		/* all or nothing: the context is as it was */
		fprintf(stderr, "pccx chat: %s\n", d.msg[0] ? d.msg : pccx_strerror(rc));
		goto out;
	}
	after_prefill = context_used(s);
	r.show = &c->show;
	rc = pccx_session_generate(s, &c->sc, limit, on_token, &r, &d);
	if (rc) {
		pccx_diag d2 = { 0 };

		/* the reply so far stays: a token whose step failed is fed again first */
		fprintf(stderr, "\npccx chat: %s\n", d.msg[0] ? d.msg : pccx_strerror(rc));
		if (pccx_session_generate(s, &c->sc, 0, NULL, NULL, &d2))
			c->broken = true;
	}
	if (pccx_cli_show_end(&c->show, NULL))
		r.nomem = true;
	putchar('\n');
	fflush(stdout);
	if (r.stopped)
		fprintf(stderr, "(reply stopped: what was printed stays in the conversation)\n");
	print_turn_stats(c, &before, c->a->g.sopt.verify && !rc);
	if (r.nomem) {
		fprintf(stderr, "pccx chat: out of memory\n");
		c->broken = true;
	}
	/* the reply's tokens in the context: the end-of-turn token it stopped at is not */
	n_reply = context_used(s) - after_prefill;
	if (!c->broken && n_reply == limit && limit < c->a->n)
		fprintf(stderr, "(the context is full: /reset starts a new conversation, /save FILE "
			"keeps this one)\n");
	if (!c->broken) {
		rc = pccx_session_prefill(s, close, n_close, &d);
		if (rc) {
			fprintf(stderr, "pccx chat: closing the reply: %s\n",
				d.msg[0] ? d.msg : pccx_strerror(rc));
			c->broken = true;
		}
	}
	if (c->broken) {
		fprintf(stderr, "pccx chat: the conversation cannot go on: /reset starts a new "
			"one, /load FILE restores one\n");
		goto out;
	}
	/* the model's turn in the context: the reply's tokens fed back, then the end of turn */
	model_ids = realloc(r.ids, (n_reply + n_close) * sizeof(*model_ids));
	if (model_ids) {
		r.ids = model_ids;
		memcpy(model_ids + n_reply, close, n_close * sizeof(*close));
	}
	if (!model_ids || pccx_cli_chat_add(&c->conv, "user", text, ids, n_ids) ||
	    pccx_cli_chat_add(&c->conv, "model", r.text ? r.text : "", model_ids,
			      n_reply + n_close)) {
		fprintf(stderr, "pccx chat: out of memory\n");
		c->broken = true;
	}
out:
	free(r.ids);
	free(r.text);
	free(ids);
	free(close);
}

/* ---- commands ----------------------------------------------------------------------------- */

/* A new, empty session on the same model; the current one stays when it cannot be made. */
static int new_session(struct chat *c, pccx_session **s, pccx_diag *d)
{
	return pccx_session_create(c->cs.model, &c->a->g.sopt, s, d);
}

static void use_session(struct chat *c, pccx_session *s, struct pccx_cli_chat_conv *conv)
{
	pccx_session_free(c->cs.s);
	c->cs.s = s;
	pccx_cli_chat_clear(&c->conv);
	if (conv)
		c->conv = *conv;
	c->broken = false;
}

static void cmd_reset(struct chat *c)
{
	pccx_session *s = NULL;
	pccx_diag d = { 0 };
	int rc = new_session(c, &s, &d);

	if (rc) {
		fprintf(stderr, "pccx chat: /reset: %s (the conversation is kept)\n",
			d.msg[0] ? d.msg : pccx_strerror(rc));
		return;
	}
	use_session(c, s, NULL);
	fprintf(stderr, "(a new conversation)\n");
}

static void cmd_save(struct chat *c, const char *path)
{
	pccx_diag d = { 0 };
	int rc;

	if (c->broken) {
		fprintf(stderr, "pccx chat: /save: the conversation stopped at a failure and is not "
			"whole\n");
		return;
	}
	rc = pccx_cli_chat_save(path, c->model_id, &c->sc, &c->conv, &d);
	if (rc)
		fprintf(stderr, "pccx chat: /save: %s (nothing was written)\n",
			d.msg[0] ? d.msg : pccx_strerror(rc));
	else
		fprintf(stderr, "(saved %zu turns, %u tokens, to %s)\n", c->conv.n,
			context_used(c->cs.s), path);
}

/*
 * Restore a saved conversation into a new session: each turn's saved tokens (or its text in the
 * chat format) prefilled; the current conversation stays unless all of it succeeded.
 */
static void cmd_load(struct chat *c, const char *path)
{
	struct pccx_cli_chat_conv conv = { 0 };
	pccx_session *s = NULL;
	pccx_sampler_config sc;
	pccx_diag d = { 0 };
	size_t i, total = 0;
	int rc;

	rc = pccx_cli_chat_read(path, c->model_id, &conv, &sc, &d);
	if (!rc)
		rc = new_session(c, &s, &d);
	for (i = 0; !rc && i < conv.n; i++) {
		struct pccx_cli_chat_turn *t = &conv.turns[i];

		if (!t->ids && !strcmp(t->role, "user"))
			rc = pccx_cli_gen_user_turn(s, t->text, i == 0, c->a->g.think, &t->ids,
						    &t->n_ids, &d);
		else if (!t->ids)
			rc = pccx_session_tokenize_turn(s, t->role, t->text, i == 0, &t->ids,
							&t->n_ids, &d);
		total += t->n_ids;
	}
	if (!rc && total > context_max(s))
		rc = pccx__fail(&d, PCCX_ERR_RANGE, "%s: the conversation holds %zu tokens, the "
				"context at most %u", path, total, context_max(s));
	for (i = 0; !rc && i < conv.n; i++) {
		rc = pccx_session_prefill(s, conv.turns[i].ids, conv.turns[i].n_ids, &d);
		if (rc)
			rc = pccx__fail(&d, rc, "%s: turn %zu: %s", path, i + 1, d.msg);
	}
	if (rc) {
		fprintf(stderr, "pccx chat: /load: %s (the conversation is kept)\n",
			d.msg[0] ? d.msg : pccx_strerror(rc));
		pccx_session_free(s);
		pccx_cli_chat_clear(&conv);
		return;
	}
	use_session(c, s, &conv);
	c->sc = sc;
	fprintf(stderr, "(loaded %zu turns, %zu tokens, from %s; its sampler settings: temp %g, "
		"top-k %d, top-p %g, min-p %g, rep-penalty %g)\n", c->conv.n, total, path,
		(double)sc.temperature, (int)sc.top_k, (double)sc.top_p, (double)sc.min_p,
		(double)sc.repetition_penalty);
}

static void cmd_help(void)
{
	fprintf(stderr,
		"  a line        your turn; the reply streams (Ctrl-C stops it)\n"
		"  //text        a turn that starts with '/'\n"
		"  /reset        a new conversation\n"
		"  /save FILE    write the conversation to FILE (JSON, docs/chat.md)\n"
		"  /load FILE    restore a saved conversation (same model)\n"
		"  /help         this list\n"
		"  /quit         end (so do Ctrl-D, and Ctrl-C at the prompt)\n");
}

/* The argument of "/cmd ARG": surrounding spaces off; NULL when there is none. */
static char *argument(char *rest)
{
	size_t n;

	while (*rest == ' ' || *rest == '\t')
		rest++;
	n = strlen(rest);
	while (n && (rest[n - 1] == ' ' || rest[n - 1] == '\t' || rest[n - 1] == '\r'))
		rest[--n] = '\0';
	return n ? rest : NULL;
}

/* A line at the prompt; false ends the conversation. */
static bool handle_line(struct chat *c, char *line)
{
	size_t n = strlen(line);
	char *cmd, *arg = NULL;

	if (n && line[n - 1] == '\r')
		line[--n] = '\0';
	if (line[0] != '/' || line[1] == '/') {
		const char *text = line[0] == '/' ? line + 1 : line;
		const char *p = text;

		while (*p == ' ' || *p == '\t')
			p++;
		if (*p)
			user_turn(c, text);
		return true;
	}
	cmd = line + 1;
	n = strcspn(cmd, " \t");
	if (cmd[n]) {
		cmd[n] = '\0';
		arg = argument(cmd + n + 1);
	}
	if (!strcmp(cmd, "quit") || !strcmp(cmd, "exit"))
		return false;
	if (!strcmp(cmd, "help")) {
		cmd_help();
	} else if (!strcmp(cmd, "reset")) {
		cmd_reset(c);
	} else if (!strcmp(cmd, "save") || !strcmp(cmd, "load")) {
		if (!arg)
			fprintf(stderr, "pccx chat: /%s needs a file: /%s FILE\n", cmd, cmd);
		else if (cmd[0] == 's')
			cmd_save(c, arg);
		else
			cmd_load(c, arg);
	} else {
		fprintf(stderr, "pccx chat: unknown command '/%s': /help lists them (start a turn "
			"with '//' for a leading '/')\n", cmd);
	}
	return true;
}

int pccx_cmd_chat(int argc, char **argv)
{
	struct chat_args a = { .n = 256 };
	struct chat c = { 0 };
	struct sigaction sa;
	pccx_diag d = { 0 };
	int rc;

	pccx_cli_gen_defaults(&a.g);
	rc = pccx_opt_parse(&chat_cmd, argc, argv, &a);
	if (rc != PCCX_OPT_RUN)
		return rc;
	rc = pccx_cli_gen_check(&chat_cmd, &a.g);
	if (rc != PCCX_OPT_RUN)
		return rc;
	c.a = &a;
	c.sc = a.g.sc;
	rc = pccx_cli_gen_open(&a.g, &c.cs, &d);
	if (!rc)
		rc = pccx_device_info(c.cs.dev, &c.info);
	if (!rc && !pccx_session_tokenizer(c.cs.s))
		rc = pccx__fail(&d, PCCX_ERR_INVALID, "pccx chat needs a tokenizer (the chat format "
				"is written in its tokens): give --tokenizer FILE");
	if (!rc)
		rc = pccx_cli_gen_show(&a.g, c.cs.s, "pccx chat", &c.show, &d);
	if (rc)
		goto out;
	model_identity(&c);

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigint;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	fprintf(stderr, "pccx chat: %s; max %u positions. /help lists the commands; Ctrl-C "
		"stops a reply, Ctrl-D ends.\n", c.model_id, context_max(c.cs.s));
	for (;;) {
		char *line = NULL;
		int lr;
		bool go_on;

		/* a Ctrl-C that stopped a reply, or came during a command, is spent */
		interrupted = 0;
		fputs("> ", stdout);
		fflush(stdout);
		lr = read_line(&c, &line);
		if (lr == LINE_INTR || lr == LINE_EOF) {
			putchar('\n');
			break;
		}
		if (lr == LINE_ERR) {
			rc = pccx__fail(&d, PCCX_ERR_IO, "reading stdin: %s", strerror(errno));
			break;
		}
		go_on = handle_line(&c, line);
		free(line);
		if (!go_on)
			break;
	}
	fflush(stdout);
	if (!rc)
		rc = pccx_device_flush(c.cs.dev, &d);
out:
	pccx_cli_show_free(&c.show);
	pccx_cli_chat_clear(&c.conv);
	free(c.buf);
	pccx_cli_session_close(&c.cs);
	return rc ? pccx_cli_fail(rc, &d) : 0;
}
