#!/usr/bin/env bash
# Installs the npm tools the tokenizer goldens and `graphrt bench tokenizer` compare against,
# into the git-ignored .node_tools/ (tests do not need them: the goldens are committed).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v npm >/dev/null || { echo "npm is not installed (apt-get install nodejs npm)"; exit 1; }
npm install --no-audit --no-fund --prefix .node_tools @huggingface/tokenizers@0.2.0
