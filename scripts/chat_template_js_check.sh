#!/usr/bin/env bash
# Cross-checks the chat-template goldens (Python jinja2, the reference) with the npm package
# @huggingface/jinja, installed into the git-ignored folder .jsdeps/. Prints each render where the
# two differ. Not needed by the tests (they use the committed goldens).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
if [ ! -d "$root/.jsdeps/node_modules/@huggingface/jinja" ]; then
  npm install --silent --no-audit --no-fund --prefix "$root/.jsdeps" @huggingface/jinja >/dev/null
fi
NODE_PATH="$root/.jsdeps/node_modules" node "$root/scripts/chat_template_js_check.mjs" "$root/tests/data/chat_templates"
