# Sourced by the bench/run_*_gpu.sh scripts that build with the tests and
# the ONNX frontend on the GPU machine (device tool, carry .gpu): the
# driver environment, $OUT, the caches, and libclfuse built in $B (kept
# between calls on a warm machine); exits after printing the build log's
# tail when the build fails, and starts $OUT/log.txt with the GPU and the
# commit.
source .gpu/env.sh
OUT=${OUT:-/tmp/clfuse-out}
mkdir -p "$OUT"
export POCL_CACHE_DIR=/tmp/pocl-cache CLFUSE_CACHE_DIR=/tmp/clfuse-cache
B=/tmp/build-gpu
if ! { [ -f $B/build.ninja ] || meson setup $B -Dtests=true --buildtype=release --wrap-mode=nodownload \
         -Donnx_proto=/tmp/gpu-root/usr/include/onnx/onnx.proto; } > "$OUT/build.log" 2>&1 ||
   ! ninja -C $B >> "$OUT/build.log" 2>&1; then
  tail -40 "$OUT/build.log"; exit 1
fi
{ nvidia-smi --query-gpu=name,driver_version --format=csv; git log -1 --oneline 2>/dev/null; } > "$OUT/log.txt" 2>&1
