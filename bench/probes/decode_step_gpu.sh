#!/usr/bin/env bash
# Where a decode step's time goes on the GPU machine (device tool, carry
# .gpu): bench_decoder (1 layer) with its per-kernel times, the PTX of its
# first few-rows GEMM (gemm_rows.cl) for a look at B's loads, and the decode
# attention alone (bench_attention, one query of 32 heads over 8 KV heads
# of 64, causal) at 128, 1024 and 4096 keys. Results in $OUT.
set -uo pipefail
source bench/gpu_build.sh
CLFUSE_DEVICE=gpu CLFUSE_LOGS=output_code timeout 150 $B/bench/bench_decoder --layers 1 --runs 30 --markdown \
  > "$OUT/decoder_1layer.md" 2> /tmp/decoder_code.txt
grep -E "^\||clf_" "$OUT/decoder_1layer.md" | head -40
python3 - /tmp/decoder_code.txt "$OUT/gemm_rows.cl" <<'PY'
import sys
text = open(sys.argv[1]).read()
for block in text.split("[clfuse:output_code] kernel ")[1:]:
    if block.startswith("clf_gemm_rows") and "#define W 8" in block:
        open(sys.argv[2], "w").write(block.split("\n", 1)[1])
        break
PY
gcc -O2 -std=c11 -o /tmp/cki bench/probes/cl_kernel_info.c -lOpenCL &&
  [ -f "$OUT/gemm_rows.cl" ] && BINARY="$OUT/gemm_rows.ptx" /tmp/cki "$OUT/gemm_rows.cl" > "$OUT/gemm_rows_build.txt" 2>&1
grep -cE "ld.global" "$OUT/gemm_rows.ptx" 2>/dev/null
grep -oE "ld.global[.a-z0-9]*" "$OUT/gemm_rows.ptx" 2>/dev/null | sort | uniq -c
for sk in 128 1024 4096; do
  CLFUSE_DEVICE=gpu CLFUSE_LOGS=schedule timeout 60 $B/bench/bench_attention --dtype f16 --b 1 --h 32 --hkv 8 --sq 1 \
    --sk $sk --d 64 --gqa broadcast --causal --iters 200 > "$OUT/attention_decode_$sk.txt" 2>&1
  echo "== sk $sk"; grep -E "form=|^fused: device|RESULT" "$OUT/attention_decode_$sk.txt" | cut -c1-240
done
