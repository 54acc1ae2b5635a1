#!/usr/bin/env python3
"""Renders every chat template in tests/data/chat_templates/models/ over every request in
tests/data/chat_templates/requests/ (and the interpreter snippets of snippets_in.json) with Python jinja2 (Debian's python3-jinja2), set up exactly as
transformers' apply_chat_template sets it up, and writes tests/data/chat_templates/expected.json:
{model: {request: {"prompt": "..."} or {"error": "..."}}}, and snippets.json.

strftime_now is fixed to FIXED_NOW; the C++ tests set GRAPHRT_STRFTIME_NOW to the same date.
Usage: python3 scripts/make_chat_template_goldens.py [DATA_DIR]
"""
import json
import os
import sys
from datetime import datetime

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension
from jinja2.sandbox import ImmutableSandboxedEnvironment

FIXED_NOW = datetime(2026, 11, 23, 12, 0, 0)  # GRAPHRT_STRFTIME_NOW=2026-11-23T12:00:00


class AssistantTracker(Extension):
    # transformers' {% generation %} block: renders its body (and tracks assistant masks there).
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.CallBlock(self.call_method("_render", []), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def make_env():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        # transformers' override of jinja's tojson: no HTML escaping, json.dumps spacing.
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(format):
        return FIXED_NOW.strftime(format)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[AssistantTracker, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def special(cfg, key):
    t = cfg.get(key)
    if t is None:
        return ""
    return t if isinstance(t, str) else t["content"]


def load_model(d):
    cfg = {}
    if os.path.exists(os.path.join(d, "tokenizer_config.json")):
        cfg = json.load(open(os.path.join(d, "tokenizer_config.json"), encoding="utf-8"))
    jp = os.path.join(d, "chat_template.jinja")
    if os.path.exists(jp):
        src = open(jp, encoding="utf-8").read()
    else:
        src = cfg["chat_template"]
        if isinstance(src, list):
            src = next(e["template"] for e in src if e["name"] == "default")
    return src, special(cfg, "bos_token"), special(cfg, "eos_token")


def render(env, src, bos, eos, req):
    tmpl = env.from_string(src)
    kwargs = dict(req.get("chat_template_kwargs") or {})
    # As transformers: tools and documents are passed (None when absent), special tokens too.
    return tmpl.render(messages=req["messages"], tools=req.get("tools"), documents=None,
                       add_generation_prompt=req.get("add_generation_prompt", True),
                       bos_token=bos, eos_token=eos, **kwargs)


def main():
    data = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "tests", "data",
                                                               "chat_templates")
    env = make_env()
    out = {}
    models = sorted(os.listdir(os.path.join(data, "models")))
    reqs = sorted(f[:-5] for f in os.listdir(os.path.join(data, "requests")) if f.endswith(".json"))
    for m in models:
        src, bos, eos = load_model(os.path.join(data, "models", m))
        out[m] = {}
        for r in reqs:
            req = json.load(open(os.path.join(data, "requests", r + ".json"), encoding="utf-8"))
            try:
                out[m][r] = {"prompt": render(env, src, bos, eos, req)}
            except Exception as e:  # noqa: BLE001 - the error text is the golden
                out[m][r] = {"error": str(e), "error_type": type(e).__name__}
    # Interpreter snippets: each [template, variables] of snippets_in.json rendered as a chat
    # template whose chat_template_kwargs are the variables (messages empty).
    snippets = []
    for src, variables in json.load(open(os.path.join(data, "snippets_in.json"), encoding="utf-8")):
        entry = {"template": src, "vars": variables}
        try:
            entry["output"] = render(env, src, "", "", {"messages": [], "chat_template_kwargs": variables})
        except Exception as e:  # noqa: BLE001
            entry["error"] = str(e)
            entry["error_type"] = type(e).__name__
        snippets.append(entry)
    with open(os.path.join(data, "snippets.json"), "w", encoding="utf-8") as f:
        json.dump(snippets, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print(f"{len(snippets)} snippets")
    with open(os.path.join(data, "expected.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1, ensure_ascii=False)
        f.write("\n")
    n = sum(len(v) for v in out.values())
    errs = sum(1 for v in out.values() for x in v.values() if "error" in x)
    print(f"jinja2 {jinja2.__version__}: {len(models)} templates x {len(reqs)} requests = {n} renders, {errs} errors")


if __name__ == "__main__":
    main()
