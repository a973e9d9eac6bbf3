#!/usr/bin/env bash
# Issue 18 (tensor-core GEMM) on the GPU machine, in one device call (carry
# .gpu; run ../shared/gpu/prepare and bench/models/prepare_gpu.sh here
# first). Stages, any of them, in order:
#     bash bench/run_gemm_tc_gpu.sh tests bench sweep torch
#   tests  the gemm, half and codegen suites on the H200
#   bench  bench_gemm's gemm_epilogue at 4096^3 and 8192^3 and its mlp, in f16
#          and bf16 (default tilings), and f32 at 4096^3 (with TF32 where asked:
#          TF32=1)
#   sweep  gemm_epilogue f16 at SWEEP_SIZE (4096) under each tensor-core tiling
#          (CLFUSE_GEMM_TILE=...,mma), with each kernel's registers and local
#          memory from NVIDIA's compiler (-cl-nv-verbose)
#   torch  cuBLAS (through PyTorch) and torch.compile on the same cases
# QUICK=1: bench and torch skip bf16 at 8192^3 and bf16's mlp; TESTS_SUITES:
# the suites to run (default "gemm half codegen").
# Everything lands in $OUT (bench.txt, sweep.txt, torch.txt, tests.txt).
# MODELS_BUILD / BUILD: a build directory to reuse.
set -uo pipefail
source .gpu/env.sh
OUT=${OUT:-/tmp/clfuse-out}
mkdir -p "$OUT"
export POCL_CACHE_DIR=/tmp/pocl-cache CLFUSE_CACHE_DIR=/tmp/clfuse-cache
B=${BUILD:-/tmp/bt}
if ! { [ -f $B/build.ninja ] || meson setup $B -Dtests=true --buildtype=release --wrap-mode=nodownload \
         -Donnx_proto=/tmp/gpu-root/usr/include/onnx/onnx.proto; } > "$OUT/build.log" 2>&1 ||
   ! ninja -C $B >> "$OUT/build.log" 2>&1; then
  tail -40 "$OUT/build.log"; exit 1
fi
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader; cat .gpu/commit 2>/dev/null; } \
  > "$OUT/device.txt" 2>&1
TILES=${TILES:-"128,128,32,64,64,mma 128,128,32,64,32,mma 128,128,32,32,64,mma 128,64,32,64,32,mma 64,128,32,32,64,mma 128,64,32,32,32,mma 64,64,32,32,32,mma 64,256,32,32,64,mma"}
for stage in "$@"; do
case "$stage" in
tests)
  suites=${TESTS_SUITES:-"gemm half codegen"}
  CLFUSE_DEVICE=gpu timeout ${TESTS_TIMEOUT:-420} meson test -C $B ${suites// / --suite } --num-processes 8 \
    --print-errorlogs > "$OUT/tests.txt" 2>&1
  grep -E "^ *[0-9]+/[0-9]+ |^(Ok|Fail|Skipped|Timeout)" "$OUT/tests.txt"
  grep -E "^[^ ].*:[0-9]+:[EF]:" "$OUT/tests.txt" | head -20
  ;;
bench)
  # QUICK=1: bf16 at 4096^3 alone.
  for dt in f16 bf16; do
    for n in 4096 8192; do
      [ "${QUICK:-0}" = 1 ] && [ $dt = bf16 ] && [ $n = 8192 ] && continue
      echo "== $dt gemm_epilogue $n"
      CLFUSE_DEVICE=gpu timeout 120 $B/bench/bench_gemm --dtype $dt --size $n --only gemm_epilogue --runs 20 2>&1 | grep -E "^gemm|rror"
    done
    [ "${QUICK:-0}" = 1 ] && [ $dt = bf16 ] && continue
    echo "== $dt mlp"
    CLFUSE_DEVICE=gpu timeout 120 $B/bench/bench_gemm --dtype $dt --only mlp --runs 20 2>&1 | grep -E "^mlp|rror"
  done 2>&1 | tee -a "$OUT/bench.txt"
  echo "== f32 gemm_epilogue 4096" | tee -a "$OUT/bench.txt"
  CLFUSE_DEVICE=gpu timeout 120 $B/bench/bench_gemm --dtype f32 --size 4096 --only gemm_epilogue --runs 20 2>&1 \
    | grep -E "^gemm|rror" | tee -a "$OUT/bench.txt"
  if [ "${TF32:-0}" = 1 ]; then
    echo "== f32 gemm_epilogue 4096, CLFUSE_TF32=1" | tee -a "$OUT/bench.txt"
    CLFUSE_TF32=1 CLFUSE_DEVICE=gpu timeout 120 $B/bench/bench_gemm --dtype f32 --size 4096 --only gemm_epilogue \
      --runs 20 2>&1 | grep -E "^gemm|rror" | tee -a "$OUT/bench.txt"
  fi
  ;;
sweep)
  gcc -O2 -std=c11 -Iinclude -o /tmp/kernel_source bench/probes/kernel_source.c -L$B -lclfuse -Wl,-rpath,$B || exit 1
  gcc -O2 -std=c11 -o /tmp/cki bench/probes/cl_kernel_info.c -lOpenCL || exit 1
  S=${SWEEP_SIZE:-4096}
  # An entry: a tiling, then optionally |build options ('+' for spaces).
  for entry in $TILES; do
    t=${entry%%|*} o=""
    [[ $entry == *"|"* ]] && o=${entry#*|} && o=${o//+/ }
    r=$(CLFUSE_BUILD_OPTIONS="$o" CLFUSE_CACHE=0 CLFUSE_GEMM_TILE=$t CLFUSE_DEVICE=gpu timeout 100 $B/bench/bench_gemm \
          --dtype ${SWEEP_DTYPE:-f16} --size $S --only gemm_epilogue --runs 10 2>&1 | grep -E "^gemm|rror" |
          sed 's/  *unfused.*error/ error/')
    CLFUSE_GEMM_TILE=$t DTYPE=${SWEEP_DTYPE:-f16} CLFUSE_DEVICE=gpu /tmp/kernel_source gemm $S $S > /tmp/k.cl 2>/dev/null
    regs=$(/tmp/cki /tmp/k.cl "-cl-nv-verbose $o" 2>&1 | grep -E "registers|spill" | tr -s ' \n' ' ' | cut -c1-200)
    echo "$t $o | $r | $regs"
  done 2>&1 | tee -a "$OUT/sweep.txt"
  ;;
torch)
  cat > /tmp/tc_anchors.py <<'PY'
import os, torch, torch.nn.functional as Fn
quick = os.environ.get("QUICK") == "1"
from triton.testing import do_bench
b = lambda f: do_bench(f, warmup=50, rep=200, return_mode="median")
print(torch.__version__, torch.cuda.get_device_name())
for dt in (torch.float16, torch.bfloat16):
    for n in (4096, 8192):
        if quick and dt == torch.bfloat16 and n == 8192:
            continue
        x, w = (torch.randn(n, n, device="cuda").to(dt) for _ in range(2))
        bias = torch.randn(n, device="cuda").to(dt)
        fl = 2 * n ** 3
        t0 = b(lambda: x @ w)
        f = lambda: torch.relu(x @ w + bias)
        te = b(f); fc = torch.compile(f); fc(); fc(); tc = b(fc)
        print(f"{str(dt):15s} n={n}: cuBLAS product {t0:.3f} ms ({fl / t0 / 1e9:.0f} TFLOP/s); relu(x@w+b) eager {te:.3f}, "
              f"compile {tc:.3f} ms ({fl / tc / 1e9:.0f} TFLOP/s)", flush=True)
    if quick and dt == torch.bfloat16:
        continue
    M, D, FF = 8192, 1024, 4096
    r = lambda *s: torch.randn(*s, device="cuda").to(dt)
    mx, w1, b1, w2, b2 = r(M, D), r(D, FF) * 0.03, r(FF), r(FF, D) * 0.03, r(D)
    f = lambda: mx + (Fn.gelu(mx @ w1 + b1) @ w2 + b2)
    te = b(f); fc = torch.compile(f); fc(); fc(); tc = b(fc)
    print(f"{str(dt):15s} mlp: eager {te:.3f}, compile {tc:.3f} ms ({4 * M * D * FF / tc / 1e9:.0f} TFLOP/s)", flush=True)
n = 4096
x, w, bias = torch.randn(n, n, device="cuda"), torch.randn(n, n, device="cuda"), torch.randn(n, device="cuda")
for tf32 in (False, True):
    torch.backends.cuda.matmul.allow_tf32 = tf32
    t0 = b(lambda: x @ w)
    f = lambda: torch.relu(x @ w + bias)
    te = b(f); torch._dynamo.reset(); fc = torch.compile(f); fc(); fc(); tc = b(fc)
    print(f"f32 tf32={tf32} n={n}: cuBLAS product {t0:.3f} ms ({2 * n ** 3 / t0 / 1e9:.0f} TFLOP/s); relu(x@w+b) "
          f"eager {te:.3f}, compile {tc:.3f} ms", flush=True)
PY
  PYTHONUNBUFFERED=1 timeout ${TORCH_TIMEOUT:-300} python3 /tmp/tc_anchors.py 2>&1 | grep -v Warn | tee -a "$OUT/torch.txt"
  ;;
esac
done
