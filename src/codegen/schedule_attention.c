/* The attention kind's schedule (schedule.h): the form (the CPU's query
 * rows a work-item, the GPU's query blocks over K/V tiles, the tensor
 * cores' mma.sync, the decode form's key chunks and combine), its tiles
 * and its launch, from the head's extents and the device's facts. The
 * measurements behind each choice are cited beside it. */
#include "codegen/schedule.h"
#include "util/pow2.h"

#include <stdio.h>

/* The CPU form: keys a fold, rows a work-item (at most), and the
 * work-items a compute unit it keeps at least. On PoCL (AVX-512, 2 cores,
 * f32 B1 H8 S512 D64, one thread) 8 keys and 4 rows took 10.8 ms, 2 rows
 * 11.2, 1 row 12.3, 4 keys and 4 rows 12.5; f16 storage 13.4 ms with 4
 * rows, 19.9 with 1. */
#define CPU_CH 8
#define CPU_RB 4
#define CPU_ITEMS_PER_UNIT 4

/* The decode form (attention_decode.cl) aims for this many work-groups a
 * compute unit: its sweep is bound by memory, which wants many loads in
 * flight on every unit, but each group's chunk is a chain of rounds of
 * loads, and fewer, longer chunks pay fewer of them. On the H100 (f16, 32
 * heads of 128 over 4096 keys, one call, the combine reading through
 * local memory): B1 0.061 ms with 8 a unit (32 chunks of 128 keys), 0.047
 * with 4 (16 of 256; SDPA 0.056); B8 0.286 with 8 chunks of 512 either
 * way, 0.293 with 16 of 256. */
#define DECODE_GROUPS_PER_UNIT 4
/* Keys a chunk of the decode form: at least one pass of the work-group's
 * keys, at most 512 (its weights sit in local memory, and the states stay
 * a small part of the traffic). A work-group's time is a chain of rounds
 * of loads, each waiting on memory (the query, each piece of K, each
 * group of V's loads): on the H200 a chunk of 128 keys took about 30 us
 * whatever the number of chunks (32 heads over 128 keys, one chunk each:
 * 0.036 ms; over 1024, 8 chunks each: 0.020), so chunks are as short as
 * the device's fill allows and each round loads as much as it can. */
#define DECODE_CHUNK_MIN 64
#define DECODE_CHUNK_MAX 512
/* A chunk pinned by hand (CLFUSE_DECODE_CHUNK), at most. */
#define DECODE_CHUNK_PIN_MAX 4096

/* Columns of K a piece of the decode form's staging (kt, WG keys x KP
 * columns through local memory) at most: a warp's 32 work-items load
 * consecutive columns of one row; heads of up to 64 in one piece. */
#define DECODE_PIECE_MAX 64
/* Loads of V a work-item of the decode form issues before using them: as
 * the sweep over V is bound by how many loads wait on memory at once, a
 * chunk of 64 keys in two rounds where a work-item takes one column. In
 * the wide form (16-byte loads of 8 values) DECODE_V_LOADS_WIDE. */
#define DECODE_V_LOADS 32
#define DECODE_V_LOADS_WIDE 8

/* The split kernel's local memory: q (d rounded up to whole pieces), the
 * piece of K (rows padded by one float), the chunk's weights, one float a
 * work-item for the reductions, and the combine's three a chunk. */
static uint64_t decode_local_bytes(const clf__attention_decode *G, int64_t d)
{
    uint64_t dk = ((uint64_t)d + G->kp - 1) / G->kp * G->kp;
    return (dk + G->wg * (G->kp + 1) + G->chunk + G->wg + 3 * G->split) * sizeof(float);
}

static clf__attention_decode decode_geometry_of(const clf__codegen_target *target, uint64_t rows, int64_t sk, int64_t d,
                                                int64_t dv, bool kv16)
{
    clf__attention_decode G = {0};
    const uint64_t lanes_max = clf__pow2_at_most(target->max_local ? target->max_local : 256);
    const uint64_t cus = target->compute_units ? target->compute_units : 1;
    const uint64_t local_mem = target->local_mem ? target->local_mem : 32768;
    /* A work-item per column of V up to 256 columns, and at least 64 so
     * that a chunk's logits take few passes. */
    const uint64_t dv2 = clf__pow2_at_least((uint64_t)dv);
    G.wg = dv2 < 64 ? 64 : dv2 > 256 ? 256 : dv2;
    if (G.wg > lanes_max)
        G.wg = lanes_max;
    G.vl = dv2 < G.wg ? dv2 : G.wg;
    G.kg = G.wg / G.vl;
    /* Enough chunks that rows x split work-groups fill the device, each a
     * whole number of passes of wg keys within the bounds above. */
    const uint64_t want = DECODE_GROUPS_PER_UNIT * cus, nrows = rows ? rows : 1;
    G.split = (want + nrows - 1) / nrows;
    uint64_t chunk = ((uint64_t)sk + G.split - 1) / G.split;
    chunk = (chunk + G.wg - 1) / G.wg * G.wg;
    const uint64_t lo = G.wg > DECODE_CHUNK_MIN ? G.wg : DECODE_CHUNK_MIN;
    G.chunk = chunk < lo ? lo : chunk > DECODE_CHUNK_MAX ? DECODE_CHUNK_MAX : chunk;
    if (target->decode_chunk) /* pinned (CLFUSE_DECODE_CHUNK; clf__schedule_attention checks it) */
        G.chunk = target->decode_chunk;
    G.split = ((uint64_t)sk + G.chunk - 1) / G.chunk;
    /* Pieces as wide as D up to DECODE_PIECE_MAX columns, narrower while
     * the local memory does not fit. */
    const uint64_t d2 = clf__pow2_at_least((uint64_t)d);
    G.kp = d2 < DECODE_PIECE_MAX ? d2 : DECODE_PIECE_MAX;
    while (G.kp > 1 && decode_local_bytes(&G, d) > local_mem)
        G.kp /= 2;
    G.local = decode_local_bytes(&G, d) <= local_mem ? decode_local_bytes(&G, d) : 0;
    /* DECODE_V_LOADS loads of V in flight: vu keys of dvl columns each. */
    const uint64_t dvl = ((uint64_t)dv + G.vl - 1) / G.vl;
    G.vu = DECODE_V_LOADS / dvl > 1 ? DECODE_V_LOADS / dvl : 2;
    /* The wide form: K's pieces of whole 16-byte loads, and dv / 8 work-items
     * across a V row (a power of two dividing the work-group), each its 8
     * columns a load; the kg groups' sums meet in K's piece of local
     * memory (at least 8 floats a work-item once kp >= 8). */
    const uint64_t vl8 = (uint64_t)dv / 8;
    if (kv16 && G.kp >= 8 && d % 8 == 0 && dv % 8 == 0 && vl8 == clf__pow2_at_least(vl8) && vl8 <= G.wg) {
        G.wide = true;
        G.vl = vl8;
        G.kg = G.wg / G.vl;
        G.vu = DECODE_V_LOADS_WIDE;
    }
    return G;
}

/* Bytes of the tensor-core form's tiles of bkt keys: K as rows of dp16 + 8
 * 16-bit values, V as rows of dvp16 + 8. */
static uint64_t mma_tiles_bytes(uint64_t bkt, uint64_t dp16, uint64_t dvp16)
{
    return bkt * (dp16 + 8 + dvp16 + 8) * 2;
}

/* The GPU form's local memory (attention_gpu.cl) for bq query rows, tiles
 * of bk keys, tk keys a work-item: Q's block and K's tile as rows of D
 * padded to float4s plus one, V's tile as rows of DV padded to 4 (bk /
 * tk) columns, the weights and the rows' maxima as rows of bq + 4. */
static uint64_t gpu_local_bytes(uint64_t bq, uint64_t bk, uint64_t tk, int64_t d, int64_t dv)
{
    const uint64_t kg = bk / tk, dpp = (uint64_t)(d + 3) / 4 * 4 + 4;
    const uint64_t dvp = ((uint64_t)dv + 4 * kg - 1) / (4 * kg) * 4 * kg;
    return 4 * (bq * dpp + bk * dpp + bk * dvp + (bk + kg) * (bq + 4));
}

/* The local memory a GPU or tensor-core form kernel may take: the
 * device's, at most the 48 KiB of static local memory NVIDIA's driver
 * allows a kernel. */
static uint64_t kernel_local_cap(const clf__codegen_target *target)
{
    const uint64_t local_mem = target->local_mem ? target->local_mem : 32768;
    return local_mem < 49152 ? local_mem : 49152;
}

/* The GPU form's tiles: bq query rows a work-group (four a work-item),
 * tiles of bk keys, tk a work-item (kg = bk / tk work-items across a
 * tile's keys and across DV). Taken in order of preference, the first
 * whose work-items the device allows and whose tiles fit its local
 * memory: kg 8 (the accumulators of four rows at 8 columns for heads of
 * 64), the most rows, then the most keys a work-item; fewer rows where
 * sq is shorter than the block. Returns false if none fits. */
static bool gpu_tiles_of(const clf__codegen_target *target, int64_t sq, int64_t d, int64_t dv, uint64_t *bq,
                         uint64_t *bk, uint64_t *tk)
{
    static const uint8_t prefs[][2] = {{64, 4}, {64, 2}, {32, 4}, {32, 2}, {64, 1}, {32, 1}, {16, 4}, {16, 2},
                                       {16, 1}, {8, 4},  {8, 2},  {8, 1},  {4, 4},  {4, 2},  {4, 1}};
    const uint64_t max_local = target->max_local ? target->max_local : 256;
    uint64_t rows = 4;
    while (rows < 64 && rows < (uint64_t)sq)
        rows *= 2;
    for (uint64_t kg = 8; kg >= 1; kg /= 2)
        for (size_t i = 0; i < sizeof prefs / sizeof prefs[0]; i++) {
            const uint64_t q = prefs[i][0], t = prefs[i][1];
            if (q > rows || q / 4 * kg > max_local || gpu_local_bytes(q, kg * t, t, d, dv) > kernel_local_cap(target))
                continue;
            *bq = q;
            *bk = kg * t;
            *tk = t;
            return true;
        }
    return false;
}

bool clf__cg_attention_fits(const clf__codegen_target *target, int64_t batch, int64_t sq, int64_t sk, int64_t d,
                            int64_t dv, char *why, size_t cap)
{
    const uint64_t local_mem = target->local_mem ? target->local_mem : 32768;
    if (!target->cpu && gpu_local_bytes(4, 1, 1, d, dv) > kernel_local_cap(target)) {
        snprintf(why, cap, "a head of %lld + %lld floats does not fit the kernel's tiles in %llu bytes of local "
                 "memory", (long long)d, (long long)dv, (unsigned long long)kernel_local_cap(target));
        return false;
    }
    const bool decode = !target->cpu && sq <= 4 && sk >= 64;
    /* (A pinned chunk that does not fit is refused by the schedule, by name.) */
    clf__codegen_target unpinned = *target;
    unpinned.decode_chunk = 0;
    if (decode && decode_geometry_of(&unpinned, (uint64_t)batch * (uint64_t)sq, sk, d, dv, false).local == 0) {
        snprintf(why, cap, "a decode step's head of %lld floats does not fit %llu bytes of local memory",
                 (long long)d, (unsigned long long)local_mem);
        return false;
    }
    if (target->max_loop_trips && (uint64_t)sk > target->max_loop_trips) {
        snprintf(why, cap, "its sweep over %lld keys needs loops of as many iterations; this driver ends every "
                 "loop after %llu (runtime/driver_quirks.h)", (long long)sk,
                 (unsigned long long)target->max_loop_trips);
        return false;
    }
    return true;
}

clf_status clf__schedule_attention(const clf__attention_facts *f, const clf__codegen_target *target, uint32_t k,
                                  clf__attention_schedule *s, char *err, size_t errlen)
{
    const int64_t batch = f->batch, sq = f->sq, sk = f->sk, d = f->d, dv = f->dv;
    size_t max_local = target->max_local ? target->max_local : 256;
    /* (The planner asked clf__cg_attention_fits before it planned this
     * kernel; a plan made without asking is refused here.) */
    char unfit[200] = "";
    uint64_t bq = 4, bk = 1, tk = 1;
    if (!clf__cg_attention_fits(target, batch, sq, sk, d, dv, unfit, sizeof unfit) ||
        (!target->cpu && !gpu_tiles_of(target, sq, d, dv, &bq, &bk, &tk))) {
        snprintf(err, errlen, "codegen: kernel %u: attention: %s", k,
                 unfit[0] ? unfit : "no tiling of the GPU form fits the device");
        return CLF_ERR_UNSUPPORTED;
    }
    const clf__attention_tile *pin = target->attention_tile;
    if (!target->cpu && pin && pin->fma_keys) {
        /* The FMA form's tiling pinned by hand (CLFUSE_ATTENTION_TILE=fma,...):
         * refused where the form cannot run it. */
        const uint64_t q = (uint64_t)pin->rows, t = (uint64_t)pin->fma_keys, keys = (uint64_t)pin->bkt;
        const uint64_t kg = t && keys % t == 0 ? keys / t : 0;
        char why[120] = "";
        if (pin->rows < 4 || pin->rows > 256 || q % 4 != 0)
            snprintf(why, sizeof why, "rows must be a multiple of 4 from 4 to 256");
        else if (pin->bkt < 1 || kg == 0 || kg > 32 || (kg & (kg - 1)) != 0)
            snprintf(why, sizeof why, "keys / keys_per_item must be a power of two up to 32");
        else if (q / 4 * kg > (uint64_t)max_local)
            snprintf(why, sizeof why, "%llu work-items exceed the device's %zu", (unsigned long long)(q / 4 * kg),
                     max_local);
        else if (gpu_local_bytes(q, keys, t, d, dv) > kernel_local_cap(target))
            snprintf(why, sizeof why, "its tiles (a head of %lld) exceed %llu bytes of local memory", (long long)d,
                     (unsigned long long)kernel_local_cap(target));
        if (why[0]) {
            snprintf(err, errlen,
                     "codegen: kernel %u: attention: the pinned FMA tiling %d,%d,%d (CLFUSE_ATTENTION_TILE: "
                     "fma,rows,keys,keys_per_item) does not fit: %s",
                     k, pin->rows, pin->bkt, pin->fma_keys, why);
            return CLF_ERR_UNSUPPORTED;
        }
        bq = q;
        bk = keys;
        tk = t;
    }
    /* A few query rows over many keys (decode): the keys split over
     * work-groups, then a combine (attention_decode.cl). */
    const uint64_t rows = (uint64_t)batch * (uint64_t)sq;
    const bool decode = !target->cpu && sq <= 4 && sk >= 64;
    const clf__attention_decode G =
        decode ? decode_geometry_of(target, rows, sk, d, dv, f->kv16 && !target->no_decode_wide)
               : (clf__attention_decode){0};
    if (decode && target->decode_chunk &&
        (G.chunk % G.wg != 0 || G.chunk < DECODE_CHUNK_MIN || G.chunk > DECODE_CHUNK_PIN_MAX || G.local == 0)) {
        snprintf(err, errlen,
                 "codegen: kernel %u: attention: the pinned decode chunk of %u keys (CLFUSE_DECODE_CHUNK) does not "
                 "fit: a multiple of the work-group's %llu keys from %d to %d whose weights fit the local memory",
                 k, target->decode_chunk, (unsigned long long)G.wg, DECODE_CHUNK_MIN, DECODE_CHUNK_PIN_MAX);
        return CLF_ERR_UNSUPPORTED;
    }
    /* The tensor-core form (attention_mma.cl): f16 or bf16 operands on a
     * target with mma.sync, eight warps a work-group (four where the
     * device allows fewer than 256 work-items), tiles of BKT keys (32 for
     * heads up to 64, else 64; halved while K's and V's tiles of 16-bit
     * values, rows padded, exceed 48 KiB, the static local memory a kernel
     * may take, or the device's), the next tile read while the current one
     * is multiplied. On the H200 (f16, B8 H16 S1024, medians of 50, one
     * call; full / causal at D = 64, then causal at D = 128, B4 H32): 4
     * warps, tiles of 64: 0.273 / 0.179, 0.351 ms without reading ahead,
     * 0.309 / 0.187, 0.352 with; 8 warps reading ahead: tiles of 64 0.255 /
     * 0.177, 0.313; tiles of 32 0.233 / 0.167, 0.342. Heads up to 64: four
     * warps of 32 query rows (two m tiles, each K and V fragment read once
     * for both) over tiles of 64 keys. On the H100 (f16 B8 H16 S1024 D64,
     * full / causal, medians of 20, one call, V read by ldmatrix .trans;
     * bench/results/2026-12-07-s41.md): 8 warps of 16 rows, tiles of 32
     * 0.185 / 0.148 ms; 4 x 32 rows, tiles of 32 0.199 / 0.129; 8 x 32, 32:
     * 0.197 / 0.168; 4 x 32, 64: 0.159 / 0.122; 2 x 32, 64: 0.211 / 0.177. */
    clf_dtype mma = decode || max_local < 128 || d > 256 || dv > 256 || target->cpu || !target->tensor_cores
                        ? CLF_F32
                        : f->mma16;
    int mma_warps = max_local >= 256 && d > 64 ? 8 : 4, mma_rows = d <= 64 ? 32 : 16;
    uint64_t bkt = 64, dp16 = (uint64_t)((d + 15) / 16 * 16), dvp16 = (uint64_t)((dv + 15) / 16 * 16);
    const size_t mma_local = (size_t)kernel_local_cap(target);
    if (mma != CLF_F32 && pin && !pin->fma_keys) {
        /* A tiling pinned by hand (CLFUSE_ATTENTION_TILE): refused where
         * the form cannot run it. */
        const bool pow2_warps = pin->warps == 1 || pin->warps == 2 || pin->warps == 4 || pin->warps == 8;
        const bool keys_ok = pin->bkt == 16 || pin->bkt == 32 || pin->bkt == 64 || pin->bkt == 128;
        const int stages = pin->stages ? pin->stages : 1;
        char why[120] = "";
        if (!pow2_warps || (size_t)(32 * pin->warps) > max_local)
            snprintf(why, sizeof why, "warps must be 1, 2, 4 or 8 within the device's %zu work-items", max_local);
        else if (pin->rows != 16 && pin->rows != 32)
            snprintf(why, sizeof why, "rows must be 16 or 32");
        else if (!keys_ok)
            snprintf(why, sizeof why, "keys must be 16, 32, 64 or 128");
        else if (stages != 1 && stages != 2)
            snprintf(why, sizeof why, "stages must be 1 or 2");
        else if (stages == 2 && !f->kv16)
            snprintf(why, sizeof why, "two stages need K and V as 16-bit buffers read by index arithmetic alone, which they are not");
        else if (stages * mma_tiles_bytes((uint64_t)pin->bkt, dp16, dvp16) > mma_local)
            snprintf(why, sizeof why, "its tiles (a head of %lld) exceed %zu bytes of local memory", (long long)d,
                     mma_local);
        if (why[0]) {
            snprintf(err, errlen,
                     "codegen: kernel %u: attention: the pinned tensor-core tiling %d,%d,%d,%d "
                     "(CLFUSE_ATTENTION_TILE: warps,rows,keys[,stages]) does not fit: %s",
                     k, pin->warps, pin->rows, pin->bkt, pin->stages, why);
            return CLF_ERR_UNSUPPORTED;
        }
        mma_warps = pin->warps;
        mma_rows = pin->rows;
        bkt = (uint64_t)pin->bkt;
    }
    while (bkt > 16 && mma_tiles_bytes(bkt, dp16, dvp16) > mma_local)
        bkt /= 2;
    if (mma_tiles_bytes(bkt, dp16, dvp16) > mma_local)
        mma = CLF_F32;
    /* Two stages filled by cp.async where K and V are 16-bit buffers read
     * by index arithmetic alone (f->kv16) and two stages of tiles fit; else
     * one, filled through registers read a tile ahead. On the H100 (f16 B8
     * H16 S1024 D64, 4 x 32 rows over 64 keys, one call): 0.158 / 0.122 ms
     * full / causal against 0.162 / 0.123 with one stage (255 registers a
     * work-item either way, no spills). */
    int mma_stages = f->kv16 && 2 * mma_tiles_bytes(bkt, dp16, dvp16) <= mma_local ? 2 : 1;
    if (pin && !pin->fma_keys && pin->stages)
        mma_stages = pin->stages;
    *s = (clf__attention_schedule){.decode = decode,
                                   .G = G,
                                   .bq = bq,
                                   .bk = bk,
                                   .tk = tk,
                                   .mma = mma,
                                   .mma_warps = mma_warps,
                                   .mma_rows = mma_rows,
                                   .bkt = bkt,
                                   .mma_stages = mma != CLF_F32 ? mma_stages : 0,
                                   .state_floats = rows * G.split * (uint64_t)(dv + 2)};
    /* The CPU form (attention_cpu.cl): vectors of the device's native
     * float width (16 on PoCL with AVX-512: 12.3 ms against 13.6 with 8
     * in the case above, 1 row; D128 18.7 against 24.1) along D and DV,
     * keys folded CPU_CH at a time, rows blocked CPU_RB a work-item, fewer
     * while that would leave under CPU_ITEMS_PER_UNIT work-items a compute
     * unit (decode: one row a head). */
    int vw = target->float_width >= 16 ? 16 : target->float_width == 0 || target->float_width >= 8 ? 8 : 4;
    uint64_t rb = CPU_RB, units = target->compute_units ? target->compute_units : 1;
    while (rb > 1 &&
           (rb > (uint64_t)sq || (uint64_t)batch * (((uint64_t)sq + rb - 1) / rb) < CPU_ITEMS_PER_UNIT * units))
        rb /= 2;
    s->vw = vw;
    s->rb = rb;
    s->keys = CPU_CH;
    return CLF_OK;
}

void clf__attention_launch(const clf__attention_facts *f, const clf__attention_schedule *s, bool cpu,
                           clf__kernel_code *out)
{
    const int64_t batch = f->batch, sq = f->sq, d = f->d;
    const clf__attention_decode G = s->G;
    const uint64_t rows = (uint64_t)batch * (uint64_t)sq, rb = s->rb, bq = s->bq, bk = s->bk, bkt = s->bkt;
    const bool decode = s->decode;
    const clf_dtype mma = s->mma;
    const int mma_warps = s->mma_warps, mma_rows = s->mma_rows, vw = s->vw;
    const uint64_t state_floats = s->state_floats;
    if (cpu) {
        out->local = 1;
        out->global = (size_t)((uint64_t)batch * (((uint64_t)sq + rb - 1) / rb));
    } else if (decode) {
        out->local = (size_t)G.wg;
        out->global = (size_t)(rows * G.split * G.wg);
        /* counters (padded to 32), then the chunks' states (attention_decode.cl) */
        out->state_bytes = ((rows + 31) / 32 * 32 + state_floats) * 4u;
    } else if (mma != CLF_F32) {
        out->local = (size_t)(32 * mma_warps);
        const uint64_t bqm = (uint64_t)mma_rows * (uint64_t)mma_warps;
        out->global = (size_t)((uint64_t)batch * (((uint64_t)sq + bqm - 1) / bqm) * out->local);
    } else {
        out->local = (size_t)(bq / 4 * (bk / s->tk));
        out->global = (size_t)((uint64_t)batch * (((uint64_t)sq + bq - 1) / bq) * out->local);
    }
    if (f->numel == 0)
        out->global = 0;
    out->vec = 1;
    out->items = 1;
    out->schedule = (clf__schedule){.form = cpu ? "cpu" : "gpu", .vec = cpu ? vw : 1,
                                    .wg = out->local, .online_softmax = true};
    if (decode) {
        out->schedule.form = "split-keys";
        out->schedule.lanes = G.vl;
        out->schedule.split = G.split;
        out->schedule.chunk = G.chunk;
        /* The scores' tile: one query row x wg keys, kp columns of K a
         * piece, a key a work-item. */
        out->schedule.tiles = (clf__gemm_config){.tm = 1, .tn = (int)G.wg, .tk = (int)G.kp, .wm = 1, .wn = 1};
        out->schedule.unroll = G.vu;
        out->schedule.local_bytes = G.local;
        if (G.wide)
            out->schedule.vec = 8; /* 16-bit values a load of K and V */
    } else if (mma != CLF_F32) {
        out->schedule.form = "tensor-cores";
        out->schedule.tiles =
            (clf__gemm_config){.tm = mma_rows * mma_warps, .tn = (int)bkt, .tk = 16, .wm = mma_rows, .wn = (int)bkt};
        out->schedule.tensor_cores = mma == CLF_F16 ? "mma.m16n8k16.f16" : "mma.m16n8k16.bf16";
        out->schedule.copy_stages = s->mma_stages == 2 ? 2 : 0;
    } else if (!cpu) {
        out->schedule.tiles =
            (clf__gemm_config){.tm = (int)bq, .tn = (int)bk, .tk = (int)d, .wm = 4, .wn = (int)s->tk};
    }
    if (cpu) {
        out->schedule.rows = rb;
        out->schedule.keys = s->keys;
    }
}
