// Deterministic generator of tests/data/tokenizer-corpus.txt.
//
// Usage: node tests/tokenizer/gen-corpus.mjs > tests/data/tokenizer-corpus.txt
//
// Format of the corpus: UTF-8, one entry per line, each entry a JSON string literal (RFC 8259),
// so newlines, tabs, carriage returns and control characters inside an entry are written as
// \n, \t, \r, \u0000 ...; lines that do not start with '"' are comments. The first part is
// tests/tokenizer/handwritten.txt verbatim, the rest is generated here from a fixed seed.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));

// xorshift32: the same sequence on every platform and Node version.
let state = 0x9e3779b9;
function rnd() {
	state ^= state << 13;
	state >>>= 0;
	state ^= state >>> 17;
	state ^= state << 5;
	state >>>= 0;
	return state / 4294967296;
}
const int = (n) => Math.floor(rnd() * n);
const pick = (a) => a[int(a.length)];
const rep = (n, f) => Array.from({ length: n }, f);

const words = {
	en: "the of and to in is that it for on with as was at by be this from are or an have not but they which one you were her all she there would their we him been has when who will more no if out so said what up its about into than them can only other new some could time these two may then do first any my now such like our over man me even most made after also did many before must through back years where much your way well down should because each just those people how too little state good very make world still own see men work long get here between both life being under never day same another know while last might us great old year off come since against go came right used take three".split(" "),
	fr: "le la les un une des et est dans pour pas que qui sur avec ce il elle nous vous être avoir fait très été où déjà même après français première théâtre garçon noël forêt".split(" "),
	de: "der die das und ist nicht ein eine zu mit auf für von Mädchen Bäume schön über Straße größer Fußgänger Übung Äpfel Öl".split(" "),
	es: "el la los las de que y en un una por con para es señor niño año mañana corazón pingüino acción también ¿qué? ¡hola!".split(" "),
	ru: "и в не на я быть он с что а по это она этот к но они мы как из у который то за свой что весь год от так о для ты же все тот мочь вы человек такой его сказать только или ещё бы себя один как уже до время если сам когда другой вот говорить наш мой знать стать при чтобы дело жизнь кто первый очень два день её новый рука даже во со раз где там под можно ну какой после их работа без самый потом надо хотеть ли слово идти большой должен место иметь ничто".split(" "),
	el: "και το η ο να του σε με για δεν από τα την που στο είναι θα ένα τον της μια αλλά πολύ έχει ότι όταν Ελλάδα Αθήνα θάλασσα ουρανός".split(" "),
	ar: "في من على إلى عن مع هذا هذه التي الذي كان قال بين كل بعد عند لم لا ما هو هي نحن أنا كتاب مدرسة جامعة سلام شمس قمر".split(" "),
	he: "של את על זה לא עם כל הוא היא אני אתה מה גם אבל כי יש אין ספר בית ילד עולם שמש ירח".split(" "),
	hi: "और का के की है में यह से को पर नहीं एक भी था कि जो कर तो हो गया किया भारत दिल्ली पानी किताब विद्यालय".split(" "),
	th: "การ ที่ ของ และ ใน เป็น มี ได้ ไม่ ให้ จะ ว่า กับ คน นี้ ประเทศไทย กรุงเทพ ภาษา อาหาร".split(" "),
	zh: "的 一 是 不 了 人 我 在 有 他 这 中 大 来 上 国 个 到 说 们 为 子 和 你 地 出 道 也 时 年 得 就 那 要 下 以 生 会 自 着 去 之 过 家 学 对 可 她 里 后 小 么 心 多 天 而 能 好 都 然 没 日 于 起 还 发 成 事 只 作 当 想 看 文 无 开 手 十 用 主 行 方 又 如 前 所 本 见 经 头 面 公 同 三 已 老 从 动 两 长 知识 计算机 人工智能 机器学习 北京 上海".split(" "),
	ja: "の に は を た が で て と し れ さ ある いる も する から な こと として い や れる など なっ ない この ため その あっ よう また もの という あり まで られ なる へ か だ これ によって により おり より による ず なり られる において ば なかっ なく しかし について せ だっ その後 できる それ う ので なお のみ でき き つ における および いう さらに でも ら たり その他 に関する たち ます ん なら 日本 東京 カタカナ ひらがな コンピュータ プログラム".split(" "),
	ko: "이 그 저 것 수 등 들 및 에서 으로 하다 있다 되다 없다 않다 같다 보다 주다 한국 서울 사람 시간 컴퓨터 프로그램 언어 문장 학교".split(" "),
};
const langs = Object.keys(words);
const noSpaceLangs = new Set(["zh", "ja", "th"]);

const emoji = ["😀", "😂", "🥲", "😍", "🤔", "🙄", "😴", "🤖", "👻", "💩", "🔥", "✨", "🎉", "❤️", "💔", "👍", "👎🏽",
	"🙏🏿", "👋🏼", "💪🏻", "👨‍💻", "👩‍🔬", "👨‍👩‍👧", "👨‍👨‍👦‍👦", "🧑🏾‍🚀", "🏳️‍⚧️", "🇯🇵", "🇧🇷", "🇿🇦", "🇪🇺", "🇺🇳",
	"⚽", "🍕", "🍣", "☕", "🚀", "🌍", "🌈", "⭐", "🐍", "🦀", "🐧", "🫶", "🪐", "♻️", "⚠️", "✅", "❌", "🔟", "©️", "™️"];
const specials = ["<bos>", "<eos>", "<pad>", "<unk>", "<mask>", "<start_of_turn>", "<end_of_turn>", "<start_of_image>",
	"<end_of_image>", "<image_soft_token>", "[multimodal]", "<unused0>", "<unused42>", "<unused6241>", "<b>", "</b>",
	"<code>", "</div>", "<start_of_", "<<bos>>", "<bos", "eos>", "<end_of_turn", "<start_of_turn>user\n",
	"<start_of_turn>model\n", "<end_of_turn>\n", "<unused9999>", "<BOS>", "< pad >"];
const ws = [" ", "  ", "   ", "\t", "\n", "\n\n", " \n", "\n ", "\t\t", " \t ", "\r\n", "    ", "\u00a0", "\u3000"];
const punct = [".", ",", "!", "?", ";", ":", "...", " - ", " — ", "(", ")", "\"", "'", "«", "»", "「", "」", "、", "。", "،", "؟", "।"];

function sentence(lang, n) {
	const w = words[lang];
	const sep = noSpaceLangs.has(lang) ? "" : " ";
	let s = rep(n, () => pick(w)).join(sep);
	if (int(3) === 0)
		s = s.charAt(0).toUpperCase() + s.slice(1);
	return s + pick(punct);
}

function number() {
	switch (int(8)) {
	case 0: return String(int(10));
	case 1: return String(int(100000));
	case 2: return rep(1 + int(60), () => String(int(10))).join("");
	case 3: return (rnd() * 1e6).toFixed(int(8));
	case 4: return "-" + (rnd() * 1000).toFixed(2);
	case 5: return int(1e6).toLocaleString("en-US");
	case 6: return `${int(10)}.${int(100)}e${int(2) ? "-" : "+"}${int(40)}`;
	default: return "0x" + int(0x7fffffff).toString(16).toUpperCase();
	}
}

// A random valid Unicode scalar value, biased towards rarely-tokenized ranges.
function rareChar() {
	const ranges = [[0x0000, 0x001f], [0x0080, 0x00ff], [0x0370, 0x03ff], [0x0590, 0x05ff], [0x0e00, 0x0e7f],
		[0x1100, 0x11ff], [0x13a0, 0x13ff], [0x2000, 0x206f], [0x2190, 0x23ff], [0x2c00, 0x2c5f],
		[0xa000, 0xa48f], [0xa4d0, 0xa4ff], [0xe000, 0xf8ff], [0xfe00, 0xfe0f], [0xff00, 0xffef],
		[0x10000, 0x1007f], [0x10330, 0x1034f], [0x13000, 0x1342f], [0x1d400, 0x1d7ff], [0x1f300, 0x1faff],
		[0x20000, 0x2a6df], [0x2b740, 0x2b81f], [0x30000, 0x3134f], [0xe0000, 0xe007f], [0xf0000, 0xffffd],
		[0x100000, 0x10fffd]];
	const [lo, hi] = pick(ranges);
	return String.fromCodePoint(lo + int(hi - lo + 1));
}

const codeSnippets = [
	() => `int ${pick(["x", "count", "n_tokens", "idx"])} = ${number()};`,
	() => `for (int i = 0; i < ${int(1000)}; ++i) {\n\t${pick(["a[i] = 0;", "sum += i;", "if (i % 2) continue;"])}\n}`,
	() => `static const char *name = "${sentence("en", 1 + int(4))}";`,
	() => `def ${pick(["foo", "bar", "compute", "tokenize"])}(${pick(["x", "self, x", "*args, **kwargs"])}):\n${" ".repeat(4 * (1 + int(3)))}return ${number()}`,
	() => `if x ${pick(["==", "!=", "<=", ">=", "is not"])} ${number()}:\n\tprint(x)`,
	() => JSON.stringify({ id: int(1000), name: sentence(pick(langs), 2), tags: rep(int(4), () => pick(words.en)), ok: int(2) === 1 }),
	() => JSON.stringify({ a: [number(), { b: pick(emoji) }] }, null, 1 + int(4)),
	() => `<${pick(["div", "span", "p", "li", "td"])} class="${pick(words.en)}">${sentence(pick(langs), 3)}</${pick(["div", "span", "p"])}>`,
	() => `<!-- ${sentence("en", 4)} -->\n<ul>\n  <li>${pick(words.fr)}</li>\n</ul>`,
	() => `SELECT ${pick(words.en)} FROM t WHERE id = ${int(100)};`,
	() => `$ ${pick(["make", "git", "ls", "cd", "grep"])} ${pick(["-la", "status", "-rn foo .", "..", "all -j2"])}`,
	() => `${" ".repeat(int(12))}${pick(["return", "yield", "await", "break"])} ${pick(words.en)};${" ".repeat(int(4))}`,
];

function url() {
	const host = pick(["example.com", "www.wikipedia.org", "github.com", "localhost:8080", "xn--bcher-kva.example", "例え.jp"]);
	const path = rep(int(4), () => pick([...words.en, ...words.de, "index.html", "v1", "api", "%20", "日本"])).join("/");
	const q = int(2) ? `?${pick(words.en)}=${number()}&lang=${pick(langs)}` : "";
	return `${pick(["http", "https", "ftp"])}://${host}/${path}${q}${int(3) ? "" : "#" + pick(words.en)}`;
}

const gens = [
	() => sentence(pick(langs), 1 + int(20)),
	() => rep(1 + int(4), () => sentence(pick(langs), 1 + int(8))).join(pick([" ", "\n", "  ", "\n\n"])),
	() => pick(ws).repeat(1 + int(3)) + sentence(pick(langs), 3 + int(5)) + pick(ws).repeat(int(3)),
	() => rep(1 + int(6), () => number()).join(pick([" ", ", ", "+", "*", "\n"])),
	() => rep(1 + int(8), () => pick(emoji)).join(int(2) ? "" : " "),
	() => sentence(pick(langs), 2 + int(6)) + " " + pick(emoji) + " " + sentence(pick(langs), 2),
	() => pick(codeSnippets)(),
	() => url(),
	() => sentence("en", 3) + pick(specials) + sentence(pick(langs), 3),
	() => rep(1 + int(5), () => pick(specials)).join(int(2) ? "" : pick(ws)),
	() => pick(specials).slice(0, 1 + int(10)) + pick(specials).slice(int(5)),
	() => rep(1 + int(12), () => rareChar()).join(int(3) ? "" : " "),
	() => sentence(pick(langs), 2) + rareChar() + rareChar() + sentence(pick(langs), 2),
	() => pick(ws).repeat(1 + int(40)),
	() => pick(words[pick(langs)]).repeat(2 + int(60)),
	() => rep(1 + int(5), () => pick(words.en)).join(" ".repeat(1 + int(35))),
	() => rep(2 + int(10), () => pick(ws) + pick(words[pick(langs)])).join(""),
	() => "\u2581".repeat(1 + int(40)) + pick(words.en) + "\u2581".repeat(int(5)),
	() => rep(20 + int(200), () => String.fromCharCode(97 + int(26))).join(""),
	() => rep(1 + int(3), () => sentence(pick(langs), 4)).join("") + "\n".repeat(1 + int(35)) + "end",
	() => "<start_of_turn>user\n" + sentence(pick(langs), 5) + "<end_of_turn>\n<start_of_turn>model\n" +
		sentence(pick(langs), 8) + "<end_of_turn>\n",
	() => rep(3 + int(10), () => pick([...emoji, ...words.zh, ...words.ja, ...words.ko, ...punct])).join(""),
	() => rep(1 + int(30), () => pick(["a", "b", "ab", "ba", "aa", " ", "▁"])).join(""),
	() => "\t".repeat(int(40)) + pick(codeSnippets)(),
];

const out = [];
out.push("# Tokenizer test corpus. One JSON string literal (RFC 8259) per line; lines not starting");
out.push("# with '\"' are comments. Generated by tests/tokenizer/gen-corpus.mjs: hand-written entries");
out.push("# from tests/tokenizer/handwritten.txt, then generated ones (fixed seed). Do not edit by hand.");
for (const line of readFileSync(join(here, "handwritten.txt"), "utf8").split("\n"))
	if (line.startsWith('"'))
		out.push(line);
for (let i = 0; i < 1200; i++)
	out.push(JSON.stringify(gens[i % gens.length]()));
// A few long entries (tens of kilobytes) for the long-input BPE path.
out.push(JSON.stringify(rep(400, () => sentence(pick(langs), 8)).join(pick([" ", "  ", "\t"]))));
out.push(JSON.stringify(rep(3000, () => pick(words.zh)).join("")));
out.push(JSON.stringify("▁".repeat(5000) + " ".repeat(5000)));
out.push(JSON.stringify(rep(2000, () => rareChar()).join("")));
process.stdout.write(out.join("\n") + "\n");
