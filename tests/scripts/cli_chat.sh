#!/usr/bin/env bash
# pccx chat at a terminal (a pseudo-terminal driven by lib/pty_run.py) and on a pipe, with the
# tiny-vocab model, the Gemma tokenizer and greedy sampling:
#   - two turns: the first reply is what `pccx run --chat` prints for the same prompt, the second
#     turn prefills only its own tokens (its stats line says how many);
#   - Ctrl-C during a long reply returns to the prompt and the next turn works; /reset starts
#     again (the first reply comes again); Ctrl-C at the prompt ends with status 0;
#   - /save, then /load in a new process: the next reply is the same;
#   - refusals that keep the conversation: a malformed file, another model's file, a directory
#     or FIFO given to /save or /load, a full context; EOF (Ctrl-D, a pipe's end) ends with 0;
#   - every model family (the tiny configs of Gemma 3n, 1, 2, 3 and 4): `run --chat` without a
#     tokenizer, `chat` refused without one; with a 512-id tokenizer, what `run --chat` prefills
#     and the turns `chat` saves are the ids of the turn written out from the chat templates.
# Nothing waits on time: every step waits for a marker (prompt, stats line, message).
#
#   bash tests/scripts/cli_chat.sh BUILD
set -u
. "$(dirname "$0")/lib/cli.sh"
cli_init cli_chat "$@"

tok=${PCCX_TOKENIZER_JSON:-$(scripts/fetch-tokenizer.sh 2>/dev/null)}
[ -n "$tok" ] && [ -f "$tok" ] || { echo "cli_chat: no tokenizer.json (scripts/fetch-tokenizer.sh)"; exit 1; }
model=(--config tiny-vocab --tokenizer "$tok")
chat=("$pccx" chat "${model[@]}" --temp 0 -n 16)
harness=$top/tests/scripts/lib/pty_run.py

# session NAME CMD...: run CMD at a terminal with the steps on stdin; its files in $T/NAME/
session() {
  local name=$1; shift
  checks=$((checks + 1))
  mkdir -p "$T/$name"
  python3 "$harness" "$T/$name" -- "$@" >"$T/$name/harness" 2>&1 ||
    fail "session $name: $(cat "$T/$name/harness")"
}

# crlf FILE: the terminal's CR LF as LF
crlf() { sed 's/\r$//' "$1"; }

# same A B WHAT: files A and B hold the same bytes
same() {
  checks=$((checks + 1))
  cmp -s "$1" "$2" || fail "$3: '$(head -c 200 "$1")' differs from '$(head -c 200 "$2")'"
}

# prompt_tokens FILE: N of the "N prompt tokens" of the stats line in FILE
prompt_tokens() { sed -n 's/.* \([0-9][0-9]*\) prompt tokens.*/\1/p' "$1" | head -n 1; }

# --- what pccx run prints: the first reply, and how many tokens each prompt is with --chat -----
want_rc 0 "$pccx" run "${model[@]}" --temp 0 -n 16 --chat -p "Hello there"
printf '%s' "$(cat "$T/out")" >"$T/run1"      # the reply without run's closing newline
run1_prompt=$(prompt_tokens "$T/err")
want_rc 0 "$pccx" run "${model[@]}" --temp 0 -n 1 --chat -p "How are you?"
run2_prompt=$(prompt_tokens "$T/err")

# --- two turns, /save, a third turn, Ctrl-D -----------------------------------------------------
session two "${chat[@]}" <<EOF
expect "> "
send "Hello there\r"
expect "Hello there\r\n"
capture reply1 "\r\nstats: "
capture stats1 "\r\n"
expect "> "
send "How are you?\r"
expect "How are you?\r\n"
capture reply2 "\r\nstats: "
capture stats2 "\r\n"
expect "> "
send "/save $T/conv.json\r"
expect "(saved 4 turns"
expect "> "
send "Tell me more\r"
expect "Tell me more\r\n"
capture reply3 "\r\nstats: "
expect "> "
send "\x04"
exit 0
EOF
crlf "$T/two/reply1" >"$T/reply1"
same "$T/reply1" "$T/run1" "the first reply against pccx run --chat"
checks=$((checks + 1))
[ -s "$T/reply1" ] || fail "the first reply is empty"
checks=$((checks + 1))
[ "$(prompt_tokens "$T/two/stats1")" = "$run1_prompt" ] ||
  fail "turn 1 prefilled '$(cat "$T/two/stats1")', pccx run's prompt is $run1_prompt tokens"
# the second turn is its own tokens: the same text as a first turn less the BOS
checks=$((checks + 1))
[ "$(prompt_tokens "$T/two/stats2")" = "$((run2_prompt - 1))" ] ||
  fail "turn 2 prefilled '$(cat "$T/two/stats2")', its own tokens are $((run2_prompt - 1))"
has "$T/conv.json" '"format": "pccx-chat"'
has "$T/conv.json" '"role": "model"'
has "$T/conv.json" '"temperature": 0'

# --- /load in a new process: the same next reply ----------------------------------------------
session load "${chat[@]}" <<EOF
expect "> "
send "/load $T/conv.json\r"
expect "(loaded 4 turns"
expect "> "
send "Tell me more\r"
expect "Tell me more\r\n"
capture reply3 "\r\nstats: "
expect "> "
send "/quit\r"
exit 0
EOF
same "$T/load/reply3" "$T/two/reply3" "the reply after /load"

# --- Ctrl-C during a long reply, the next turn, /reset, Ctrl-C at the prompt --------------------
# The greedy reply to this first turn has no end-of-turn token in its first 1000 tokens (the
# model and sampler are bit-exact), so it is still running when the interrupt comes (the
# harness stops the command, types ^C, continues it); a context of 200 positions keeps the
# reply to the next turn, which runs to its end, short.
want_rc 0 "$pccx" run "${model[@]}" --temp 0 -n 1 --chat -p "Thanks"
thanks_prompt=$(prompt_tokens "$T/err")
session intr "$pccx" chat "${model[@]}" --temp 0 -n 1000 --max-ctx 200 <<EOF
expect "> "
send "Tell me a long story\r"
expect "Tell me a long story\r\n"
output
intr
expect "(reply stopped"
capture stats_stopped "\r\n> "
send "Thanks\r"
expect "Thanks\r\n"
expect "stats: "
capture stats_after "\r\n"
expect "> "
send "/reset\r"
expect "(a new conversation)"
expect "> "
send "Hello there\r"
expect "Hello there\r\n"
capture reply_reset "\r\nstats: "
capture stats_reset "\r\n"
expect "> "
intr
exit 0
EOF
has "$T/intr/stats_stopped" "stats: "
checks=$((checks + 1))
n=$(sed -n 's/.*stats: \([0-9][0-9]*\) tokens generated.*/\1/p' "$T/intr/stats_stopped")
[ -n "$n" ] && [ "$n" -lt 184 ] || fail "the stopped reply: '$(cat "$T/intr/stats_stopped")'"
checks=$((checks + 1))
[ "$(prompt_tokens "$T/intr/stats_after")" = "$((thanks_prompt - 1))" ] ||
  fail "the turn after the stopped reply prefilled '$(cat "$T/intr/stats_after")', its own" \
    "tokens are $((thanks_prompt - 1))"
# after /reset the turn starts a conversation again: the BOS is back, and the reply is the
# first one's (-n 1000 against -n 16: its first 16 tokens are pccx run's reply)
checks=$((checks + 1))
[ "$(prompt_tokens "$T/intr/stats_reset")" = "$run1_prompt" ] ||
  fail "after /reset the turn prefilled '$(cat "$T/intr/stats_reset")', not $run1_prompt"
checks=$((checks + 1))
crlf "$T/intr/reply_reset" | head -c "$(wc -c <"$T/run1")" | cmp -s - "$T/run1" ||
  fail "the reply after /reset does not start with pccx run's: $(head -c 200 "$T/intr/reply_reset")"

# --- refusals: nothing is lost --------------------------------------------------------------------
mkfifo "$T/fifo"
mkdir "$T/dir"
printf '{"format": "pccx-chat", "version": 1, "model": ' >"$T/bad.json"
"$pccx" chat --config tiny-vocab --seed 2 --tokenizer "$tok" --temp 0 -n 4 >/dev/null 2>&1 <<EOF
Hi
/save $T/other.json
EOF
session refuse "${chat[@]}" <<EOF
expect "> "
send "Hello there\r"
expect "stats: "
expect "> "
send "/load $T/bad.json\r"
capture load_bad "\r\n> "
send "/load $T/other.json\r"
capture load_other "\r\n> "
send "/save $T/dir\r"
capture save_dir "\r\n> "
send "/save $T/fifo\r"
capture save_fifo "\r\n> "
send "/load $T/fifo\r"
capture load_fifo "\r\n> "
send "/load $T/missing.json\r"
capture load_missing "\r\n> "
send "/save $T/nodir/x.json\r"
capture save_nodir "\r\n> "
send "/save\r"
capture save_noarg "\r\n> "
send "/frobnicate\r"
capture unknown "\r\n> "
send "/save $T/kept.json\r"
expect "(saved 2 turns"
expect "> "
send "\x04"
exit 0
EOF
has "$T/refuse/load_bad" "/load: $T/bad.json: "
has "$T/refuse/load_bad" "(the conversation is kept)"
has "$T/refuse/load_other" "saved with another model (synthetic tiny-vocab, weight seed 2"
has "$T/refuse/save_dir" "$T/dir: not a regular file (directory)"
has "$T/refuse/save_fifo" "$T/fifo: not a regular file (fifo)"
has "$T/refuse/load_fifo" "$T/fifo: not a regular file (fifo)"
has "$T/refuse/load_missing" "$T/missing.json: cannot open"
has "$T/refuse/save_nodir" "nothing was written"
has "$T/refuse/save_noarg" "/save needs a file"
has "$T/refuse/unknown" "unknown command '/frobnicate'"
checks=$((checks + 1))
[ -p "$T/fifo" ] && [ -d "$T/dir" ] || fail "/save replaced the FIFO or the directory"
# the first turn is still there: the saved conversation is the first one's
checks=$((checks + 1))
grep -m 1 -F '"role": "model"' "$T/conv.json" >"$T/a" &&
  grep -m 1 -F '"role": "model"' "$T/kept.json" >"$T/b" && cmp -s "$T/a" "$T/b" ||
  fail "the conversation after the refusals is not the first turn's"

# --- a pipe: a full context, then the end of the input ------------------------------------------
want_rc 0 "${chat[@]}" --max-ctx 40 <<EOF
Hello there
How are you? Tell me everything about the weather today.
EOF
has "$T/err" "the context is full"
has "$T/err" "/reset starts a new conversation"
checks=$((checks + 1))
[ "$(grep -c '^stats: ' "$T/err")" = 1 ] || fail "a turn that does not fit was run: $(cat "$T/err")"

# --- every family: Gemma 3n (tiny), Gemma 1, 2, 3 and 4 (tiny-gemma, ..., tiny-gemma4) ----------
# A tokenizer of the tiny models' 512 ids: Gemma's and Gemma 4's turn tokens, Gemma 4's thinking
# switch and tool pieces, byte fallback for the text ("h" is <0x68>, id 4 + 0x68), and fillers
# up to 512.
python3 - "$T/tok512.json" <<'PY'
import json, sys
vocab = {"<pad>": 0, "<eos>": 1, "<bos>": 2, "<unk>": 3}
vocab.update({"<0x%02X>" % b: 4 + b for b in range(256)})
vocab.update({"\u2581": 260, "<start_of_turn>": 261, "<end_of_turn>": 262, "<|turn>": 263,
              "<turn|>": 264, "<|think|>": 265, "<|tool>": 266, "<tool|>": 267, "<|\"|>": 268})
vocab.update({"w%d" % i: i for i in range(269, 512)})
special = ["<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "<end_of_turn>", "<|turn>",
           "<turn|>", "<|think|>", "<|tool>", "<tool|>", "<|\"|>"]
space = {"String": "\u2581"}
json.dump({"version": "1.0",
           "added_tokens": [{"id": vocab[t], "content": t, "special": True} for t in special],
           "normalizer": {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"},
           "pre_tokenizer": None, "post_processor": None,
           "decoder": {"type": "Sequence", "decoders": [
               {"type": "Replace", "pattern": space, "content": " "},
               {"type": "ByteFallback"}, {"type": "Fuse"}]},
           "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "byte_fallback": True,
                     "fuse_unk": True, "vocab": vocab, "merges": []}}, open(sys.argv[1], "w"))
PY
# ids_of TEXT: its ids (special tokens matched, no BOS added)
ids_of() { "$pccx" tokenize --tokenizer "$T/tok512.json" --no-bos "$1"; }
# saved_ids FILE I: the tokens of turn I of a saved conversation, space-separated
saved_ids() {
  python3 -c 'import json, sys
print(" ".join(map(str, json.load(open(sys.argv[1]))["turns"][int(sys.argv[2])]["tokens"])))' \
    "$1" "$2"
}
# The Gemma chat templates (tokenizer_config.json of Gemma 1, 2, 3 and 3n) write a first user
# turn, its content trimmed, and the generation prompt so; a reply ends with the end of turn.
# Gemma 4's writes them with its own turn tokens.
for c in tiny tiny-gemma tiny-gemma2 tiny-gemma3 tiny-gemma4; do
  case $c in
    tiny-gemma4)
      user_turn=$'<bos><|turn>user\nhi<turn|>\n<|turn>model\n'
      end_turn=$'<turn|>\n' ;;
    *)
      user_turn=$'<bos><start_of_turn>user\nhi<end_of_turn>\n<start_of_turn>model\n'
      end_turn=$'<end_of_turn>\n' ;;
  esac
  # no tokenizer: the prompt is one id per byte and --chat has no format to write it in
  want_rc 0 "$pccx" run --config "$c" --chat -p hi -n 8
  has "$T/err" "prompt: 2 tokens (no tokenizer: one per byte, without the chat format)"
  has "$T/err" "stats: 8 tokens generated"
  checks=$((checks + 1))
  [ "$(grep -o '\[[0-9]*\]' "$T/out" | wc -l)" = 8 ] ||
    fail "$c: run --chat printed '$(cat "$T/out")'"
  want_fail "$pccx" chat --config "$c" </dev/null
  has "$T/err" "needs a tokenizer"
  # with a tokenizer: run --chat prefills the template's user turn; the turns chat saves are
  # the template's ids
  want_rc 0 "$pccx" run --config "$c" --tokenizer "$T/tok512.json" --chat -p " hi " -n 4 --temp 0
  checks=$((checks + 1))
  [ "$(prompt_tokens "$T/err")" = "$(ids_of "$user_turn" | wc -w)" ] ||
    fail "$c: run --chat: '$(grep prompt "$T/err")'; the template's turn is" \
      "$(ids_of "$user_turn" | wc -w) tokens"
  want_rc 0 "$pccx" chat --config "$c" --tokenizer "$T/tok512.json" --temp 0 -n 4 <<EOF
  hi
/save $T/$c.json
EOF
  has "$T/err" "(saved 2 turns"
  checks=$((checks + 1))
  [ "$(saved_ids "$T/$c.json" 0)" = "$(ids_of "$user_turn")" ] ||
    fail "$c: the user turn is '$(saved_ids "$T/$c.json" 0)'," \
      "the template's '$(ids_of "$user_turn")'"
  checks=$((checks + 1))
  case " $(saved_ids "$T/$c.json" 1)" in
    *" $(ids_of "$end_turn")") ;;
    *) fail "$c: the reply '$(saved_ids "$T/$c.json" 1)' does not end with" \
         "'$(ids_of "$end_turn")'" ;;
  esac
done

# --- the thinking switch: Gemma 4's template writes <|think|> atop a system turn ---------------
think_turn=$'<bos><|turn>system\n<|think|>\n<turn|>\n<|turn>user\nhi<turn|>\n<|turn>model\n'
want_rc 0 "$pccx" run --config tiny-gemma4 --tokenizer "$T/tok512.json" --chat --think -p " hi " \
  -n 4 --temp 0
checks=$((checks + 1))
[ "$(prompt_tokens "$T/err")" = "$(ids_of "$think_turn" | wc -w)" ] ||
  fail "run --chat --think: '$(grep prompt "$T/err")'; the template's turn is" \
    "$(ids_of "$think_turn" | wc -w) tokens"
want_rc 0 "$pccx" chat --config tiny-gemma4 --tokenizer "$T/tok512.json" --think --temp 0 -n 4 <<EOF
hi
again
/save $T/think.json
EOF
checks=$((checks + 1))
[ "$(saved_ids "$T/think.json" 0)" = "$(ids_of "$think_turn")" ] ||
  fail "chat --think: the first turn is '$(saved_ids "$T/think.json" 0)'," \
    "the template's '$(ids_of "$think_turn")'"
# only the first turn carries the system turn
checks=$((checks + 1))
[ "$(saved_ids "$T/think.json" 2)" = "$(ids_of $'<|turn>user\nagain<turn|>\n<|turn>model\n')" ] ||
  fail "chat --think: the second turn is '$(saved_ids "$T/think.json" 2)'"
for c in tiny tiny-gemma3; do
  want_fail "$pccx" run --config "$c" --tokenizer "$T/tok512.json" --chat --think -p hi -n 1
  has "$T/err" "--think: the gemma chat format has no thinking switch"
  want_fail "$pccx" chat --config "$c" --tokenizer "$T/tok512.json" --think </dev/null
  has "$T/err" "--think: the gemma chat format has no thinking switch"
done
want_fail "$pccx" run --config tiny-gemma4 --tokenizer "$T/tok512.json" --think -p hi -n 1
has "$T/err" "--think asks for the chat format: give --chat too"
want_fail "$pccx" run --config tiny-gemma4 --chat --think -p hi -n 1
has "$T/err" "--think: the model has no tokenizer"

# --- a bad option ---------------------------------------------------------------------------------
want_rc 2 "$pccx" chat </dev/null
want_rc 2 "$pccx" chat "${model[@]}" -n 0 </dev/null

cli_done
