# Sourced by the one-tree scripts of bench/cpu/ that run on the GPU
# machine's 16 cores (gemm_tune_16.sh, softmax_rows_16.sh): the device
# tool's environment (.gpu, carried), $R for raw outputs, this tree built
# in $B (default /tmp/build-ab; release, no tests; a build already there,
# with tests or not, is reused), the machine noted in $R/env.txt (its git
# line is the copy's, which may name an older commit than the files). Sets
# START (seconds) for the scripts' timings.
START=$SECONDS
source .gpu/env.sh
OUT=${OUT:-/tmp/clfuse-out}
R=$OUT/r
mkdir -p "$R"
export PYTHONUNBUFFERED=1 CLFUSE_DEVICE=cpu
B=${B:-/tmp/build-ab}
opts="--buildtype=release --wrap-mode=nodownload -Dtests=false -Donnx_proto=/tmp/gpu-root/usr/include/onnx/onnx.proto"
{ [ -f $B/build.ninja ] || meson setup $B $opts; ninja -C $B; } > "$R/build.log" 2>&1 || { tail -20 "$R/build.log"; exit 1; }
{ date -u; git log -1 --oneline 2>/dev/null; nproc; lscpu | grep -E "^(Model name|CPU max MHz|L2|L3)"; } > "$R/env.txt" 2>&1
cat "$R/env.txt"
echo "built in $((SECONDS - START)) s"
