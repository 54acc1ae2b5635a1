#!/usr/bin/env bash
# s8-bs64 re-run of the kv groups only (run 1 found the KH > 1 kernel's shared-memory offset bug,
# fixed after it; ~2-3 min of command): run.sh with RUN2=1 (ablations2.txt: KV_GROUP 1 / 4 / 2,
# two rounds interleaved, llama bs 128 and bs 256 ctx 660; tests, ncu, graph replays, verify).
# Needs pre.tar.gz rebuilt from this branch (or it builds on the device: ~3-4 min more).
RUN2=1 exec bash "$(dirname "$0")/run.sh"
