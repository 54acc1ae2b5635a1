#!/usr/bin/env bash
# A/B of the env switches in one GPU job: each variant runs the same `graphrt bench` command in a
# fresh process, and a table of the medians (and capture seconds) comes last.
#   BIN=build-gpu/graphrt scripts/gpu_ablations.sh
# Variants and commands are the defaults below, or ABLATIONS (a file of lines
# "label|ENV=V ENV2=V|bench args").
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}
mkdir -p "$OUT/ablations"
BIN=${BIN:-build-gpu/graphrt}
LLAMA1="decode --model builtin:llama-3.1-8b --batch-sizes 1 --cuda-graph-bs 1 --iters 30"
QWEN1="decode --model builtin:qwen3-0.6b --batch-sizes 1,8 --cuda-graph-bs 1,8 --iters 30"
QCAP="decode --model builtin:qwen3-0.6b --batch-sizes 1 --iters 3"
QPRE="prefill --model builtin:qwen3-0.6b --tokens 4 --iters 3"
LPRE="prefill --model builtin:llama-3.1-8b --tokens 4 --iters 3"
Q64="decode --model builtin:qwen3-0.6b --batch-sizes 64 --cuda-graph-bs 64 --iters 30"
L64="decode --model builtin:llama-3.1-8b --batch-sizes 64 --cuda-graph-bs 64 --iters 30"
DEFAULT_LINES=(
  "qwen bs64 default||$Q64"
  "qwen bs64 prepare_qkv per token|GRAPHRT_PREPARE_QKV=token|$Q64"
  "qwen bs64 legacy decode attention|GRAPHRT_DECODE_ATTENTION=legacy|$Q64"
  "qwen bs64 both old|GRAPHRT_PREPARE_QKV=token GRAPHRT_DECODE_ATTENTION=legacy|$Q64"
  "qwen bs64 plan per M|GRAPHRT_LT_SHARE_PLANS=0|$Q64"
  "llama bs64 default||$L64"
  "llama bs64 prepare_qkv per token|GRAPHRT_PREPARE_QKV=token|$L64"
  "llama bs64 both old|GRAPHRT_PREPARE_QKV=token GRAPHRT_DECODE_ATTENTION=legacy|$L64"
  "llama bs1 default||$LLAMA1"
  "llama bs1 no early trigger|GRAPHRT_GEMV_EARLY_TRIGGER=0|$LLAMA1"
  "llama bs1 fusion norm only|GRAPHRT_DECODE_FUSION=norm|$LLAMA1"
  "llama bs1 no fusion|GRAPHRT_DECODE_FUSION=0|$LLAMA1"
  "llama bs1 no fusion, no early trigger|GRAPHRT_DECODE_FUSION=0 GRAPHRT_GEMV_EARLY_TRIGGER=0|$LLAMA1"
  "qwen bs1,8 default||$QWEN1"
  "qwen bs1,8 no early trigger|GRAPHRT_GEMV_EARLY_TRIGGER=0|$QWEN1"
  "qwen decode capture default||$QCAP"
  "qwen decode capture, plan per M|GRAPHRT_LT_SHARE_PLANS=0|$QCAP"
  "qwen piecewise capture default||$QPRE"
  "qwen piecewise capture, plan per M|GRAPHRT_LT_SHARE_PLANS=0|$QPRE"
  "llama piecewise capture default||$LPRE"
  "llama piecewise capture, deferred instantiate|GRAPHRT_CAPTURE_DEFER_INSTANTIATE=1|$LPRE"
)
LINES=()
if [ -n "${ABLATIONS:-}" ]; then mapfile -t LINES <"$ABLATIONS"; else LINES=("${DEFAULT_LINES[@]}"); fi
i=0
for line in "${LINES[@]}"; do
  [ -z "$line" ] && continue
  IFS='|' read -r label envs args <<<"$line"
  i=$((i + 1))
  # shellcheck disable=SC2086
  env $envs timeout "${ABLATION_TIMEOUT:-90}" "$BIN" bench $args --json >"$OUT/ablations/$i.json" 2>"$OUT/ablations/$i.err" ||
    echo "variant $i ($label) failed: $(tail -2 "$OUT/ablations/$i.err")"
  echo "$label|$envs|$args" >"$OUT/ablations/$i.label"
done
python3 - "$OUT/ablations" <<'PY'
import json, os, sys
d = sys.argv[1]
n = len([f for f in os.listdir(d) if f.endswith(".label")])
print(f"{'variant':48s} {'env':58s} result")
for i in range(1, n + 1):
    label, envs, _ = open(f"{d}/{i}.label").read().strip().split("|", 2)
    try:
        j = json.load(open(f"{d}/{i}.json"))
    except Exception:
        print(f"{label:48s} {envs:58s} FAILED"); continue
    c = j.get("capture", {})
    if "decode" in j:
        res = " ".join(f"bs{r['bs']} {r['graph_ms']:.3f} ms" for r in j["decode"])
    else:
        res = " ".join(f"{r['tokens']} tok {r['piecewise_ms']:.3f} ms" for r in j.get("prefill", []))
    res += f"; capture {c.get('capture_seconds', float('nan')):.3f} s ({c.get('sizes', '?')} shapes)"
    print(f"{label:48s} {envs:58s} {res}")
PY
