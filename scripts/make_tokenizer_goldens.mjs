#!/usr/bin/env node
// Writes tests/data/tokenizers/<name>/goldens.json from the npm package @huggingface/tokenizers
// (install it with scripts/install_node_tools.sh): ids with and without special tokens and
// decoded text, for every string of tests/data/tokenizers/golden_strings.json.
//
//   node scripts/make_tokenizer_goldens.mjs
//
// The npm package ignores the case-insensitive group (?i:...) of the Qwen2/Llama-3 patterns, so
// for those tokenizers it is given the same pattern with the group spelled out in character
// classes (same meaning); their goldens are marked "to_confirm" with the Python `tokenizers`
// package (scripts/make_tokenizer_goldens.py writes the same format).
import { createRequire } from "node:module";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const require = createRequire(path.join(root, ".node_tools", "package.json"));
const { Tokenizer } = require("@huggingface/tokenizers");
const pkg = JSON.parse(fs.readFileSync(path.join(root, ".node_tools", "node_modules", "@huggingface", "tokenizers", "package.json"), "utf8"));

const dataDir = path.join(root, "tests", "data", "tokenizers");
const strings = JSON.parse(fs.readFileSync(path.join(dataDir, "golden_strings.json"), "utf8"));
const NAMES = ["llama2", "phi-2", "phi2-qwen2-split", "phi2-llama3-split"];

const CASELESS = "(?i:'s|'t|'re|'ve|'m|'ll|'d)";
const SPELLED = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])";

function spellOutCaseless(node) {
  if (Array.isArray(node)) return node.map(spellOutCaseless);
  if (node && typeof node === "object") {
    const out = {};
    for (const [k, v] of Object.entries(node)) out[k] = spellOutCaseless(v);
    return out;
  }
  return typeof node === "string" ? node.split(CASELESS).join(SPELLED) : node;
}

for (const name of NAMES) {
  const raw = fs.readFileSync(path.join(dataDir, name, "tokenizer.json"), "utf8");
  const toConfirm = raw.includes(JSON.stringify(CASELESS).slice(1, -1));
  const json = spellOutCaseless(JSON.parse(raw));
  const tok = new Tokenizer(json, {});
  const cases = strings.map((text) => {
    const ids = tok.encode(text).ids.map(Number);
    const ids_no_special = tok.encode(text, { add_special_tokens: false }).ids.map(Number);
    const opts = { clean_up_tokenization_spaces: false };
    const decode = (skip) => (ids.length ? tok.decode(ids, { ...opts, skip_special_tokens: skip }) : "");
    return {
      text,
      ids,
      ids_no_special,
      decoded: decode(false),
      decoded_skip_special: decode(true),
    };
  });
  const out = {
    tokenizer: name,
    source: `npm ${pkg.name} ${pkg.version}` + (toConfirm ? " (with (?i:...) spelled out as character classes)" : ""),
    to_confirm: toConfirm ? "check with the Python tokenizers package (scripts/make_tokenizer_goldens.py)" : "",
    cases,
  };
  fs.writeFileSync(path.join(dataDir, name, "goldens.json"), JSON.stringify(out, null, 0).replace(/\},\{"text"/g, '},\n{"text"') + "\n");
  console.log(`${name}: ${cases.length} cases`);
}
