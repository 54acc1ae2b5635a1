// Renders every template x request of tests/data/chat_templates with @huggingface/jinja and
// compares with expected.json (Python jinja2). Run through chat_template_js_check.sh.
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";

const require = createRequire(path.join(process.env.NODE_PATH, "x.js"));
const { Template } = require("@huggingface/jinja");
const data = process.argv[2];
const expected = JSON.parse(fs.readFileSync(path.join(data, "expected.json"), "utf8"));
const MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
  "November", "December"];
// The golden script's FIXED_NOW (2026-11-23T12:00:00); only the codes the templates use.
function strftime_now(fmt) {
  return fmt.replace(/%d/g, "23").replace(/%B/g, MONTHS[10]).replace(/%b/g, MONTHS[10].slice(0, 3))
    .replace(/%Y/g, "2026").replace(/%m/g, "11").replace(/%H/g, "12").replace(/%M/g, "00");
}
const now = new Date();
const today = `${String(now.getDate()).padStart(2, "0")} ${MONTHS[now.getMonth()]} ${now.getFullYear()}`;
function special(cfg, key) {
  const t = cfg[key];
  if (t == null) return "";
  return typeof t === "string" ? t : t.content;
}
let same = 0, differ = 0;
for (const model of Object.keys(expected)) {
  const dir = path.join(data, "models", model);
  const cfgPath = path.join(dir, "tokenizer_config.json");
  const cfg = fs.existsSync(cfgPath) ? JSON.parse(fs.readFileSync(cfgPath, "utf8")) : {};
  const jinjaPath = path.join(dir, "chat_template.jinja");
  let src = fs.existsSync(jinjaPath) ? fs.readFileSync(jinjaPath, "utf8") : cfg.chat_template;
  if (Array.isArray(src)) src = src.find((e) => e.name === "default").template;
  let tmpl;
  try {
    tmpl = new Template(src);
  } catch (e) {
    console.log(`${model}: @huggingface/jinja cannot parse the template: ${e.message}`);
    differ += Object.keys(expected[model]).length;
    continue;
  }
  for (const [req, want] of Object.entries(expected[model])) {
    const body = JSON.parse(fs.readFileSync(path.join(data, "requests", req + ".json"), "utf8"));
    const vars = {
      messages: body.messages, tools: body.tools ?? null, documents: null,
      add_generation_prompt: body.add_generation_prompt ?? true,
      bos_token: special(cfg, "bos_token"), eos_token: special(cfg, "eos_token"),
      // raise_exception and strftime_now are built into @huggingface/jinja (the latter reads the
      // clock: today's "%d %B %Y" is mapped to the golden date below).
      ...(body.chat_template_kwargs ?? {}),
    };
    let got, err;
    try { got = tmpl.render(vars).split(today).join(strftime_now("%d %B %Y")); } catch (e) { err = e.message; }
    const ok = want.prompt !== undefined ? got === want.prompt : err !== undefined;
    if (ok) { same++; continue; }
    differ++;
    console.log(`--- ${model} x ${req}: differs from jinja2`);
    if (want.prompt !== undefined && got !== undefined) {
      let i = 0;
      while (i < got.length && got[i] === want.prompt[i]) i++;
      console.log(`  first difference at char ${i}: jinja2 ${JSON.stringify(want.prompt.slice(i, i + 60))}` +
        `\n  @huggingface/jinja ${JSON.stringify(got.slice(i, i + 60))}`);
    } else {
      console.log(`  jinja2: ${want.prompt !== undefined ? "renders" : "error " + want.error}; ` +
        `@huggingface/jinja: ${err !== undefined ? "error " + err : "renders"}`);
    }
  }
}
console.log(`@huggingface/jinja vs jinja2: ${same} same, ${differ} differ`);
