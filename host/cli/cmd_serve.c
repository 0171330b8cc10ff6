// SPDX-License-Identifier: MIT
/*
 * pccx serve: the model behind a local HTTP server with an OpenAI-style chat completions API
 * (docs/serve.md). libmicrohttpd runs a thread per connection; one worker thread owns the device,
 * the model and the sessions and runs one request at a time, the others wait in a bounded queue.
 * A connection thread parses and checks its request, queues it, waits for its reply (polling
 * its socket so that a client that leaves cancels it) and writes it, whole or as server-sent
 * events while the tokens come.
 */
#include <microhttpd.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "chat.h"
#include "cli.h"
#include "diag.h"
#include "gen_run.h"
#include "gen_show.h"
#include "json.h"
#include "json_out.h"
#include "pccx/output.h"
#include "pccx/tokenizer.h"

#define MAX_STOPS	4
#define MAX_STOP_LEN	64
#define MAX_MESSAGES	4096
#define MAX_DEPTH	32
#define PREFILL_CHUNK	16	/* prompt tokens fed between two looks at the deadline */
#define WAIT_MS		100	/* how often a waiting connection looks at its socket */

struct serve_args {
	struct pccx_cli_gen_args g;
	const char *host;
	uint64_t port, max_body, max_tokens, timeout, queue;
};

#define A(f, type) PCCX_AT(struct serve_args, f, type)
static const struct pccx_opt serve_opts[] = {
	PCCX_CLI_GEN_OPTS(struct serve_args, g),
	PCCX_OPT("host", 0, PCCX_OPT_STR, A(host, const char *), "ADDR",
		 "address to listen on (default 127.0.0.1; an IPv6 address, a host name)"),
	PCCX_OPT("port", 0, PCCX_OPT_UINT, A(port, uint64_t), "N",
		 "TCP port (default 8080; 0: a free one, printed)", .max = 65535),
	PCCX_OPT("max-body", 0, PCCX_OPT_BYTES, A(max_body, uint64_t), "BYTES",
		 "largest request body (default 1M; more is refused with 413)", .min = 64,
		 .max = (uint64_t)1 << 30),
	PCCX_OPT("max-tokens", 0, PCCX_OPT_UINT, A(max_tokens, uint64_t), "N",
		 "most tokens a request may ask for, and what it gets when it names\n"
		 "no max_tokens (default 512)", .min = 1, .max = 1000000),
	PCCX_OPT("timeout", 0, PCCX_OPT_UINT, A(timeout, uint64_t), "SECONDS",
		 "per request, from its arrival (default 300): waiting longer is 504,\n"
		 "generating longer ends the reply with finish_reason \"length\"", .min = 1,
		 .max = 86400),
	PCCX_OPT("queue", 0, PCCX_OPT_UINT, A(queue, uint64_t), "N",
		 "requests that may wait for the device (default 16); more are 503",
		 .max = 4096),
	{ 0 }
};
#undef A

static const struct pccx_opt_cmd serve_cmd = {
	.name = "serve",
	.usage = "(-m MODEL.gguf | --config NAME [--seed S]) [--host ADDR] [--port N] [options]",
	.about = "Loads the model and answers HTTP requests: POST /v1/chat/completions (OpenAI "
		 "style,\nstreamed with \"stream\": true), GET /v1/models, GET /health. One "
		 "request runs on the\ndevice at a time; the others wait in a queue. SIGINT or "
		 "SIGTERM stops it (docs/serve.md).\nThe sampler options below are the defaults "
		 "of the requests' fields.\n",
	.opts = serve_opts,
	.more_title = "sampler (docs/sampling.md): defaults of the requests",
	.more = pccx_cli_sampler_opts,
	.more_at = offsetof(struct serve_args, g.sc),
};

/* ---- requests, the queue, the worker --------------------------------------------------- */

enum job_state { JOB_QUEUED, JOB_RUNNING, JOB_DONE };

/* Why generation ended. */
enum job_end {
	END_NONE,	/* not yet, or the model ended its turn */
	END_STOP,	/* a stop string */
	END_LENGTH,	/* max_tokens, or the context is full */
	END_DEADLINE,	/* --timeout */
	END_CANCEL,	/* the client left */
	END_SHUTDOWN,	/* the server stops */
	END_ERROR,	/* a failure: http_status and err say which */
};

struct job {
	struct job *next;		/* in the queue */
	int refs;			/* the connection's; the worker's while queued or running */
	/* the request; read-only once queued */
	pccx_json_doc *doc;		/* the turns' strings point into it */
	pccx_chat_turn *turns;
	const pccx_json **msgs;		/* each turn's message, for its tool fields */
	size_t n_turns;
	const pccx_json *tools;		/* the request's tools (NULL: none) */
	bool thinking;			/* chat_template_kwargs.enable_thinking */
	char *prompt;			/* the conversation in the chat format */
	size_t prompt_len;
	pccx_sampler_config sc;
	size_t max_tokens;
	bool stream;
	const char *stops[MAX_STOPS];
	size_t stop_len[MAX_STOPS], n_stops, hold;	/* hold: the longest stop string - 1 */
	double deadline;
	unsigned long long id;
	long long created;
	/* progress, under the server's lock */
	enum job_state state;
	bool started;			/* the prompt is in: tokens may follow */
	bool cancel;			/* the client left */
	struct pccx_json_out text;	/* the reply so far */
	size_t prompt_tokens, completion_tokens;
	int32_t last_token;
	enum job_end end;
	int http_status;		/* END_ERROR */
	const char *err_type;
	char err[512];
};

struct server {
	pthread_mutex_t mu;
	pthread_cond_t work;		/* the worker: a job is queued, or stop */
	pthread_cond_t changed;		/* the connections: a job moved on */
	struct job *head, *tail;
	size_t n_waiting;
	struct job *running;
	bool stopping;
	/* settings */
	const struct serve_args *a;
	size_t max_body, max_tokens, queue;
	double timeout;
	/* the device and model: the worker's (and main's before and after it runs) */
	struct pccx_cli_session cs;
	bool has_tok;
	const pccx_tokenizer *tk;		/* the model's (NULL: none) */
	const struct pccx_chat_format *fmt;	/* the model family's chat format */
	bool events;			/* its output is read as events (Gemma 4) */
	int32_t stop_ids[PCCX_CHAT_MAX_STOPS + 1];
	size_t n_stop_ids;
	/* read-only once serving */
	char model_id[128];
	struct pccx_device_info info;
	long long started;
	/* under mu */
	unsigned long long next_id, n_ok, n_rejected, n_timed_out, n_cancelled, n_failed;
	char last_error[512];
};

static void job_set_error(struct job *job, int status, const char *type, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void job_set_error(struct job *job, int status, const char *type, const char *fmt, ...)
{
	va_list ap;

	job->end = END_ERROR;
	job->http_status = status;
	job->err_type = type;
	va_start(ap, fmt);
	vsnprintf(job->err, sizeof(job->err), fmt, ap);
	va_end(ap);
}

/* Drop a reference (under the lock); the last one frees the job. */
static void job_put(struct job *job)
{
	if (--job->refs > 0)
		return;
	pccx__json_free(job->doc);
	free(job->turns);
	free(job->msgs);
	free(job->prompt);
	pccx__json_out_free(&job->text);
	free(job);
}

static void queue_remove(struct server *srv, struct job *job)
{
	struct job **p;

	for (p = &srv->head; *p; p = &(*p)->next) {
		if (*p != job)
			continue;
		*p = job->next;
		if (srv->tail == job) {
			srv->tail = NULL;
			for (struct job *t = srv->head; t; t = t->next)
				srv->tail = t;
		}
		srv->n_waiting--;
		job->next = NULL;
		job->state = JOB_DONE;
		job_put(job);	/* the worker's */
		return;
	}
}

/* The client left: a queued job leaves the queue, a running one stops at its next token. */
static void job_cancel(struct server *srv, struct job *job)
{
	if (job->state == JOB_DONE)
		return;
	job->cancel = true;
	if (job->state == JOB_QUEUED) {
		queue_remove(srv, job);
		srv->n_cancelled++;
	}
}

/* Whether the job should stop now (under the lock); sets why. */
static bool job_should_stop(struct server *srv, struct job *job)
{
	if (job->cancel)
		job->end = END_CANCEL;
	else if (srv->stopping)
		job->end = END_SHUTDOWN;
	else if (pccx_cli_now() >= job->deadline)
		job->end = END_DEADLINE;
	else
		return false;
	return true;
}

struct gen_ctx {
	struct server *srv;
	struct job *job;
};

/*
 * The text of a token as the output parser reads it: a special token (a marker: <|channel>,
 * <|tool_call>, <|"|> ...) that does not end the reply is its piece, which the session's
 * decoding without special tokens leaves out (as pccx run prints it, gen_show.c).
 */
static const char *marker(const struct server *srv, int32_t token, const char *piece,
			  size_t *len)
{
	const char *m = srv->tk ? pccx_cli_marker(srv->tk, srv->stop_ids, srv->n_stop_ids,
						  token, len) : NULL;

	return m ? m : piece;
}

static int on_token(void *user, int32_t token, const char *piece, size_t len)
{
	struct gen_ctx *g = user;
	struct server *srv = g->srv;
	struct job *job = g->job;
	size_t from, i;
	bool stop;

	pthread_mutex_lock(&srv->mu);
	from = job->text.n;
	job->completion_tokens++;
	job->last_token = token;
	if (srv->events)
		piece = marker(srv, token, piece, &len);
	if (srv->has_tok)
		pccx__json_out_raw(&job->text, piece, len);
	else
		pccx__json_out_printf(&job->text, "[%d]", token);
	if (job->text.oom) {
		job_set_error(job, 500, "server_error", "out of memory");
		stop = true;
	} else {
		/* the earliest stop string the new text completes: the reply ends before it */
		size_t cut = job->text.n;

		from = from > job->hold ? from - job->hold : 0;
		for (i = 0; i < job->n_stops; i++) {
			const char *hit = memmem(job->text.p + from, job->text.n - from,
						 job->stops[i], job->stop_len[i]);

			if (hit && (size_t)(hit - job->text.p) < cut)
				cut = (size_t)(hit - job->text.p);
		}
		if (cut < job->text.n) {
			job->text.n = cut;
			job->text.p[cut] = '\0';
			job->end = END_STOP;
			stop = true;
		} else {
			stop = job_should_stop(srv, job);
		}
	}
	pthread_cond_broadcast(&srv->changed);
	pthread_mutex_unlock(&srv->mu);
	return stop;
}

/* The prompt's ids: the conversation in the chat template, encoded (or its bytes as ids). */
static int prompt_ids(pccx_session *s, const struct job *job, int32_t **ids, size_t *n,
		      pccx_diag *d)
{
	const pccx_tokenizer *tk = pccx_session_tokenizer(s);
	const char *text = job->prompt;
	size_t len = job->prompt_len, i;
	int rc = 0;

	*ids = NULL;
	*n = 0;
	if (tk) {
		/* the text starts with the BOS as text: no other BOS */
		rc = pccx_tokenizer_encode(tk, text, len, 0, ids, n, d);
	} else {
		*ids = malloc((len ? len : 1) * sizeof(**ids));
		if (!*ids)
			rc = pccx__fail(d, PCCX_ERR_NOMEM, "out of memory");
		for (i = 0; !rc && i < len; i++)
			(*ids)[i] = (unsigned char)text[i];
		if (!rc)
			*n = len;
	}
	return rc;
}

static bool is_stop_id(const struct server *srv, int32_t tok)
{
	size_t i;

	for (i = 0; i < srv->n_stop_ids; i++)
		if (srv->stop_ids[i] == tok)
			return true;
	return false;
}

/* Run one request on the device (the worker, without the lock). */
static void run_job(struct server *srv, struct job *job)
{
	struct gen_ctx g = { srv, job };
	pccx_session *s = NULL;
	pccx_diag d = { 0 };
	int32_t *ids = NULL;
	size_t n_ids = 0, i;
	int rc;

	rc = pccx_session_create(srv->cs.model, &srv->a->g.sopt, &s, &d);
	if (rc) {
		pthread_mutex_lock(&srv->mu);
		job_set_error(job, 500, "server_error", "%s", d.msg[0] ? d.msg : pccx_strerror(rc));
		goto done;
	}
	rc = prompt_ids(s, job, &ids, &n_ids, &d);
	pthread_mutex_lock(&srv->mu);
	if (rc) {
		job_set_error(job, rc == PCCX_ERR_NOMEM ? 500 : 400, rc == PCCX_ERR_NOMEM ?
			      "server_error" : "invalid_request_error", "prompt: %s",
			      d.msg[0] ? d.msg : pccx_strerror(rc));
		goto done;
	}
	{
		uint32_t used, max;

		if (!pccx_session_context(s, &used, &max) && n_ids >= (size_t)max - used) {
			job_set_error(job, 400, "invalid_request_error", "the prompt is %zu tokens and "
				      "does not fit in the context of %u positions (with one for the "
				      "reply)", n_ids, max - used);
			goto done;
		}
	}
	for (i = 0; i < n_ids; i += PREFILL_CHUNK) {
		size_t k = n_ids - i < PREFILL_CHUNK ? n_ids - i : PREFILL_CHUNK;

		if (job_should_stop(srv, job))
			break;
		pthread_mutex_unlock(&srv->mu);
		rc = pccx_session_prefill(s, ids + i, k, &d);
		pthread_mutex_lock(&srv->mu);
		if (rc == PCCX_ERR_RANGE) {
			job_set_error(job, 400, "invalid_request_error", "the prompt is %zu tokens and "
				      "does not fit in the context (%s)", n_ids, d.msg);
			goto done;
		}
		if (rc) {
			job_set_error(job, 500, "server_error", "prompt: %s",
				      d.msg[0] ? d.msg : pccx_strerror(rc));
			goto done;
		}
	}
	if (job->end == END_DEADLINE) {
		job_set_error(job, 504, "timeout", "the request ran past the server's --timeout of "
			      "%.0f s while its prompt was processed", srv->timeout);
		goto done;
	}
	if (job->end != END_NONE) {
		/* nobody waits for a cancelled one; a stopping server answers 503 */
		job_set_error(job, 503, "unavailable", "the server is stopping");
		goto done;
	}
	job->started = true;
	job->prompt_tokens = n_ids;
	pthread_cond_broadcast(&srv->changed);
	pthread_mutex_unlock(&srv->mu);

	rc = pccx_session_generate(s, &job->sc, job->max_tokens, on_token, &g, &d);

	pthread_mutex_lock(&srv->mu);
	if (rc == PCCX_ERR_RANGE && job->end == END_NONE)
		job->end = END_LENGTH;	/* the context is full */
	else if (rc && job->end == END_NONE)
		job_set_error(job, 500, "server_error", "%s", d.msg[0] ? d.msg : pccx_strerror(rc));
	else if (job->end == END_NONE && job->completion_tokens >= job->max_tokens &&
		 !is_stop_id(srv, job->last_token))
		job->end = END_LENGTH;
done:
	/* under the lock */
	if (job->end == END_ERROR && job->http_status == 500)
		snprintf(srv->last_error, sizeof(srv->last_error), "%s", job->err);
	if (job->end == END_CANCEL || job->cancel)
		srv->n_cancelled++;
	else if (job->end == END_ERROR && job->http_status == 504)
		srv->n_timed_out++;
	else if (job->end == END_ERROR && job->http_status < 500)
		srv->n_rejected++;
	else if (job->end == END_ERROR)
		srv->n_failed++;
	else
		srv->n_ok++;
	job->state = JOB_DONE;
	pthread_cond_broadcast(&srv->changed);
	pthread_mutex_unlock(&srv->mu);
	pccx_session_free(s);
	free(ids);
}

static void *worker(void *arg)
{
	struct server *srv = arg;
	struct job *job;

	pthread_mutex_lock(&srv->mu);
	for (;;) {
		while (!srv->stopping && !srv->head)
			pthread_cond_wait(&srv->work, &srv->mu);
		if (srv->stopping)
			break;
		job = srv->head;
		srv->head = job->next;
		if (!srv->head)
			srv->tail = NULL;
		job->next = NULL;
		srv->n_waiting--;
		job->state = JOB_RUNNING;
		srv->running = job;
		pthread_mutex_unlock(&srv->mu);
		run_job(srv, job);	/* returns with the job DONE */
		pthread_mutex_lock(&srv->mu);
		srv->running = NULL;
		job_put(job);
	}
	pthread_mutex_unlock(&srv->mu);
	return NULL;
}

/* ---- reading a request ----------------------------------------------------------------- */

static const char *const known_fields[] = {
	"model", "messages", "max_tokens", "temperature", "top_p", "top_k", "min_p",
	"repetition_penalty", "seed", "stop", "stream", "tools", "tool_choice",
	"chat_template_kwargs", NULL
};

/* A number member (absent or null: *out untouched). */
static int opt_float(const pccx_json_doc *doc, const pccx_json *obj, const char *key, float *out,
		     pccx_diag *d)
{
	const pccx_json *m = pccx__json_get(obj, key);
	double v;
	int rc;

	if (!m || pccx__json_type_of(m) == PCCX_JSON_NULL)
		return 0;
	rc = pccx__json_get_double(doc, obj, key, &v, d);
	if (!rc)
		*out = (float)v;
	return rc;
}

static int read_stops(const pccx_json_doc *doc, const pccx_json *root, struct job *job,
		      pccx_diag *d)
{
	const pccx_json *v = pccx__json_get(root, "stop"), *one[1];
	const pccx_json *const *list = one;
	size_t n = 1, i;

	if (!v || pccx__json_type_of(v) == PCCX_JSON_NULL)
		return 0;
	if (pccx__json_type_of(v) == PCCX_JSON_STRING) {
		one[0] = v;
	} else if (pccx__json_type_of(v) == PCCX_JSON_ARRAY) {
		n = pccx__json_count(v);
		if (n > MAX_STOPS)
			return pccx__json_fail(doc, v, d, PCCX_ERR_RANGE, "%zu stop strings; at most "
					       "%d", n, MAX_STOPS);
		list = NULL;
	} else {
		return pccx__json_fail(doc, v, d, PCCX_ERR_FORMAT, "expected a string or an array "
				       "of strings, got %s",
				       pccx__json_type_name(pccx__json_type_of(v)));
	}
	for (i = 0; i < n; i++) {
		const pccx_json *s = list ? list[i] : pccx__json_at(v, i);
		size_t len;
		const char *p;

		if (pccx__json_expect(doc, s, PCCX_JSON_STRING, d))
			return PCCX_ERR_FORMAT;
		p = pccx__json_str(s, &len);
		if (!len || len > MAX_STOP_LEN || memchr(p, '\0', len))
			return pccx__json_fail(doc, s, d, PCCX_ERR_RANGE, "a stop string is 1 to %d "
					       "bytes, without NUL", MAX_STOP_LEN);
		job->stops[job->n_stops] = p;
		job->stop_len[job->n_stops++] = len;
		if (len - 1 > job->hold)
			job->hold = len - 1;
	}
	return 0;
}

/* The fields a message of each role may have (the renderer checks tool_calls' entries). */
static bool message_field(const char *role, const char *key)
{
	if (!strcmp(key, "role") || !strcmp(key, "content"))
		return true;
	if (!strcmp(role, "assistant"))
		return !strcmp(key, "tool_calls") || !strcmp(key, "reasoning_content");
	if (!strcmp(role, "tool"))
		return !strcmp(key, "tool_call_id") || !strcmp(key, "name");
	return false;
}

/*
 * One message: a known role, its known fields, content a string (null or absent for an
 * assistant's message with tool_calls), tool_call_id and name strings.
 */
static int read_message(const pccx_json_doc *doc, const pccx_json *m, size_t i,
			pccx_chat_turn *turn, pccx_diag *d)
{
	const pccx_json *c, *v;
	const char *role, *content = "", *s;
	size_t k, len = 0;

	if (pccx__json_expect(doc, m, PCCX_JSON_OBJECT, d) ||
	    pccx__json_get_string(doc, m, "role", &role, NULL, d))
		return PCCX_ERR_FORMAT;
	if (strcmp(role, "system") && strcmp(role, "user") && strcmp(role, "assistant") &&
	    strcmp(role, "tool"))
		return pccx__json_fail(doc, pccx__json_get(m, "role"), d, PCCX_ERR_FORMAT,
				       "unknown role \"%.64s\": system, user, assistant or tool",
				       role);
	for (k = 0; k < pccx__json_count(m); k++) {
		const char *key = pccx__json_key(pccx__json_at(m, k), NULL);

		if (!message_field(role, key))
			return pccx__json_fail(doc, m, d, PCCX_ERR_FORMAT, "unknown field "
					       "\"%.64s\" (a message has role and content; an "
					       "assistant's also tool_calls and reasoning_content, a "
					       "tool's tool_call_id and name)", key);
	}
	if (!strcmp(role, "system") && i)
		return pccx__json_fail(doc, pccx__json_get(m, "role"), d, PCCX_ERR_FORMAT,
				       "a system message may only come first");
	v = pccx__json_get(m, "tool_calls");
	c = pccx__json_get(m, "content");
	if (v && pccx__json_type_of(v) != PCCX_JSON_NULL &&
	    pccx__json_expect(doc, v, PCCX_JSON_ARRAY, d))
		return PCCX_ERR_FORMAT;
	/* the content of a message that only calls tools may be null or absent */
	if ((!v || !pccx__json_count(v) || (c && pccx__json_type_of(c) != PCCX_JSON_NULL)) &&
	    pccx__json_get_string(doc, m, "content", &content, &len, d))
		return PCCX_ERR_FORMAT;
	if (memchr(content, '\0', len))
		return pccx__json_fail(doc, c, d, PCCX_ERR_FORMAT, "contains a NUL character");
	if (pccx__json_opt_string(doc, m, "reasoning_content", &s, NULL, d) ||
	    pccx__json_opt_string(doc, m, "tool_call_id", &s, NULL, d) ||
	    pccx__json_opt_string(doc, m, "name", &s, NULL, d))
		return PCCX_ERR_FORMAT;
	turn->role = role;
	turn->content = content;
	return 0;
}

static int read_messages(const pccx_json_doc *doc, const pccx_json *root, struct job *job,
			 pccx_diag *d)
{
	const pccx_json *msgs;
	const char *last;
	size_t i, n;
	int rc;

	rc = pccx__json_get_member(doc, root, "messages", PCCX_JSON_ARRAY, &msgs, d);
	if (rc)
		return rc;
	n = pccx__json_count(msgs);
	if (!n)
		return pccx__json_fail(doc, msgs, d, PCCX_ERR_FORMAT, "empty: give at least one "
				       "user message");
	if (n > MAX_MESSAGES)
		return pccx__json_fail(doc, msgs, d, PCCX_ERR_RANGE, "%zu messages; at most %d", n,
				       MAX_MESSAGES);
	job->turns = calloc(n, sizeof(*job->turns));
	job->msgs = calloc(n, sizeof(*job->msgs));
	if (!job->turns || !job->msgs)
		return pccx__fail(d, PCCX_ERR_NOMEM, "out of memory");
	for (i = 0; i < n; i++) {
		job->msgs[i] = pccx__json_at(msgs, i);
		rc = read_message(doc, job->msgs[i], i, &job->turns[i], d);
		if (rc)
			return rc;
	}
	job->n_turns = n;
	last = job->turns[n - 1].role;
	if (strcmp(last, "user") && strcmp(last, "tool"))
		return pccx__json_fail(doc, pccx__json_at(msgs, n - 1), d, PCCX_ERR_FORMAT,
				       "the last message must be the user's, or a tool's result: "
				       "the model replies to it");
	return 0;
}

/*
 * tools (an array, checked as its declarations are written), tool_choice ("auto" only) and
 * chat_template_kwargs ({"enable_thinking": bool}, as vLLM and llama.cpp's server take it).
 */
static int read_chat_options(const pccx_json_doc *doc, const pccx_json *root, struct job *job,
			     pccx_diag *d)
{
	const pccx_json *v = pccx__json_get(root, "tools");
	const pccx_json *kw = pccx__json_get(root, "chat_template_kwargs");
	const char *choice = NULL;
	size_t i;
	int rc;

	if (v && pccx__json_type_of(v) != PCCX_JSON_NULL) {
		if (pccx__json_type_of(v) != PCCX_JSON_ARRAY)
			return pccx__json_fail(doc, v, d, PCCX_ERR_FORMAT, "expected an array of "
					       "tools");
		job->tools = v;
	}
	rc = pccx__json_opt_string(doc, root, "tool_choice", &choice, NULL, d);
	if (rc)
		return rc;
	if (choice && strcmp(choice, "auto"))
		return pccx__json_fail(doc, pccx__json_get(root, "tool_choice"), d, PCCX_ERR_FORMAT,
				       "\"%.32s\": only \"auto\" is taken (the model chooses)",
				       choice);
	if (!kw || pccx__json_type_of(kw) == PCCX_JSON_NULL)
		return 0;
	if (pccx__json_type_of(kw) != PCCX_JSON_OBJECT)
		return pccx__json_fail(doc, kw, d, PCCX_ERR_FORMAT, "expected an object");
	for (i = 0; i < pccx__json_count(kw); i++) {
		const char *key = pccx__json_key(pccx__json_at(kw, i), NULL);

		if (strcmp(key, "enable_thinking"))
			return pccx__json_fail(doc, kw, d, PCCX_ERR_FORMAT, "unknown key \"%.64s\" "
					       "(enable_thinking is taken)", key);
	}
	return pccx__json_opt_bool(doc, kw, "enable_thinking", &job->thinking, d);
}

/* The conversation in the model family's chat format, with the tools and thinking asked for. */
static int render_prompt(const struct server *srv, struct job *job, pccx_diag *d)
{
	struct pccx_chat_opts o = {
		.add_generation_prompt = true,
		.thinking = job->thinking,
		.tools_doc = job->doc,
		.tools = job->tools,
		.msgs_doc = job->doc,
		.msgs = job->msgs,
	};

	return pccx__chat_render_opts(srv->fmt, job->turns, job->n_turns, &o, &job->prompt,
				      &job->prompt_len, d);
}

/*
 * Parse and check a request body into a new job. Returns 0, or the HTTP status of the refusal
 * with its message in d.
 */
static int read_request(struct server *srv, const char *body, size_t n, struct job **out,
			pccx_diag *d)
{
	pccx_json_limits lim = { srv->max_body, MAX_DEPTH };
	const pccx_json *root;
	const char *model;
	struct job *job;
	int64_t v;
	size_t i;
	int rc;

	*out = NULL;
	job = calloc(1, sizeof(*job));
	if (!job) {
		pccx__fail(d, PCCX_ERR_NOMEM, "out of memory");
		return 500;
	}
	job->refs = 1;
	job->sc = srv->a->g.sc;
	job->max_tokens = srv->max_tokens;
	rc = pccx__json_parse(body, n, "request", &lim, &job->doc, d);
	if (rc)
		goto fail;
	root = pccx__json_root(job->doc);
	if (pccx__json_type_of(root) != PCCX_JSON_OBJECT) {
		rc = pccx__fail(d, PCCX_ERR_FORMAT, "request: expected a JSON object, got %s",
				pccx__json_type_name(pccx__json_type_of(root)));
		goto fail;
	}
	for (i = 0; i < pccx__json_count(root); i++) {
		const char *key = pccx__json_key(pccx__json_at(root, i), NULL);
		size_t k;

		for (k = 0; known_fields[k] && strcmp(known_fields[k], key); k++)
			;
		if (!known_fields[k]) {
			rc = pccx__fail(d, PCCX_ERR_FORMAT, "request: unknown field \"%.64s\"", key);
			goto fail;
		}
	}
	model = NULL;
	rc = pccx__json_opt_string(job->doc, root, "model", &model, NULL, d);
	if (rc)
		goto fail;
	if (model && strcmp(model, srv->model_id)) {
		pccx__fail(d, PCCX_ERR_NOT_FOUND, "request: model \"%.64s\" is not served here "
			   "(\"%s\" is)", model, srv->model_id);
		job_put(job);
		return 404;
	}
	rc = read_messages(job->doc, root, job, d);
	if (!rc) {
		v = (int64_t)job->max_tokens;
		rc = pccx__json_opt_i64(job->doc, root, "max_tokens", 1, (int64_t)srv->max_tokens,
					&v, d);
		job->max_tokens = (size_t)v;
	}
	if (!rc)
		rc = opt_float(job->doc, root, "temperature", &job->sc.temperature, d);
	if (!rc)
		rc = opt_float(job->doc, root, "top_p", &job->sc.top_p, d);
	if (!rc)
		rc = opt_float(job->doc, root, "min_p", &job->sc.min_p, d);
	if (!rc)
		rc = opt_float(job->doc, root, "repetition_penalty", &job->sc.repetition_penalty, d);
	if (!rc) {
		v = job->sc.top_k;
		rc = pccx__json_opt_i64(job->doc, root, "top_k", INT32_MIN, INT32_MAX, &v, d);
		job->sc.top_k = (int32_t)v;
	}
	if (!rc) {
		v = (int64_t)job->sc.seed;
		rc = pccx__json_opt_i64(job->doc, root, "seed", 0, INT64_MAX, &v, d);
		job->sc.seed = (uint64_t)v;
	}
	if (!rc)
		rc = pccx__json_opt_bool(job->doc, root, "stream", &job->stream, d);
	if (!rc)
		rc = read_stops(job->doc, root, job, d);
	if (!rc)
		rc = read_chat_options(job->doc, root, job, d);
	if (!rc)
		rc = render_prompt(srv, job, d);
	if (!rc && pccx_sampler_config_check(&job->sc, d))
		rc = PCCX_ERR_INVALID;
	if (rc)
		goto fail;
	*out = job;
	return 0;
fail:
	job_put(job);
	return rc == PCCX_ERR_NOMEM ? 500 : 400;
}

/* ---- answering ------------------------------------------------------------------------- */

/* Per connection: the body as it comes, then the request and the events written so far. */
struct conn {
	struct server *srv;
	struct pccx_json_out body;
	bool too_big;
	struct job *job;
	int fd;
	struct pccx_json_out out;	/* events not yet handed to libmicrohttpd */
	size_t out_off;
	size_t sent;			/* bytes of the job's text sent as deltas */
	int phase;			/* 0: the role chunk is next, 1: text, 2: all written */
	/* a model whose output is read as events: its parser, and the calls streamed */
	pccx_output_parser *parser;
	struct pccx_json_out call;	/* one call's tool_calls entry */
	size_t n_calls;
};

static enum MHD_Result send_json(struct MHD_Connection *mc, unsigned status,
				 const struct pccx_json_out *j, const char *allow)
{
	static const char oom[] = "{\"error\":{\"message\":\"out of memory\","
				  "\"type\":\"server_error\"}}";
	struct MHD_Response *r;
	enum MHD_Result ret;

	if (j->oom)
		status = 500;
	r = MHD_create_response_from_buffer(j->oom ? sizeof(oom) - 1 : j->n,
					    j->oom ? (void *)oom : (void *)j->p,
					    MHD_RESPMEM_MUST_COPY);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	if (allow)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
	ret = MHD_queue_response(mc, status, r);
	MHD_destroy_response(r);
	return ret;
}

static void error_json(struct pccx_json_out *j, const char *type, const char *msg)
{
	PCCX_JSON_OUT_LIT(j, "{\"error\":{\"message\":");
	pccx__json_out_str(j, msg, strlen(msg));
	PCCX_JSON_OUT_LIT(j, ",\"type\":");
	pccx__json_out_str(j, type, strlen(type));
	PCCX_JSON_OUT_LIT(j, "}}");
}

static enum MHD_Result send_error(struct MHD_Connection *mc, unsigned status, const char *type,
				  const char *allow, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static enum MHD_Result send_error(struct MHD_Connection *mc, unsigned status, const char *type,
				  const char *allow, const char *fmt, ...)
{
	struct pccx_json_out j = { 0 };
	enum MHD_Result ret;
	char msg[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	error_json(&j, type, msg);
	ret = send_json(mc, status, &j, allow);
	pccx__json_out_free(&j);
	return ret;
}

/* Why the reply ended; a reply with tool calls that the model ended calls them. */
static const char *finish_reason(const struct job *job, size_t n_calls)
{
	if (job->end == END_NONE || job->end == END_STOP)
		return n_calls ? "tool_calls" : "stop";
	return "length";
}

/*
 * The reply of a model whose output is read as events (Gemma 4), in OpenAI's fields: the
 * answer's text as content, reasoning as reasoning_content, each call a tool_calls entry (a
 * call that does not parse stays in the content as generated: nothing is lost).
 */
struct reply {
	struct pccx_json_out content, reasoning;
	struct pccx_json_out *calls;	/* the tool_calls entries written so far */
	size_t n_calls;
	unsigned long long id;
	bool index;			/* a stream's entries have their index */
};

static void call_json(struct reply *r, const pccx_output_event *ev)
{
	if (r->n_calls && !r->index)
		PCCX_JSON_OUT_LIT(r->calls, ",");
	PCCX_JSON_OUT_LIT(r->calls, "{");
	if (r->index)
		pccx__json_out_printf(r->calls, "\"index\":%zu,", r->n_calls);
	pccx__json_out_printf(r->calls, "\"id\":\"call_%llu_%zu\",\"type\":\"function\","
			     "\"function\":{\"name\":", r->id, r->n_calls);
	pccx__json_out_str(r->calls, ev->name, strlen(ev->name));
	PCCX_JSON_OUT_LIT(r->calls, ",\"arguments\":");
	pccx__json_out_str(r->calls, ev->text, ev->len);
	PCCX_JSON_OUT_LIT(r->calls, "}}");
	r->n_calls++;
}

static int on_reply_event(void *user, const pccx_output_event *ev)
{
	struct reply *r = user;

	switch (ev->kind) {
	case PCCX_OUTPUT_THINKING:
		pccx__json_out_raw(&r->reasoning, ev->text, ev->len);
		break;
	case PCCX_OUTPUT_TOOL_CALL:
		call_json(r, ev);
		break;
	case PCCX_OUTPUT_TEXT:
	case PCCX_OUTPUT_BAD_TOOL_CALL:
		pccx__json_out_raw(&r->content, ev->text, ev->len);
		break;
	}
	return r->content.oom || r->reasoning.oom || r->calls->oom ? PCCX_ERR_NOMEM : 0;
}

static void reply_free(struct reply *r)
{
	pccx__json_out_free(&r->content);
	pccx__json_out_free(&r->reasoning);
}

/* The whole reply's message: content (null when only calls), reasoning_content, tool_calls. */
static void events_message(struct pccx_json_out *j, const struct job *job, size_t *n_calls)
{
	struct pccx_json_out calls = { 0 };
	struct reply r = { .calls = &calls, .id = job->id };
	pccx_output_parser *p = NULL;
	pccx_diag d = { 0 };

	if (pccx_output_parser_create(&p, on_reply_event, &r, &d) ||
	    pccx_output_parser_feed(p, job->text.p ? job->text.p : "", job->text.n, &d) ||
	    pccx_output_parser_finish(p, &d))
		j->oom = true;
	pccx_output_parser_free(p);
	PCCX_JSON_OUT_LIT(j, "\"content\":");
	if (!r.content.n && r.n_calls)
		PCCX_JSON_OUT_LIT(j, "null");
	else
		pccx__json_out_str(j, r.content.p ? r.content.p : "", r.content.n);
	if (r.reasoning.n) {
		PCCX_JSON_OUT_LIT(j, ",\"reasoning_content\":");
		pccx__json_out_str(j, r.reasoning.p, r.reasoning.n);
	}
	if (r.n_calls) {
		PCCX_JSON_OUT_LIT(j, ",\"tool_calls\":[");
		pccx__json_out_raw(j, calls.p, calls.n);
		PCCX_JSON_OUT_LIT(j, "]");
	}
	if (r.content.oom || r.reasoning.oom || calls.oom)
		j->oom = true;
	*n_calls = r.n_calls;
	reply_free(&r);
	pccx__json_out_free(&calls);
}

static void head_json(struct pccx_json_out *j, const struct server *srv, const struct job *job,
		      const char *object)
{
	pccx__json_out_printf(j, "{\"id\":\"chatcmpl-%llu\",\"object\":\"%s\",\"created\":%lld,"
			     "\"model\":", job->id, object, job->created);
	pccx__json_out_str(j, srv->model_id, strlen(srv->model_id));
}

static void usage_json(struct pccx_json_out *j, const struct job *job)
{
	pccx__json_out_printf(j, "\"usage\":{\"prompt_tokens\":%zu,\"completion_tokens\":%zu,"
			     "\"total_tokens\":%zu}", job->prompt_tokens, job->completion_tokens,
			     job->prompt_tokens + job->completion_tokens);
}

static void completion_json(struct pccx_json_out *j, const struct server *srv,
			    const struct job *job)
{
	size_t n_calls = 0;

	head_json(j, srv, job, "chat.completion");
	PCCX_JSON_OUT_LIT(j, ",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",");
	if (srv->events) {
		events_message(j, job, &n_calls);
	} else {
		PCCX_JSON_OUT_LIT(j, "\"content\":");
		pccx__json_out_str(j, job->text.p ? job->text.p : "", job->text.n);
	}
	pccx__json_out_printf(j, "},\"finish_reason\":\"%s\"}],", finish_reason(job, n_calls));
	usage_json(j, job);
	PCCX_JSON_OUT_LIT(j, "}");
}

/*
 * One event of a stream: a chunk whose delta has the role (kind 0), text (1), reasoning (3) or
 * tool_calls entries (4: `text` is the array's JSON), or the last one (2: n is the number of
 * tool calls made).
 */
static void chunk_event(struct pccx_json_out *j, const struct server *srv, const struct job *job,
			int kind, const char *text, size_t n)
{
	PCCX_JSON_OUT_LIT(j, "data: ");
	head_json(j, srv, job, "chat.completion.chunk");
	PCCX_JSON_OUT_LIT(j, ",\"choices\":[{\"index\":0,\"delta\":{");
	if (kind == 0) {
		PCCX_JSON_OUT_LIT(j, "\"role\":\"assistant\",\"content\":\"\"},"
				  "\"finish_reason\":null}]}");
	} else if (kind == 1 || kind == 3) {
		if (kind == 1)
			PCCX_JSON_OUT_LIT(j, "\"content\":");
		else
			PCCX_JSON_OUT_LIT(j, "\"reasoning_content\":");
		pccx__json_out_str(j, text, n);
		PCCX_JSON_OUT_LIT(j, "},\"finish_reason\":null}]}");
	} else if (kind == 4) {
		PCCX_JSON_OUT_LIT(j, "\"tool_calls\":[");
		pccx__json_out_raw(j, text, n);
		PCCX_JSON_OUT_LIT(j, "]},\"finish_reason\":null}]}");
	} else {
		pccx__json_out_printf(j, "},\"finish_reason\":\"%s\"}],", finish_reason(job, n));
		usage_json(j, job);
		PCCX_JSON_OUT_LIT(j, "}");
	}
	PCCX_JSON_OUT_LIT(j, "\n\n");
}

/* A stream's event: each becomes a chunk of its own as it comes. */
static int on_stream_event(void *user, const pccx_output_event *ev)
{
	struct conn *c = user;
	struct reply r = { .calls = &c->call, .n_calls = c->n_calls, .id = c->job->id,
			   .index = true };

	switch (ev->kind) {
	case PCCX_OUTPUT_THINKING:
		chunk_event(&c->out, c->srv, c->job, 3, ev->text, ev->len);
		break;
	case PCCX_OUTPUT_TOOL_CALL:
		c->call.n = 0;
		call_json(&r, ev);
		c->n_calls = r.n_calls;
		chunk_event(&c->out, c->srv, c->job, 4, c->call.p, c->call.n);
		break;
	case PCCX_OUTPUT_TEXT:
	case PCCX_OUTPUT_BAD_TOOL_CALL:
		chunk_event(&c->out, c->srv, c->job, 1, ev->text, ev->len);
		break;
	}
	return c->out.oom || c->call.oom ? PCCX_ERR_NOMEM : 0;
}

/* New text of a stream: as it is (other families), or through the parser into events. */
static void stream_text(struct conn *c, const char *text, size_t n, bool last)
{
	pccx_diag d = { 0 };

	if (!c->srv->events) {
		if (n)
			chunk_event(&c->out, c->srv, c->job, 1, text, n);
		return;
	}
	if (!c->parser && pccx_output_parser_create(&c->parser, on_stream_event, c, &d)) {
		c->out.oom = true;
		return;
	}
	if (pccx_output_parser_feed(c->parser, text, n, &d) ||
	    (last && pccx_output_parser_finish(c->parser, &d)))
		c->out.oom = true;
}

/* Whether the client has closed its side of the connection (or it broke). */
static bool client_gone(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLRDHUP };

	return fd >= 0 && poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

static void timed_wait(struct server *srv)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += WAIT_MS * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_cond_timedwait(&srv->changed, &srv->mu, &ts);
}

/* The event stream: called by libmicrohttpd whenever it can send more. */
static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct conn *c = cls;
	struct server *srv = c->srv;
	struct job *job = c->job;

	(void)pos;
	for (;;) {
		size_t avail;

		if (c->out_off < c->out.n) {
			size_t k = c->out.n - c->out_off < max ? c->out.n - c->out_off : max;

			memcpy(buf, c->out.p + c->out_off, k);
			c->out_off += k;
			return (ssize_t)k;
		}
		if (c->out.oom)
			return MHD_CONTENT_READER_END_WITH_ERROR;
		c->out.n = c->out_off = 0;
		if (c->phase == 2)
			return MHD_CONTENT_READER_END_OF_STREAM;
		pthread_mutex_lock(&srv->mu);
		if (c->phase == 0) {
			chunk_event(&c->out, srv, job, 0, NULL, 0);
			c->phase = 1;
			pthread_mutex_unlock(&srv->mu);
			continue;
		}
		/* text that no stop string can still take back, cut on a character boundary */
		avail = job->text.n;
		if (job->state != JOB_DONE) {
			avail = avail > job->hold ? avail - job->hold : 0;
			avail = pccx__utf8_whole(job->text.p, avail);
		}
		if (avail > c->sent) {
			stream_text(c, job->text.p + c->sent, avail - c->sent, false);
			c->sent = avail;
		} else if (job->state == JOB_DONE) {
			stream_text(c, "", 0, true);	/* what the parser held back */
			if (job->end == END_ERROR) {
				PCCX_JSON_OUT_LIT(&c->out, "data: ");
				error_json(&c->out, job->err_type, job->err);
				PCCX_JSON_OUT_LIT(&c->out, "\n\n");
			} else {
				chunk_event(&c->out, srv, job, 2, NULL, c->n_calls);
			}
			PCCX_JSON_OUT_LIT(&c->out, "data: [DONE]\n\n");
			c->phase = 2;
		} else {
			timed_wait(srv);
			if (client_gone(c->fd)) {
				job_cancel(srv, job);
				pthread_mutex_unlock(&srv->mu);
				return MHD_CONTENT_READER_END_WITH_ERROR;
			}
		}
		pthread_mutex_unlock(&srv->mu);
	}
}

static enum MHD_Result send_stream(struct MHD_Connection *mc, struct conn *c)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, stream_read, c, NULL);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
	ret = MHD_queue_response(mc, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ret;
}

/* POST /v1/chat/completions with its whole body: queue it, wait, answer. */
static enum MHD_Result chat_completion(struct server *srv, struct conn *c,
				       struct MHD_Connection *mc)
{
	const union MHD_ConnectionInfo *ci;
	struct pccx_json_out j = { 0 };
	struct job *job;
	pccx_diag d = { 0 };
	enum MHD_Result ret;
	int status;

	status = read_request(srv, c->body.p ? c->body.p : "", c->body.n, &job, &d);
	if (status) {
		pthread_mutex_lock(&srv->mu);
		srv->n_rejected++;
		pthread_mutex_unlock(&srv->mu);
		return send_error(mc, (unsigned)status, status == 500 ? "server_error" :
				  "invalid_request_error", NULL, "%s", d.msg);
	}
	pccx__json_out_free(&c->body);
	ci = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);
	c->fd = ci ? ci->connect_fd : -1;

	pthread_mutex_lock(&srv->mu);
	if (srv->stopping || ((srv->running || srv->n_waiting) && srv->n_waiting >= srv->queue)) {
		bool stopping = srv->stopping;

		srv->n_rejected++;
		job_put(job);
		pthread_mutex_unlock(&srv->mu);
		if (stopping)
			return send_error(mc, 503, "unavailable", NULL, "the server is stopping");
		return send_error(mc, 503, "overloaded", NULL, "the queue is full (--queue %zu): "
				  "try again later", srv->queue);
	}
	job->id = ++srv->next_id;
	job->created = (long long)time(NULL);
	job->deadline = pccx_cli_now() + srv->timeout;
	job->refs = 2;
	job->state = JOB_QUEUED;
	if (srv->tail)
		srv->tail->next = job;
	else
		srv->head = job;
	srv->tail = job;
	srv->n_waiting++;
	c->job = job;
	pthread_cond_signal(&srv->work);

	/* wait for the reply (a stream: for its start) */
	while (job->state != JOB_DONE && !(job->stream && job->started)) {
		if (job->state == JOB_QUEUED && (srv->stopping || pccx_cli_now() >= job->deadline)) {
			if (srv->stopping) {
				job_set_error(job, 503, "unavailable", "the server is stopping");
				srv->n_rejected++;
			} else {
				job_set_error(job, 504, "timeout", "the request waited %.0f s for the "
					      "device (--timeout) and was dropped", srv->timeout);
				srv->n_timed_out++;
			}
			queue_remove(srv, job);
			break;
		}
		timed_wait(srv);
		if (client_gone(c->fd)) {
			job_cancel(srv, job);
			pthread_mutex_unlock(&srv->mu);
			return MHD_NO;
		}
	}
	if (job->end == END_ERROR && !job->started) {
		error_json(&j, job->err_type, job->err);
		status = job->http_status;
	} else if (!job->stream && job->end == END_ERROR) {
		error_json(&j, job->err_type, job->err);
		status = job->http_status;
	} else if (!job->stream) {
		completion_json(&j, srv, job);
		status = 200;
	} else {
		pthread_mutex_unlock(&srv->mu);
		/* the wait may have been long: count the connection's idle time from now */
		MHD_set_connection_option(mc, MHD_CONNECTION_OPTION_TIMEOUT, 60u);
		return send_stream(mc, c);
	}
	pthread_mutex_unlock(&srv->mu);
	MHD_set_connection_option(mc, MHD_CONNECTION_OPTION_TIMEOUT, 60u);
	ret = send_json(mc, (unsigned)status, &j, NULL);
	pccx__json_out_free(&j);
	return ret;
}

static enum MHD_Result health(struct server *srv, struct MHD_Connection *mc)
{
	struct pccx_json_out j = { 0 };
	enum MHD_Result ret;

	pthread_mutex_lock(&srv->mu);
	PCCX_JSON_OUT_LIT(&j, "{\"status\":\"ok\",\"model\":");
	pccx__json_out_str(&j, srv->model_id, strlen(srv->model_id));
	PCCX_JSON_OUT_LIT(&j, ",\"device\":{\"backend\":");
	pccx__json_out_str(&j, srv->info.backend, strnlen(srv->info.backend,
							  sizeof(srv->info.backend)));
	pccx__json_out_printf(&j, ",\"hw_version\":\"0x%08x\",\"state\":\"%s\",\"last_error\":",
			     srv->info.hw_version, srv->running ? "busy" : "idle");
	if (srv->last_error[0])
		pccx__json_out_str(&j, srv->last_error, strlen(srv->last_error));
	else
		PCCX_JSON_OUT_LIT(&j, "null");
	pccx__json_out_printf(&j, "},\"queue\":{\"running\":%d,\"waiting\":%zu,\"limit\":%zu},"
			     "\"requests\":{\"completed\":%llu,\"rejected\":%llu,\"timed_out\":%llu,"
			     "\"cancelled\":%llu,\"failed\":%llu}}",
			     srv->running ? 1 : 0, srv->n_waiting, srv->queue, srv->n_ok,
			     srv->n_rejected, srv->n_timed_out, srv->n_cancelled, srv->n_failed);
	pthread_mutex_unlock(&srv->mu);
	ret = send_json(mc, 200, &j, NULL);
	pccx__json_out_free(&j);
	return ret;
}

static enum MHD_Result models(struct server *srv, struct MHD_Connection *mc)
{
	struct pccx_json_out j = { 0 };
	enum MHD_Result ret;

	PCCX_JSON_OUT_LIT(&j, "{\"object\":\"list\",\"data\":[{\"id\":");
	pccx__json_out_str(&j, srv->model_id, strlen(srv->model_id));
	pccx__json_out_printf(&j, ",\"object\":\"model\",\"created\":%lld,\"owned_by\":\"pccx\"}]}",
			     srv->started);
	ret = send_json(mc, 200, &j, NULL);
	pccx__json_out_free(&j);
	return ret;
}

static const struct route {
	const char *path, *method;
	int id;
} routes[] = {
	{ "/v1/chat/completions", "POST", 0 },
	{ "/v1/models", "GET", 1 },
	{ "/health", "GET", 2 },
};

static enum MHD_Result on_request(void *cls, struct MHD_Connection *mc, const char *url,
				  const char *method, const char *version,
				  const char *upload_data, size_t *upload_data_size, void **con_cls)
{
	struct server *srv = cls;
	struct conn *c = *con_cls;
	size_t i;

	(void)version;
	if (!c) {
		const char *cl;

		for (i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
			if (!strcmp(url, routes[i].path))
				break;
		if (i == sizeof(routes) / sizeof(routes[0]))
			return send_error(mc, 404, "not_found", NULL, "no such path: %.200s (the "
					  "paths are /v1/chat/completions, /v1/models, /health)",
					  url);
		if (strcmp(method, routes[i].method))
			return send_error(mc, 405, "method_not_allowed", routes[i].method,
					  "%.32s %.200s: use %s", method, url, routes[i].method);
		if (routes[i].id == 1)
			return models(srv, mc);
		if (routes[i].id == 2)
			return health(srv, mc);
		cl = MHD_lookup_connection_value(mc, MHD_HEADER_KIND,
						 MHD_HTTP_HEADER_CONTENT_LENGTH);
		if (cl && strtoull(cl, NULL, 10) > srv->max_body)
			return send_error(mc, 413, "invalid_request_error", NULL, "the body is %.24s "
					  "bytes; this server takes at most %zu (--max-body)", cl,
					  srv->max_body);
		c = calloc(1, sizeof(*c));
		if (!c)
			return MHD_NO;
		c->srv = srv;
		c->fd = -1;
		*con_cls = c;
		return MHD_YES;
	}
	if (*upload_data_size) {
		if (!c->too_big && c->body.n + *upload_data_size > srv->max_body) {
			c->too_big = true;
			pccx__json_out_free(&c->body);
		}
		if (!c->too_big)
			pccx__json_out_raw(&c->body, upload_data, *upload_data_size);
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (c->too_big)
		return send_error(mc, 413, "invalid_request_error", NULL, "the body is more than "
				  "%zu bytes (--max-body)", srv->max_body);
	if (c->body.oom)
		return send_error(mc, 500, "server_error", NULL, "out of memory");
	return chat_completion(srv, c, mc);
}

static void on_completed(void *cls, struct MHD_Connection *mc, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct server *srv = cls;
	struct conn *c = *con_cls;

	(void)mc;
	(void)toe;
	if (!c)
		return;
	if (c->job) {
		pthread_mutex_lock(&srv->mu);
		job_cancel(srv, c->job);
		job_put(c->job);
		pthread_mutex_unlock(&srv->mu);
	}
	pccx__json_out_free(&c->body);
	pccx__json_out_free(&c->out);
	pccx__json_out_free(&c->call);
	pccx_output_parser_free(c->parser);
	free(c);
	*con_cls = NULL;
}

/* ---- the command ----------------------------------------------------------------------- */

/* libmicrohttpd's messages (a connection it closed, a socket error), on stderr. */
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	(void)cls;
	fputs("pccx serve: http: ", stderr);
	vfprintf(stderr, fmt, ap);
}

static void model_name(struct server *srv)
{
	const struct pccx_model_opts *m = &srv->a->g.mopt;
	const char *p = m->path, *slash;
	size_t len;

	if (!p) {
		snprintf(srv->model_id, sizeof(srv->model_id), "%s", m->synth_config);
		return;
	}
	len = strlen(p);
	while (len > 1 && p[len - 1] == '/')
		len--;
	for (slash = p + len; slash > p && slash[-1] != '/'; slash--)
		;
	snprintf(srv->model_id, sizeof(srv->model_id), "%.*s", (int)(p + len - slash), slash);
}

/* The listening address: ADDR:port as getaddrinfo finds it (the first answer). */
static int resolve(const char *host, uint16_t port, struct sockaddr_storage *sa, bool *v6)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE };
	struct addrinfo *res;
	char service[8];
	int rc;

	snprintf(service, sizeof(service), "%u", port);
	rc = getaddrinfo(host, service, &hints, &res);
	if (rc) {
		fprintf(stderr, "pccx serve: --host %s: %s\n", host, gai_strerror(rc));
		return -1;
	}
	memcpy(sa, res->ai_addr, res->ai_addrlen);
	*v6 = res->ai_family == AF_INET6;
	freeaddrinfo(res);
	return 0;
}

int pccx_cmd_serve(int argc, char **argv)
{
	struct serve_args a = { .host = "127.0.0.1", .port = 8080, .max_body = 1 << 20,
				.max_tokens = 512, .timeout = 300, .queue = 16 };
	struct server srv;
	struct sockaddr_storage sa;
	struct MHD_Daemon *daemon;
	const union MHD_DaemonInfo *di;
	pthread_t worker_thread;
	sigset_t sigs;
	pccx_diag d = { 0 };
	bool v6 = false;
	int rc, sig;

	pccx_cli_gen_defaults(&a.g);
	rc = pccx_opt_parse(&serve_cmd, argc, argv, &a);
	if (rc == PCCX_OPT_RUN)
		rc = pccx_cli_gen_check(&serve_cmd, &a.g);
	if (rc != PCCX_OPT_RUN)
		return rc;
	if (resolve(a.host, (uint16_t)a.port, &sa, &v6))
		return 2;

	memset(&srv, 0, sizeof(srv));
	srv.a = &a;
	srv.max_body = (size_t)a.max_body;
	srv.max_tokens = (size_t)a.max_tokens;
	srv.queue = (size_t)a.queue;
	srv.timeout = (double)a.timeout;
	srv.started = (long long)time(NULL);
	model_name(&srv);
	rc = pccx_cli_gen_open(&a.g, &srv.cs, &d);
	if (!rc)
		rc = pccx_device_info(srv.cs.dev, &srv.info);
	if (rc) {
		pccx_cli_session_close(&srv.cs);
		return pccx_cli_fail(rc, &d);
	}
	/* sessions are made per request; the one opened with the model is not used */
	pccx_session_free(srv.cs.s);
	srv.cs.s = NULL;
	srv.has_tok = false;
	{
		pccx_session *probe = NULL;

		/* the tokenizer and the ids that end a turn, found once */
		rc = pccx_session_create(srv.cs.model, &a.g.sopt, &probe, &d);
		if (rc) {
			pccx_cli_session_close(&srv.cs);
			return pccx_cli_fail(rc, &d);
		}
		srv.tk = pccx_session_tokenizer(probe);
		srv.has_tok = srv.tk != NULL;
		srv.fmt = pccx__session_chat_format(probe);
		srv.events = srv.has_tok && srv.fmt && srv.fmt->output_events;
		srv.n_stop_ids = pccx__chat_stop_ids(pccx__session_chat_format(probe),
						     pccx_session_tokenizer(probe), srv.stop_ids);
		pccx_session_free(probe);
	}

	/* the signals that stop the server are taken by sigwait below, in no other thread */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);

	pthread_mutex_init(&srv.mu, NULL);
	pthread_cond_init(&srv.work, NULL);
	pthread_cond_init(&srv.changed, NULL);
	if (pthread_create(&worker_thread, NULL, worker, &srv)) {
		fprintf(stderr, "pccx serve: cannot start the worker thread\n");
		pccx_cli_session_close(&srv.cs);
		return 1;
	}
	daemon = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
				  MHD_USE_ERROR_LOG | (v6 ? MHD_USE_IPv6 : 0),
				  (uint16_t)a.port, NULL, NULL, on_request, &srv,
				  MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
				  MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
				  MHD_OPTION_CONNECTION_LIMIT, (unsigned)(a.queue + 32),
				  MHD_OPTION_CONNECTION_TIMEOUT, 60u,
				  MHD_OPTION_NOTIFY_COMPLETED, on_completed, &srv,
				  MHD_OPTION_END);
	if (!daemon) {
		fprintf(stderr, "pccx serve: cannot listen on %s port %llu\n", a.host,
			(unsigned long long)a.port);
		rc = 1;
	} else {
		di = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
		printf("pccx serve: %s on http://%s%s%s:%u/ (model \"%s\", queue %zu, "
		       "timeout %.0f s)\n", srv.info.backend, v6 ? "[" : "", a.host, v6 ? "]" : "",
		       di ? di->port : (unsigned)a.port, srv.model_id, srv.queue, srv.timeout);
		fflush(stdout);
		sig = 0;
		sigwait(&sigs, &sig);
		fprintf(stderr, "pccx serve: %s, stopping\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
	}

	pthread_mutex_lock(&srv.mu);
	srv.stopping = true;
	pthread_cond_broadcast(&srv.work);
	pthread_cond_broadcast(&srv.changed);
	pthread_mutex_unlock(&srv.mu);
	if (daemon)
		MHD_stop_daemon(daemon);
	pthread_join(worker_thread, NULL);
	/* jobs still queued have had their connections answered and closed */
	pthread_mutex_lock(&srv.mu);
	while (srv.head)
		queue_remove(&srv, srv.head);
	pthread_mutex_unlock(&srv.mu);
	pthread_cond_destroy(&srv.changed);
	pthread_cond_destroy(&srv.work);
	pthread_mutex_destroy(&srv.mu);
	pccx_cli_session_close(&srv.cs);
	return rc;
}
