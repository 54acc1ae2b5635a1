#!/usr/bin/env node
// The npm side of `graphrt bench tokenizer`: encode MB/s of @huggingface/tokenizers (from
// .node_tools, see scripts/install_node_tools.sh) over the same corpus, one core.
//   node scripts/bench_tokenizer_npm.mjs CORPUS.json TOKENIZER_PATH...   -> JSON on stdout
import { createRequire } from "node:module";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const require = createRequire(path.join(root, ".node_tools", "package.json"));
const { Tokenizer } = require("@huggingface/tokenizers");
const pkgDir = path.join(root, ".node_tools", "node_modules", "@huggingface", "tokenizers");
const pkg = JSON.parse(fs.readFileSync(path.join(pkgDir, "package.json"), "utf8"));

const [corpusFile, ...tokenizers] = process.argv.slice(2);
const docs = JSON.parse(fs.readFileSync(corpusFile, "utf8"));
const bytes = docs.reduce((n, d) => n + Buffer.byteLength(d, "utf8"), 0);
const out = { package: `${pkg.name} ${pkg.version}` };
for (const t of tokenizers) {
  const file = fs.statSync(t).isDirectory() ? path.join(t, "tokenizer.json") : t;
  const tok = new Tokenizer(JSON.parse(fs.readFileSync(file, "utf8")), {});
  for (let i = 0; i < docs.length / 10; ++i) tok.encode(docs[i]);
  const t0 = process.hrtime.bigint();
  const c0 = process.cpuUsage();
  let tokens = 0;
  for (const d of docs) tokens += tok.encode(d).ids.length;
  const cpu = process.cpuUsage(c0);
  const s = Number(process.hrtime.bigint() - t0) / 1e9;
  // CPU time of the process: the main thread, plus what the JIT and GC threads used.
  out[t] = { mb_s: bytes / 1e6 / s, cpu_mb_s: bytes / 1e6 / ((cpu.user + cpu.system) / 1e6), tokens };
}
console.log(JSON.stringify(out));
