#!/usr/bin/env bash
# Session 25 call E: kv_read with the real kernel's padded shared rows (272 B) against 256 B and 256 B swizzled.
set -u
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
timeout 120 $HERE/kv_read > $OUT/kv_read.txt 2>&1; echo "rc=$?"; cat $OUT/kv_read.txt
