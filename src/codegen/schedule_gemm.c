/* The GEMM kind's schedule (schedule.h): which form takes a product (the
 * few-rows form, the tensor cores' mma.sync, the portable tiles, the CPU
 * blocks), its tiling, the CPU form's spans, one-row blocks and split, and
 * the launch; the facts a product's graph gives them (clf__gemm_facts_of).
 * The measurements behind each choice are cited beside it. */
#include "codegen/schedule.h"
#include "util/pow2.h"

#include <stdio.h>

#include "codegen/codegen_product.h"
#include "graph/graph_merge_products.h"
#include "util/strbuf.h"

/* The number of products of MATMUL node mm: its batch axes' extents. */
static int64_t batch_of(const clf__node *mm)
{
    int64_t batch = 1;
    for (int d = 0; d < mm->rank - 2; d++)
        batch *= mm->shape[d];
    return batch;
}

/* Whether the movement ops between a MATMUL and its operand swap the
 * operand's last two axes (a transposed operand: its rows are strided). */
static bool operand_transposed(const clf_graph *g, uint32_t id)
{
    bool swapped = false;
    for (;;) {
        const clf__node *n = clf__graph_node(g, id);
        if (n->op == CLF__OP_TRANSPOSE) {
            if (n->rank >= 2 && n->attr.transpose.perm[n->rank - 1] == n->rank - 2)
                swapped = !swapped;
        } else if (clf__node_class_of(n) != CLF__CLASS_MOVEMENT) {
            return swapped;
        }
        id = n->inputs[0];
    }
}

/* The CPU form's default: micro-tiles of two native vectors by 8 rows
 * (6 where vectors are 8 floats wide: 12 accumulators of the 16 AVX2
 * registers), blocks of up to 128 x 128 in k-blocks of 256 (on 2 cores of
 * a Xeon, 1024^3 with its epilogue ran at 110-140 GFLOP/s so, against
 * 42-50 for the unblocked 8 x 8 micro-tiles of before), smaller where
 * the product is (one row: one-row micro-tiles) or where fewer blocks
 * than two per compute unit would leave cores idle, and within the
 * device's local memory. Where the kernel computes row statistics (a
 * norm's, planner.c), every block computes its rows' statistics and
 * prologue again: blocks are split along rows first, and one a compute
 * unit is enough (on 2 cores of PoCL the tiny GPT-2's MLP products with
 * their layer norms took 0.030 ms in four blocks of 16 x 32 columns,
 * 0.015-0.019 in two blocks of 8 rows, before A was packed). */
static clf__gemm_config cpu_default_config(const clf__codegen_target *target, int64_t m, int64_t n, int64_t k,
                                           int64_t batch, bool row_stats)
{
    /* Where the sizes vary (symbolic graphs share one program between
     * their sizes), an extent other than 1 is blocked as a large one. */
    if (target->sizes_vary) {
        m = m == 1 ? 1 : 1 << 20;
        n = n == 1 ? 1 : 1 << 20;
        k = k == 1 ? 1 : 1 << 20;
        batch = batch == 1 ? 1 : 1 << 20;
    }
    /* Micro-tiles of 2 vectors of the device's float width a row, as many
     * rows as its vector registers hold sums for: 8 x 32 where vectors are
     * 16 floats (AVX-512), 6 x 16 where 8 (AVX2; the default where the
     * width is unknown or under 4, a GPU running this form), 4 x 8 where 4
     * (SSE's and NEON's 128 bits). */
    const int fw = target->float_width;
    const int vw = fw >= 16 ? 16 : fw >= 4 && fw < 8 ? 4 : 8;
    clf__gemm_config c = {.wm = vw == 16 ? 8 : vw == 8 ? 6 : 4, .wn = 2 * vw, .tk = 256};
    if (m < c.wm)
        c.wm = m > 1 ? (int)m : 1;
    while (c.wn > 4 && c.wn / 2 >= n)
        c.wn /= 2;
    int64_t rows = m < 128 ? (m > 0 ? m : 1) : 128, cols = n < 128 ? (n > 0 ? n : 1) : 128;
    c.tm = (int)((rows + c.wm - 1) / c.wm * c.wm);
    c.tn = (int)((cols + c.wn - 1) / c.wn * c.wn);
    if (k < c.tk)
        c.tk = k > 16 ? (int)((k + 15) / 16 * 16) : 16;
    int64_t units = target->compute_units ? target->compute_units : 1, nb = batch > 0 ? batch : 1;
    for (;;) {
        int64_t blocks = nb * ((m + c.tm - 1) / c.tm) * ((n + c.tn - 1) / c.tn);
        if (blocks >= (row_stats ? 1 : 2) * units)
            break;
        if ((row_stats ? c.tm == c.wm : c.tn >= c.tm) && c.tn > c.wn && c.tn / 2 % c.wn == 0)
            c.tn /= 2;
        else if (c.tm > c.wm && c.tm / 2 % c.wm == 0)
            c.tm /= 2;
        else
            break;
    }
    size_t local_mem = target->local_mem ? target->local_mem : 32768;
    /* Blocks of a micro-tile multiple that no halving keeps whole (tm =
     * 102 of 6-row micro-tiles for 100 rows, on a GPU's 48 KiB running
     * this form) shrink to half rounded up to a micro-tile. */
    while ((size_t)(c.tk + c.tm) * (size_t)c.tn * sizeof(float) > local_mem) {
        if (c.tk > 64)
            c.tk = c.tk / 32 * 16;
        else if (c.tn > c.wn && c.tn >= c.tm)
            c.tn = (c.tn / 2 + c.wn - 1) / c.wn * c.wn;
        else if (c.tm > c.wm)
            c.tm = (c.tm / 2 + c.wm - 1) / c.wm * c.wm;
        else if (c.tk > 16)
            c.tk = c.tk / 32 * 16 > 16 ? c.tk / 32 * 16 : 16;
        else
            break;
    }
    return c;
}

clf__gemm_config clf__gemm_default_config(const clf__codegen_target *target, int64_t m, int64_t n,
                                          int64_t k, int64_t batch)
{
    size_t max_local = target->max_local ? target->max_local : 256;
    if (target->cpu)
        return cpu_default_config(target, m, n, k, batch, false);
    /* 128 x 128 tiles on 128 work-items of 16 x 8 each, 8 deep: on an H200
     * 3.55 ms for 4096^3 against 3.70 for 8 x 8 on 256 work-items 16 deep
     * (bench/gemm_tile_sweep.sh); other tilings by autotuning. */
    if (max_local >= 128 && m >= 128 && n >= 128)
        return (clf__gemm_config){.tm = 128, .tn = 128, .tk = 8, .wm = 16, .wn = 8};
    /* Smaller products (a tiny model's M = 16 rows, attention's per-head
     * 8 x 8 blocks): a tile no larger than the product, halved (the larger
     * side first) while the tiles leave compute units idle, down to 16 x 16
     * on 16 work-items. A 64 x 64 tile over a 16 x 32 product idled 7 of
     * every 8 work-items and took one compute unit of 132.
     * The tile also shrinks until its work-items (one per 4 x 4 block) fit
     * the device's work-group limit (32 on rusticl's llvmpipe). */
    int tm = (int)clf__pow2_at_least((uint64_t)(m < 64 ? m : 64));
    int tn = (int)clf__pow2_at_least((uint64_t)(n < 64 ? n : 64));
    tm = tm < 16 ? 16 : tm;
    tn = tn < 16 ? 16 : tn;
    uint64_t units = target->compute_units ? target->compute_units : 1;
    for (;;) {
        uint64_t tiles = (uint64_t)(batch > 0 ? batch : 1) * (uint64_t)((m + tm - 1) / tm) *
                         (uint64_t)((n + tn - 1) / tn);
        bool fits = (size_t)(tm / 4) * (size_t)(tn / 4) <= max_local;
        if ((fits && tiles >= units) || (tm == 16 && tn == 16))
            break;
        if (tm >= tn)
            tm /= 2;
        else
            tn /= 2;
    }
    return (clf__gemm_config){.tm = tm, .tn = tn, .tk = 16, .wm = 4, .wn = 4};
}

bool clf__gemm_config_valid(const clf__gemm_config *c, bool cpu, size_t max_local, size_t local_mem, char *why,
                            size_t cap)
{
    if (c->tm <= 0 || c->tn <= 0 || c->tk <= 0 || c->wm <= 0 || c->wn <= 0) {
        snprintf(why, cap, "tile extents must be positive");
        return false;
    }
    if (cpu) {
        if (c->tk % 16 || c->tk > 1024 || c->wm > 16 || (c->wn != 4 && c->wn != 8 && c->wn != 16 && c->wn != 32) ||
            c->tm % c->wm || c->tn % c->wn || c->tm > 256 || c->tn > 256) {
            snprintf(why, cap, "CPU tiles are one work-item's block of micro-tiles: wm <= 16, wn in "
                               "{4, 8, 16, 32}, tm and tn multiples of them up to 256, tk (the k-block) a "
                               "multiple of 16 up to 1024");
            return false;
        }
        size_t local = (size_t)(c->tk + c->tm) * (size_t)c->tn * sizeof(float);
        if (local > (local_mem ? local_mem : 32768)) {
            snprintf(why, cap, "the packed B and the sums need %zu bytes of local memory (the device has %zu)",
                     local, local_mem);
            return false;
        }
        return true;
    }
    if (c->wm % 4 || c->wn % 4 || c->tm % c->wm || c->tn % c->wn || c->wm > 16 || c->wn > 16) {
        snprintf(why, cap, "wm and wn must be multiples of 4 up to 16 dividing tm and tn");
        return false;
    }
    size_t nt = (size_t)(c->tm / c->wm) * (size_t)(c->tn / c->wn);
    if (nt > max_local || nt < 1) {
        snprintf(why, cap, "%zu work-items per group (the device allows %zu)", nt, max_local);
        return false;
    }
    size_t local = 2 * (size_t)c->tk * (size_t)(c->tm + 4 + c->tn) * sizeof(float);
    if (local > (local_mem ? local_mem : 32768)) {
        snprintf(why, cap, "two stages of tiles need %zu bytes of local memory (the device has %zu)", local,
                 local_mem ? local_mem : (size_t)32768);
        return false;
    }
    return true;
}

/* The 16-bit dtype whose values an operand's loads return (CLF_F32 when
 * none): the operand's own dtype, or the source of a cast to f32 (through
 * movement ops), as clf_gemm computes a storage float's product in f32. */
static clf_dtype operand_16bit(const clf_graph *g, uint32_t id)
{
    for (;;) {
        const clf__node *n = clf__graph_node(g, id);
        if (n->dtype == CLF_F16 || n->dtype == CLF_BF16)
            return n->dtype;
        if (n->op == CLF__OP_CAST && n->dtype == CLF_F32) {
            clf_dtype from = clf__graph_node(g, n->inputs[0])->dtype;
            return from == CLF_F16 || from == CLF_BF16 ? from : CLF_F32;
        }
        if (clf__node_class_of(n) != CLF__CLASS_MOVEMENT)
            return CLF_F32;
        id = n->inputs[0];
    }
}

void clf__gemm_facts_of(const clf_graph *g, const clf__plan *plan, uint32_t k, clf__gemm_facts *f)
{
    const clf__plan_kernel *K = &plan->kernels[k];
    const clf__node *mm = clf__graph_node(g, K->anchor);
    const clf__node *a = clf__graph_node(g, mm->inputs[0]), *b = clf__graph_node(g, mm->inputs[1]);
    uint32_t swapped_of;
    *f = (clf__gemm_facts){.m = mm->shape[mm->rank - 2], .n = mm->shape[mm->rank - 1], .k = a->shape[a->rank - 1],
                           .batch = batch_of(mm), .numel = (uint64_t)K->numel,
                           .row_stats = clf__cg_row_stats(plan, k, g, NULL, 0) != 0,
                           .a_k_fast = !operand_transposed(g, mm->inputs[0]),
                           .b_n_fast = !operand_transposed(g, mm->inputs[1]),
                           .a_plain = clf__cg_operand_plain(plan, k, g, mm->inputs[0]),
                           .b_plain = clf__cg_operand_plain(plan, k, g, mm->inputs[1]),
                           .b_plain_swapped = clf__cg_operand_plain_swapped(plan, k, g, mm->inputs[1], &swapped_of),
                           .a16 = operand_16bit(g, mm->inputs[0]), .b16 = operand_16bit(g, mm->inputs[1]),
                           .a_f32 = a->dtype == CLF_F32, .b_f32 = b->dtype == CLF_F32, .b_batch_shared = true};
    for (int d = 0; d < b->rank - 2; d++)
        f->b_batch_shared = f->b_batch_shared && b->shape[d] == 1;
}

/* Bytes of `stages` stages of the tensor-core form's tiles (gemm_mma.cl):
 * A's tm x tk and B's tk x tn values of 64-byte k steps (tk 32 16-bit
 * values), unpadded, or with each staged row padded by 16 bytes (pad: A's
 * rows are k steps where a_k_fast, else tm values; B's tn values where
 * b_n_fast, else k steps). */
static size_t mma_stages_bytes(const clf__gemm_config *c, int stages, bool pad, bool a_k_fast, bool b_n_fast)
{
    size_t tm = (size_t)c->tm, tn = (size_t)c->tn, tk = (size_t)c->tk, p = pad ? 8 : 0;
    size_t a = a_k_fast ? tm * (tk + p) : tk * (tm + p), b = b_n_fast ? tk * (tn + p) : tn * (tk + p);
    return (size_t)stages * (a + b) * 2u;
}

/* The tensor-core form's tiling when none is pinned: blocks of 32 fm rows
 * by 16 fn columns on four warps (2 x 2, each 16 fm x 8 fn), as large as
 * the product (fm 4, fn 8: 128 x 128) and halved, the longer side first,
 * while the blocks leave compute units idle, down to 32 x 32. Full 128 x
 * 128 blocks take eight warps (2 x 4, each 64 x 32) where work-groups of
 * 256 are allowed (max_local): on the H200 the prefill's up projection
 * with its silu(gate) * up epilogue (512 x 8192 x 2048, f16) took 0.088
 * ms on eight warps against 0.125 on four, the gate's plain product 0.080
 * against 0.078 (bench/results/2026-12-05-h200.md, pinned tilings). */
static clf__gemm_config mma_default_tiles(int64_t M, int64_t N, int64_t batch, uint64_t units, size_t max_local)
{
    int fm = M <= 32 ? 1 : M <= 64 ? 2 : 4, fn = N <= 32 ? 2 : N <= 64 ? 4 : 8;
    for (;;) {
        uint64_t blocks = (uint64_t)(batch > 0 ? batch : 1) * (uint64_t)((M + 32 * fm - 1) / (32 * fm)) *
                          (uint64_t)((N + 16 * fn - 1) / (16 * fn));
        if (blocks >= units || (fm == 1 && fn == 2))
            break;
        if (fm > 1 && (32 * fm >= 16 * fn || fn == 2))
            fm /= 2;
        else
            fn /= 2;
    }
    clf__gemm_config c = {.tm = 32 * fm, .tn = 16 * fn, .tk = 32, .wm = 16 * fm, .wn = 8 * fn};
    if (fm == 4 && fn == 8 && max_local >= 256)
        c.wn = 32;
    return c;
}

bool clf__gemm_mma_config_valid(const clf__gemm_config *c, size_t max_local, size_t local_mem, char *why, size_t cap)
{
    /* Powers of two: the stages' chunk permutation needs rows of 2^n values. */
    if (c->tk != 32 || c->wm < 16 || c->wn < 16 || !clf__is_pow2((uint64_t)c->wm) || !clf__is_pow2((uint64_t)c->wn) ||
        !clf__is_pow2((uint64_t)c->tm) || !clf__is_pow2((uint64_t)c->tn) || c->tm < c->wm || c->tn < c->wn ||
        c->wm * c->wn > 4096) {
        snprintf(why, cap, "tensor-core tiles: tk 32, wm and wn powers of two from 16 up to tm and tn (powers of "
                           "two), wm * wn at most 4096");
        return false;
    }
    size_t threads = 32u * (size_t)(c->tm / c->wm) * (size_t)(c->tn / c->wn);
    if (threads > max_local || threads > 1024) {
        snprintf(why, cap, "%zu work-items per group (the device allows %zu)", threads, max_local);
        return false;
    }
    size_t bytes = mma_stages_bytes(c, 2, false, true, true);
    if (bytes > (local_mem > 49152 ? 49152 : local_mem)) {
        snprintf(why, cap, "two stages of tiles need %zu bytes of local memory (the device has %zu)", bytes,
                 local_mem);
        return false;
    }
    return true;
}

/* The tensor-core form (gemm_mma.cl) that takes a GEMM, or CLF__MMA_NONE where
 * the portable forms run instead. It needs A and B both f16 or both bf16
 * values (an operand's prologue ends in that dtype, or in a cast of it to
 * f32, so its loads return exact 16-bit values), or both f32 where the
 * target allows TF32 (clf_compile_params.allow_tf32), a GPU target with
 * mma.sync and a tiling for it: a pinned one marked mma (CLFUSE_GEMM_TILE,
 * autotuning; one not so marked is the portable form's) or
 * mma_default_tiles, which needs work-groups of 128 (256 for its largest
 * blocks, else 128 on four warps) and at most 48 KiB of
 * local memory (the static local memory a kernel may take). *tiles: the
 * tiling; *pad: rows padded (else chunks permuted); *stages: as many as
 * fit, 2 to 4. */
static clf__mma_kind mma_form(const clf__gemm_facts *f, const clf__codegen_target *target, clf__gemm_config *tiles,
                              int *stages, bool *pad)
{
    const clf_dtype a = f->a16, b = f->b16;
    size_t max_local = target->max_local ? target->max_local : 256;
    size_t local_mem = target->local_mem ? target->local_mem : 32768;
    if (local_mem > 49152)
        local_mem = 49152;
    if (target->cpu || !target->tensor_cores || (target->gemm && !target->gemm->mma) || a != b)
        return CLF__MMA_NONE;
    clf__mma_kind kind = a == CLF_F16 ? CLF__MMA_F16 : a == CLF_BF16 ? CLF__MMA_BF16 : CLF__MMA_TF32;
    if (kind == CLF__MMA_TF32 && (!target->tf32 || !f->a_f32 || !f->b_f32))
        return CLF__MMA_NONE;
    *tiles = target->gemm ? *target->gemm
                          : mma_default_tiles(f->m, f->n, f->batch, target->compute_units ? target->compute_units : 1,
                                              max_local);
    tiles->mma = true;
    char why[160];
    if (!clf__gemm_mma_config_valid(tiles, max_local, local_mem, why, sizeof why))
        return CLF__MMA_NONE;
    /* Padded rows where two stages of them fit (the faster of the two
     * layouts measured: on the H200, 4096^3 f16 in 128 x 128 blocks took
     * 0.517 ms padded in two stages, 0.548 permuted in three, 0.597
     * permuted in two); the chunk permutation otherwise. Then as many
     * stages as fit, up to 4. */
    *pad = mma_stages_bytes(tiles, 2, true, f->a_k_fast, f->b_n_fast) <= local_mem;
    *stages = 2;
    while (*stages < 4 && mma_stages_bytes(tiles, *stages + 1, *pad, f->a_k_fast, f->b_n_fast) <= local_mem)
        ++*stages;
    return kind;
}

/* The few-rows form's shortest K: below it a lane's share of K is a few
 * values and the lanes' sum dominates (the H200, same call: the tiny
 * GPT-2 and BERT fixtures, products of 8 rows with K of 64 to 256, ran
 * 0.147 and 0.143 ms in it against 0.119 and 0.122 in the tiled form). */
#define GEMM_ROWS_MIN_K CLF__FEW_ROWS_MIN_K
/* The CPU form's one-row blocks: columns a block, and the fewest values of
 * K a slice (clf__codegen_gemm). */
#define ONE_ROW_COLS 2048
#define ONE_ROW_MIN_SLICE 256

/* The few-rows form (gemm_rows.cl): a GPU product whose work-groups take
 * at most 8 rows (a decode step's x @ W) over a K of GEMM_ROWS_MIN_K or
 * more, where no tiling is pinned (a pinned or autotuned tiling keeps the
 * tiled forms). B shared by the whole batch (no batch axis over 1): one
 * work-group per column block takes all BATCH * M rows, so B is read
 * once; else one per product and block, M rows. B's loads are 16 bytes (w
 * values): 8 work-items side by side along a row of B (128 bytes; a
 * transposed B, 8 columns of NT / 8 lanes along K). The geometry is from
 * bench/probes/gemv_probe.c on the H200 (one f16 row, L2 flushed,
 * bench/results/2026-12-04-decode-rows-h200.md): work-groups of 256, 4
 * loads in flight a work-item, K cut into slices (SPLIT) until there are
 * four work-groups a compute unit (K = 2048 by N = 512: 0.0074 ms against
 * 0.0183 in 16 columns a work-group, unsplit; 2048 by 2048: 0.0110
 * against 0.0199; 8192 by 2048: 0.0210 against 0.0603). Work-groups of
 * 1024 were faster still on the largest (0.0208 for 2048 by 8192, 0.0229
 * in 256) but were not shown to fit NVIDIA's register limit (with them a
 * reduction of the decoder changed form, the mark of a compile lowered
 * again for a smaller work-group). A slice keeps two loads a lane at
 * least, except in a graph with symbolic sizes, where SPLIT (a literal of
 * the template's #if, so not lifted) must not follow a symbolic K; 32
 * slices at most. Work-items of 8 rows keep 2 loads in flight. */

static clf__gemm_rows_form gemm_rows_form(const clf__gemm_facts *p, const clf__codegen_target *target)
{
    clf__gemm_rows_form f = {0};
    const int64_t M = p->m, N = p->n, K = p->k, batch = p->batch;
    if (target->cpu || target->gemm || target->no_gemm_rows || M <= 0 || N <= 0 || K < GEMM_ROWS_MIN_K)
        return f;
    bool shared = p->b_batch_shared;
    int64_t rows = shared ? batch * M : M;
    if (rows > 8) {
        shared = false;
        rows = M;
    }
    /* A symbolic graph's specialisations share programs: only one row
     * (decode's, built as it is) is a class of its own there; 2 to 8 rows
     * would be a variant no probe size sees. */
    if (rows > 8 || (target->sizes_vary && rows > 1))
        return f;
    f.rows_max = rows <= 1 ? 1 : 8;
    f.b_shared = shared;
    f.w = p->b16 == CLF_F32 ? 4 : 8;
    size_t max_local = target->max_local ? target->max_local : 256;
    f.nt = (int)(max_local >= 256 ? 256 : clf__pow2_at_most((uint64_t)max_local));
    f.u = f.rows_max > 1 ? 2 : 4;
    const bool transposed = !p->b_n_fast;
    f.cw = transposed ? 1 : f.w;
    /* The lanes' sums take a work-item a column (gemm_rows.cl): at most NT
     * columns (llvmpipe's 32 work-items a group hold 32 of the 64 that
     * eight loads of 16-bit values span). */
    f.tn = 8 * f.cw;
    while (f.tn > f.cw && f.tn > f.nt)
        f.tn /= 2;
    if (f.tn > f.nt)
        return (clf__gemm_rows_form){0};
    f.blocks = (shared ? 1 : batch) * ((N + f.tn - 1) / f.tn);
    int64_t kstep = (int64_t)(f.nt / (f.tn / f.cw)) * (transposed ? f.w : 1); /* K a round of one load a lane */
    uint64_t units = target->compute_units ? target->compute_units : 1, want = 4 * units;
    f.split = 1;
    while ((uint64_t)(f.blocks * f.split) < want && f.split < 32 &&
           (target->sizes_vary || K / (2 * f.split) >= 2 * kstep))
        f.split *= 2;
    f.kch = ((K + f.split - 1) / f.split + f.w - 1) / f.w * f.w;
    return f;
}

/* The form that takes GEMM kernel k: the few-rows form first for one row
 * (the H200's decode products took 0.0071-0.0203 ms there against
 * 0.0166-0.0595 in the tensor-core tiles, the decoder's kernels), then the
 * tensor-core form (not for a kernel computing row statistics, planner.c:
 * small products), then the few-rows form (for up to 8 rows), then the
 * portable tiles. Graphs with symbolic sizes too: a step at a new length
 * of the H200's decoder (two layers, same call) took 3.4-3.5 ms with the
 * few-rows form against 3.7-4.0 with the tiles, once its state needed no
 * allocation a length (it had cost 7.0-8.2 against 4.2-6.1). *rows gets
 * the few-rows form (rows_max 0: not it); the tensor-core kind is
 * returned with its tiling. */
static clf__mma_kind gemm_forms(const clf__gemm_facts *f, const clf__codegen_target *target,
                               clf__gemm_rows_form *rows, clf__gemm_config *tiles, int *stages, bool *pad)
{
    *rows = gemm_rows_form(f, target);
    if (rows->rows_max == 1 || f->row_stats) /* the tensor-core form computes no row statistics */
        return CLF__MMA_NONE;
    clf__mma_kind mma = mma_form(f, target, tiles, stages, pad);
    if (mma != CLF__MMA_NONE)
        *rows = (clf__gemm_rows_form){0};
    return mma;
}

/* The forms of GEMM kernel k of plan (gemm_forms). */
static clf__mma_kind kernel_forms(const clf_graph *g, const clf__plan *plan, uint32_t k,
                                  const clf__codegen_target *target, clf__gemm_rows_form *rows)
{
    clf__gemm_facts f;
    clf__gemm_facts_of(g, plan, k, &f);
    int stages;
    bool pad;
    clf__gemm_config tiles;
    return gemm_forms(&f, target, rows, &tiles, &stages, &pad);
}

bool clf__gemm_rows(const clf_graph *g, const clf__plan *plan, uint32_t k, const clf__codegen_target *target)
{
    clf__gemm_rows_form rows;
    kernel_forms(g, plan, k, target, &rows);
    return rows.rows_max != 0;
}

bool clf__gemm_tensor_cores(const clf_graph *g, const clf__plan *plan, uint32_t k, const clf__codegen_target *target)
{
    clf__gemm_rows_form rows;
    return kernel_forms(g, plan, k, target, &rows) != CLF__MMA_NONE;
}

void clf__gemm_problem_class(const clf_graph *g, const clf__plan *plan, uint32_t k, const clf__codegen_target *target,
                             clf__strbuf *out)
{
    clf__gemm_facts f;
    clf__gemm_facts_of(g, plan, k, &f);
    clf__sb_printf(out, "gemm %s m=%llu n=%llu k=%llu batch=%s a=%s%s b=%s%s", target->cpu ? "cpu" : "gpu",
                   (unsigned long long)clf__pow2_at_least((uint64_t)f.m), (unsigned long long)clf__pow2_at_least((uint64_t)f.n),
                   (unsigned long long)clf__pow2_at_least((uint64_t)f.k), f.batch > 1 ? "many" : "one",
                   f.a_k_fast ? "n" : "t", f.a_plain ? "" : "p", f.b_n_fast ? "n" : "t", f.b_plain ? "" : "p");
    clf__gemm_rows_form rows;
    clf__mma_kind mma = gemm_forms(&f, target, &rows, &(clf__gemm_config){0}, &(int){0}, &(bool){0});
    if (mma != CLF__MMA_NONE)
        clf__sb_puts(out, mma == CLF__MMA_TF32 ? " form=mma-tf32" : " form=mma");
}

clf_status clf__schedule_gemm(const clf__gemm_facts *f, const clf__codegen_target *target, uint32_t k,
                              clf__gemm_schedule *s, char *err, size_t errlen)
{
    const int64_t M = f->m, N = f->n, KK = f->k, batch = f->batch;
    *s = (clf__gemm_schedule){.stages = 2};
    /* A pinned tensor-core tiling leaves the GEMMs that form does not take
     * their default. */
    s->cfg = target->gemm && !target->gemm->mma ? *target->gemm
             : target->cpu ? cpu_default_config(target, M, N, KK, batch, f->row_stats)
                           : clf__gemm_default_config(target, M, N, KK, batch);
    size_t max_local = target->max_local ? target->max_local : 256;
    char why[160];
    clf__gemm_config mma_tiles;
    s->mma = gemm_forms(f, target, &s->rows, &mma_tiles, &s->stages, &s->pad);
    if (s->mma != CLF__MMA_NONE)
        s->cfg = mma_tiles;
    const clf__gemm_config cfg = s->cfg;
    if (!s->rows.rows_max && s->mma == CLF__MMA_NONE &&
        !clf__gemm_config_valid(&cfg, target->cpu, max_local, target->local_mem, why, sizeof why)) {
        snprintf(err, errlen, "codegen: kernel %u: GEMM tile configuration %dx%dx%d/%dx%d: %s", k, cfg.tm,
                 cfg.tn, cfg.tk, cfg.wm, cfg.wn, why);
        return CLF_ERR_INVALID_ARGUMENT;
    }

    /* The CPU form's blocks of span sub-blocks of tn columns side by side
     * (gemm_cpu.cl, CLF_SPAN): where A is packed (its loads compute a
     * prologue, a norm's row statistics, or convert f16) a block does that
     * once for all its columns, so blocks are as wide as still gives every
     * compute unit two, of equal widths (at most 4, a block's A and sums
     * in local memory; one row has blocks of its own, below). bench_decoder's
     * gate/up product with its RMS norm took 8.5 ms a decode step on 2
     * PoCL cores in 128 blocks of 128 columns, the same product without
     * the norm 3.6; at a 512-row prefill on 16 cores the down projection,
     * A = silu(gate) * up, ran at 119 GFLOP/s against the gate/up
     * product's 487, and on 2 cores the gate/up product, its f16 A read
     * in place (converted in the micro-kernel's inner loop), at 49 GFLOP/s
     * against 212 packed. */
    /* None of this where the driver ends loops early (llvmpipe,
     * target->max_loop_trips): there a bf16 product of 17 x 4096 x 36
     * with A packed (half suite, long_k_products) came out wrong, while
     * K = 1024 and M = 9 were right. Its packing loop ran 73,728 times in
     * all in a work-item (128 an entry), past the 65,535 the quirk names,
     * K = 1024's 18,432 and M = 9's 24,576 not; but an f32 product whose
     * micro-kernel loop runs 196,608 times in all is right there, so the
     * cause is not pinned down. The forms of before are kept there. */
    s->loops_cut = target->max_loop_trips != 0;
    /* The CPU form's blocks (gemm_cpu.cl), where its newer parts may run:
     * spans, one row, A's prologue and the epilogue in vectors. */
    s->cpu_blocks = target->cpu && !s->loops_cut && s->mma == CLF__MMA_NONE && !s->rows.rows_max;
    s->one_row = s->cpu_blocks && M == 1 && cfg.tm == 1;
    s->pack_a = target->cpu && (f->row_stats || !f->a_plain || (!s->loops_cut && f->a16 != CLF_F32));
    int64_t span = 1;
    const int64_t units = target->compute_units ? target->compute_units : 1;
    if (s->pack_a && s->cpu_blocks && !s->one_row) {
        const int64_t blocks_m = batch * ((M + cfg.tm - 1) / cfg.tm);
        const size_t local_mem = target->local_mem ? target->local_mem : 32768;
        for (int64_t sp = 4; sp > 1 && span == 1; sp--) {
            size_t local = ((size_t)cfg.tk * (size_t)cfg.tn + (size_t)sp * (size_t)cfg.tm * (size_t)cfg.tn +
                            (size_t)cfg.tm * (size_t)cfg.tk) * sizeof(float);
            const int64_t subs = (N + cfg.tn - 1) / cfg.tn; /* whole blocks of equal width */
            if (subs % sp == 0 && blocks_m * (subs / sp) >= 2 * units && local <= local_mem)
                span = sp;
        }
    }
    /* One row (gemm_cpu.cl, CLF_ONE_ROW): blocks of about ONE_ROW_COLS
     * columns (of equal widths where N is known; in a graph with symbolic
     * sizes ONE_ROW_COLS whatever N, the last one partial), so that each
     * step of the sweep reads runs of that many values of a row of B; K
     * cut into slices (ONE_ROW_SPLIT, a power of two up to 32) until the
     * blocks' slices give every compute unit four, each slice
     * ONE_ROW_MIN_SLICE values of K at least (except in a graph with
     * symbolic sizes, where the split, a literal of the template's #if,
     * must not follow a symbolic K); a split product's slices write their sums to the scratch and a second
     * launch adds them (an exchange inside the kernel cost the last slice
     * 0.2-0.35 ms with atomics, and plain accesses across work-groups are
     * a data race). On 2 PoCL cores the decode step's gate/up product (one
     * f16 row, K = 2048, N = 16384) took 2.4-2.6 ms in blocks of 2048
     * against 3.7-4.1 in blocks of 512 swept 128 columns at a time, and
     * the step 4.8 ms against 7.8-8.1 (bench/results/2026-12-07-s37.md). */
    int one_row_split = 1;
    int64_t one_row_kch = KK;
    if (s->one_row) {
        span = ONE_ROW_COLS / cfg.tn > 1 ? ONE_ROW_COLS / cfg.tn : 1;
        const int64_t subs = (N + cfg.tn - 1) / cfg.tn, nblocks = (subs + span - 1) / span;
        if (!target->sizes_vary && nblocks > 0) /* blocks of equal widths where N is known (N = 0: none) */
            span = (subs + nblocks - 1) / nblocks;
        const int64_t blocks = batch * ((N + cfg.tn * span - 1) / (cfg.tn * span));
        while (blocks > 0 && blocks * one_row_split < 4 * units && one_row_split < 32 &&
               (target->sizes_vary || KK / (2 * one_row_split) >= ONE_ROW_MIN_SLICE))
            one_row_split *= 2;
        one_row_kch = (KK + one_row_split - 1) / one_row_split;
    }
    s->span = span;
    s->one_row_split = one_row_split;
    s->one_row_kch = one_row_kch;
    /* float4 tile loads where an operand is a plain row-major buffer whose
     * rows split into whole float4s (aligned: every row starts at a
     * multiple of 4 elements, every tile column at a multiple of 4, and
     * buffers start at CL_DEVICE_MEM_BASE_ADDR_ALIGN), through float4
     * pointers: NVIDIA's compiler makes vload4 of an address it cannot
     * prove aligned four scalar loads (an H200 ran the 4096^3 product in
     * 3.17 ms with float4 pointers, 3.54 with vload4; bench/probes). */
    const bool tiles_form = !target->cpu && s->mma == CLF__MMA_NONE;
    s->vec_a = tiles_form && f->a_plain && KK % 4 == 0 && cfg.tk % 4 == 0;
    s->vec_b = tiles_form && f->b_plain && N % 4 == 0 && cfg.tn % 4 == 0;
    /* gemm_cpu.cl's VW: the width of its vectors of B, of A and of the epilogue. */
    s->cpu_vw = cfg.wn < 16 ? cfg.wn : 16;
    return CLF_OK;
}

void clf__gemm_launch(const clf__gemm_facts *f, const clf__gemm_schedule *s, bool cpu, clf__kernel_code *out)
{
    /* Launch: one work-group per tile (GPU) or per work-item block (CPU). */
    const clf__gemm_config cfg = s->cfg;
    const clf__gemm_rows_form rows = s->rows;
    const int64_t M = f->m, N = f->n, batch = f->batch, span = s->span;
    const int one_row_split = s->one_row_split;
    int64_t tiles = batch * ((M + cfg.tm - 1) / cfg.tm) * ((N + cfg.tn * span - 1) / (cfg.tn * span));
    if (rows.rows_max) {
        out->local = (size_t)rows.nt;
        out->global = (size_t)(rows.split * rows.blocks) * out->local;
        if (rows.split > 1) /* counters (padded to 32), then the slices' sums (gemm_rows.cl) */
            out->state_bytes = ((uint64_t)(rows.blocks + 31) / 32 * 32 +
                                (uint64_t)(rows.split * rows.blocks) * (uint64_t)rows.rows_max * (uint64_t)rows.tn) *
                               4u;
    } else if (cpu) {
        out->local = 1;
        out->global = (size_t)tiles * (size_t)one_row_split;
        if (one_row_split > 1) { /* the slices' sums, then a launch that adds them (gemm_cpu.cl) */
            out->scratch_bytes = (uint64_t)tiles * (uint64_t)one_row_split * (uint64_t)(cfg.tn * span) * 4u;
            out->final_local = 1;
            out->final_global = (size_t)tiles * (size_t)(cfg.tn * span / s->cpu_vw);
        }
    } else if (s->mma != CLF__MMA_NONE) {
        out->local = 32u * (size_t)(cfg.tm / cfg.wm) * (size_t)(cfg.tn / cfg.wn);
        out->global = (size_t)tiles * out->local;
    } else {
        out->local = (size_t)(cfg.tm / cfg.wm) * (size_t)(cfg.tn / cfg.wn);
        out->global = (size_t)tiles * out->local;
    }
    if (f->numel == 0)
        out->global = 0;
    out->vec = 1;
    out->items = 1;
    /* What CLFUSE_LOGS=schedule prints. */
    if (rows.rows_max) {
        out->schedule = (clf__schedule){.form = "gpu-rows", .vec = 1, .wg = out->local,
                                        .lanes = (uint64_t)(rows.nt / (rows.tn / rows.cw)),
                                        .tiles = {.tm = rows.rows_max, .tn = rows.tn, .tk = 1,
                                                  .wm = rows.rows_max, .wn = rows.cw},
                                        .split = (uint64_t)rows.split, .chunk = (uint64_t)rows.kch,
                                        .unroll = (uint64_t)rows.u,
                                        .vec_b = f->b_n_fast ? f->b_plain : f->b_plain_swapped};
    } else if (s->mma != CLF__MMA_NONE) {
        out->schedule = (clf__schedule){.form = "tensor-cores", .vec = 1, .wg = out->local, .tiles = cfg,
                                        .tensor_cores = s->mma == CLF__MMA_F16    ? "mma.m16n8k16.f16"
                                                        : s->mma == CLF__MMA_BF16 ? "mma.m16n8k16.bf16"
                                                                                  : "mma.m16n8k8.tf32"};
    } else {
        out->schedule = (clf__schedule){.form = s->one_row ? "cpu-one-row" : cpu ? "cpu-blocks" : "gpu-tiles",
                                        .vec = 1, .wg = out->local, .tiles = cfg, .vec_a = s->vec_a, .vec_b = s->vec_b};
        if (s->one_row) {
            out->schedule.tiles.tn = (int)(cfg.tn * span);
            out->schedule.split = (uint64_t)one_row_split;
            out->schedule.chunk = (uint64_t)s->one_row_kch;
        }
    }

}
