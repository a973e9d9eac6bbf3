/* The plan and source cache: what clf_compile lowers a graph to (buffer
 * table, memory plan, every kernel's name, ops, OpenCL C source, parameters
 * and launch geometry, the statistics) kept on disk next to the program
 * binaries, so that a warm compile skips the planner and codegen.
 *
 * Key. The program cache's device fields (platform, device, driver, address
 * bits, codegen version, templates' hash), a hash of the library's own
 * sources (a rebuilt planner must not load an old plan), the codegen target
 * (CPU or GPU form, work-group limit, fp64, compute units), the memory
 * plan's alignment, the compile params that change the plan, and the
 * graph's canonical text (graph_key.c: every node and attribute, constants
 * by the SHA-256 of their bytes, names of inputs and outputs). The entry
 * holds the whole key text and a load compares it.
 *
 * Entry: a cache_file.h file, magic "CLFUSEPL", extension ".clplan". The
 * payload is little-endian and length-prefixed throughout; a payload that
 * does not parse or does not fit the graph (a buffer, node or parameter out
 * of range, an offset past the scratch) is discarded like a corrupt file, so
 * a damaged entry costs a rebuild, never a wrong executable. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph_key.h"
#include "runtime/cache_file.h"
#include "runtime/runtime_internal.h"
#include "util/alloc.h"
#include "util/log.h"
#include "util/strbuf.h"
#include "util/text.h"

#define MAGIC "CLFUSEPL"
#define FORMAT_VERSION 3u /* 2: kernel entries apart from names; 3: kernels' own state */

extern const char clf__source_hash[];

static_assert(sizeof(clf_plan_stats) % sizeof(uint64_t) == 0, "clf_plan_stats is all uint64_t");

char *clf__plan_cache_key(const clf_context *ctx, const clf_graph *g, const clf_compile_params *params,
                          const clf__codegen_target *target)
{
    if (!ctx->cache_dir || ctx->plan_cache_off)
        return NULL;
    clf__strbuf sb = {0};
    char num[64];
    clf__sb_printf(&sb, "clfuse plan cache key %u\n", FORMAT_VERSION);
    clf__sb_puts(&sb, ctx->cache_device_key);
    clf__cache_key_field(&sb, "source-hash", clf__source_hash);
    snprintf(num, sizeof num, "%d", (int)target->cpu);
    clf__cache_key_field(&sb, "target-cpu", num);
    snprintf(num, sizeof num, "%zu", target->max_local);
    clf__cache_key_field(&sb, "target-max-local", num);
    snprintf(num, sizeof num, "%d", (int)target->fp64);
    clf__cache_key_field(&sb, "target-fp64", num);
    snprintf(num, sizeof num, "%" PRIu32, target->compute_units);
    clf__cache_key_field(&sb, "target-compute-units", num);
    snprintf(num, sizeof num, "%" PRIu64, ctx->base_align);
    clf__cache_key_field(&sb, "base-align", num);
    snprintf(num, sizeof num, "%d", params && params->disable_fusion);
    clf__cache_key_field(&sb, "disable-fusion", num);
    snprintf(num, sizeof num, "%d", params ? (int)params->kernel_style : 0);
    clf__cache_key_field(&sb, "kernel-style", num);
    snprintf(num, sizeof num, "%zu", target->local_mem);
    clf__cache_key_field(&sb, "target-local-mem", num);
    snprintf(num, sizeof num, "%d", target->float_width);
    clf__cache_key_field(&sb, "target-float-width", num);
    snprintf(num, sizeof num, "%d", (int)target->warp_shuffle);
    clf__cache_key_field(&sb, "target-warp-shuffle", num);
    snprintf(num, sizeof num, "%d", (int)target->tensor_cores);
    clf__cache_key_field(&sb, "target-tensor-cores", num);
    snprintf(num, sizeof num, "%d", (int)target->tf32);
    clf__cache_key_field(&sb, "target-tf32", num);
    snprintf(num, sizeof num, "%d", (int)target->no_decode_wide);
    clf__cache_key_field(&sb, "target-no-decode-wide", num);
    snprintf(num, sizeof num, "%u", (unsigned)target->decode_chunk);
    clf__cache_key_field(&sb, "target-decode-chunk", num);
    snprintf(num, sizeof num, "%d", (int)target->no_gemm_rows);
    clf__cache_key_field(&sb, "target-no-gemm-rows", num);
    snprintf(num, sizeof num, "%d", (int)target->merge_products);
    clf__cache_key_field(&sb, "target-merge-products", num);
    /* Build options decide whether a form builds (inline PTX, or its
     * emulation under -DCLF_MMA_EMULATE=1), and so which plan a compile
     * that lowered again stored. */
    const char *build_options = getenv("CLFUSE_BUILD_OPTIONS");
    clf__cache_key_field(&sb, "build-options", build_options ? build_options : "");
    snprintf(num, sizeof num, "%" PRIu32, target->max_loop_trips);
    clf__cache_key_field(&sb, "target-max-loop-trips", num);
    snprintf(num, sizeof num, "%d", (int)target->small_code);
    clf__cache_key_field(&sb, "target-small-code", num);
    if (target->gemm)
        snprintf(num, sizeof num, "%d,%d,%d,%d,%d%s", target->gemm->tm, target->gemm->tn, target->gemm->tk,
                 target->gemm->wm, target->gemm->wn, target->gemm->mma ? ",mma" : "");
    else
        snprintf(num, sizeof num, "default");
    clf__cache_key_field(&sb, "gemm-tile", num);
    if (target->attention_tile)
        snprintf(num, sizeof num, "%d,%d,%d,%d,%d", target->attention_tile->warps, target->attention_tile->rows,
                 target->attention_tile->bkt, target->attention_tile->stages, target->attention_tile->fma_keys);
    else
        snprintf(num, sizeof num, "default");
    clf__cache_key_field(&sb, "attention-tile", num);
    /* Environment knobs that change generated code. */
    const char *env_tune = getenv("CLFUSE_AUTOTUNE");
    snprintf(num, sizeof num, "%d", (params && params->autotune) || (env_tune && strcmp(env_tune, "1") == 0));
    clf__cache_key_field(&sb, "autotune", num);
    clf__strbuf gk = {0};
    clf__graph_key(g, &gk);
    if (!clf__sb_ok(&gk)) {
        clf__sb_free(&gk);
        clf__sb_free(&sb);
        return NULL;
    }
    clf__cache_key_field(&sb, "graph", clf__sb_str(&gk));
    clf__sb_free(&gk);
    return clf__sb_take(&sb);
}

char *clf__plan_cache_path(const clf_context *ctx, const char *key)
{
    return ctx->cache_dir ? clf__cache_entry_path(ctx->cache_dir, key, ".clplan") : NULL;
}

/* ---- Writing the payload ------------------------------------------------ */

static void w_u64(clf__strbuf *sb, uint64_t v)
{
    char b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (char)(unsigned char)(v >> (8 * i));
    clf__sb_putn(sb, b, 8);
}

static void w_u32(clf__strbuf *sb, uint32_t v)
{
    char b[4];
    for (int i = 0; i < 4; i++)
        b[i] = (char)(unsigned char)(v >> (8 * i));
    clf__sb_putn(sb, b, 4);
}

/* NULL is written as length UINT32_MAX. */
static void w_str(clf__strbuf *sb, const char *s)
{
    if (!s) {
        w_u32(sb, UINT32_MAX);
        return;
    }
    size_t n = strlen(s);
    if (n >= UINT32_MAX) {
        sb->failed = true;
        return;
    }
    w_u32(sb, (uint32_t)n);
    clf__sb_putn(sb, s, n);
}

static void w_io(clf__strbuf *sb, const clf__io *io)
{
    w_str(sb, io->name);
    w_u32(sb, (uint32_t)io->dtype);
    w_u32(sb, (uint32_t)io->rank);
    for (int d = 0; d < io->rank; d++)
        w_u64(sb, (uint64_t)io->shape[d]);
    w_u64(sb, io->bytes);
    w_u32(sb, io->buffer);
}

void clf__plan_cache_store(clf_context *ctx, const char *key, const clf_executable *e)
{
    clf__strbuf sb = {0};
    w_u32(&sb, (uint32_t)e->ninputs);
    w_u32(&sb, (uint32_t)e->noutputs);
    for (size_t i = 0; i < e->ninputs; i++)
        w_io(&sb, &e->inputs[i]);
    for (size_t i = 0; i < e->noutputs; i++)
        w_io(&sb, &e->outputs[i]);
    w_u32(&sb, e->nbuffers);
    for (uint32_t b = 0; b < e->nbuffers; b++) {
        const clf__plan_buffer *B = &e->buffers[b];
        w_u32(&sb, (uint32_t)B->kind);
        w_u32(&sb, B->node);
        w_u32(&sb, B->index);
        w_u64(&sb, B->bytes);
        w_u64(&sb, e->offsets[b]);
    }
    w_u64(&sb, e->scratch_bytes);
    w_u32(&sb, (uint32_t)e->nkernels);
    for (size_t k = 0; k < e->nkernels; k++) {
        const clf__exe_kernel *K = &e->kernels[k];
        w_str(&sb, K->name);
        w_str(&sb, K->entry);
        w_str(&sb, K->ops);
        w_str(&sb, K->source);
        w_str(&sb, K->final_name);
        w_u32(&sb, K->nparams);
        for (uint32_t p = 0; p < K->nparams; p++)
            w_u32(&sb, K->params[p]);
        w_u32(&sb, K->nnodes);
        for (uint32_t n = 0; n < K->nnodes; n++)
            w_u32(&sb, K->nodes[n]);
        w_u32(&sb, K->wide_index);
        w_u64(&sb, K->numel);
        w_u64(&sb, K->global);
        w_u64(&sb, K->local);
        w_u64(&sb, K->final_global);
        w_u64(&sb, K->final_local);
        w_u64(&sb, K->partial_bytes);
        w_u64(&sb, K->partial_offset);
        w_u64(&sb, K->state_bytes);
    }
    uint64_t stats[sizeof(clf_plan_stats) / sizeof(uint64_t)];
    memcpy(stats, &e->stats, sizeof stats);
    w_u32(&sb, (uint32_t)(sizeof stats / sizeof stats[0]));
    for (size_t i = 0; i < sizeof stats / sizeof stats[0]; i++)
        w_u64(&sb, stats[i]);
    char *path = clf__plan_cache_path(ctx, key);
    if (!clf__sb_ok(&sb) || !path)
        clf__log(CLF__LOG_CACHE, "plan store skipped: out of memory");
    else if (clf__cache_file_write(ctx, "plan", ctx->cache_dir, path, MAGIC, FORMAT_VERSION, key, sb.data, sb.len)) {
        pthread_mutex_lock(&ctx->lock);
        ctx->counts.plan_stores++;
        pthread_mutex_unlock(&ctx->lock);
    }
    clf__free(path);
    clf__sb_free(&sb);
}

/* ---- Reading it back -------------------------------------------------- */

typedef struct reader {
    const unsigned char *p;
    size_t left;
    bool bad;        /* malformed: the entry is discarded */
    bool oom;        /* out of memory: a miss, the entry stays */
    const char *why; /* what was malformed first */
} reader;

static void bad(reader *r, const char *why)
{
    if (!r->bad)
        r->why = why;
    r->bad = true;
}

static uint64_t r_u64(reader *r)
{
    if (r->bad || r->left < 8) {
        bad(r, "payload too short");
        return 0;
    }
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)r->p[i] << (8 * i);
    r->p += 8;
    r->left -= 8;
    return v;
}

static uint32_t r_u32(reader *r)
{
    if (r->bad || r->left < 4) {
        bad(r, "payload too short");
        return 0;
    }
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v |= (uint32_t)r->p[i] << (8 * i);
    r->p += 4;
    r->left -= 4;
    return v;
}

/* A count of items of at least `each` bytes: more than the payload holds
 * is malformed (so a flipped length never allocates gigabytes). */
static uint32_t r_count(reader *r, size_t each)
{
    uint32_t n = r_u32(r);
    if (!r->bad && (uint64_t)n * each > r->left)
        bad(r, "a count larger than the payload");
    return r->bad ? 0 : n;
}

static char *r_str(reader *r, bool nullable)
{
    uint32_t n = r_u32(r);
    if (r->bad)
        return NULL;
    if (n == UINT32_MAX) {
        if (!nullable)
            bad(r, "a missing string");
        return NULL;
    }
    if (n > r->left || memchr(r->p, '\0', n)) {
        bad(r, "a bad string");
        return NULL;
    }
    char *s = clf__malloc((size_t)n + 1);
    if (!s) {
        r->oom = r->bad = true;
        r->why = "out of memory";
        return NULL;
    }
    memcpy(s, r->p, n);
    s[n] = '\0';
    r->p += n;
    r->left -= n;
    return s;
}

/* A string as a text (util/text.h), as kernel sources are. */
static const char *r_text(reader *r)
{
    char *s = r_str(r, false);
    const char *t = s ? clf__text_new(s, strlen(s)) : NULL;
    if (s && !t) {
        r->oom = r->bad = true;
        r->why = "out of memory";
    }
    clf__free(s);
    return t;
}

static void *r_alloc(reader *r, size_t n, size_t size)
{
    if (r->bad)
        return NULL;
    void *p = clf__calloc(n ? n : 1, size);
    if (!p) {
        r->oom = r->bad = true;
        r->why = "out of memory";
    }
    return p;
}

static void r_io(reader *r, clf__io *io, uint32_t nbuffers_max)
{
    io->name = r_str(r, false);
    io->dtype = (clf_dtype)r_u32(r);
    uint32_t rank = r_u32(r);
    if (!r->bad && ((uint32_t)io->dtype >= CLF_DTYPE_COUNT || rank > CLF_MAX_RANK))
        bad(r, "a bad dtype or rank");
    io->rank = r->bad ? 0 : (int)rank;
    for (int d = 0; d < io->rank; d++)
        io->shape[d] = (int64_t)r_u64(r);
    io->bytes = r_u64(r);
    io->buffer = r_u32(r);
    (void)nbuffers_max;
}

/* Fills e's lowered fields from the payload and checks them against g.
 * On failure the caller destroys e (its fields are owned by it). */
static void parse(reader *r, const clf_graph *g, clf_executable *e)
{
    uint32_t nin = r_u32(r), nout = r_u32(r);
    if (!r->bad && (nin != g->ninputs || nout != g->noutputs))
        bad(r, "input or output count differs from the graph");
    e->inputs = r_alloc(r, nin, sizeof *e->inputs);
    e->outputs = r_alloc(r, nout, sizeof *e->outputs);
    if (r->bad)
        return;
    e->ninputs = nin;
    e->noutputs = nout;
    for (size_t i = 0; i < nin; i++)
        r_io(r, &e->inputs[i], 0);
    for (size_t i = 0; i < nout; i++)
        r_io(r, &e->outputs[i], 0);
    uint32_t nb = r_count(r, 32);
    e->buffers = r_alloc(r, nb, sizeof *e->buffers);
    e->offsets = r_alloc(r, nb, sizeof *e->offsets);
    if (r->bad)
        return;
    e->nbuffers = nb;
    for (uint32_t b = 0; b < nb; b++) {
        clf__plan_buffer *B = &e->buffers[b];
        uint32_t kind = r_u32(r);
        B->kind = (clf__buffer_kind)kind;
        B->node = r_u32(r);
        B->index = r_u32(r);
        B->bytes = r_u64(r);
        e->offsets[b] = r_u64(r);
        if (r->bad)
            return;
        if (kind > CLF__BUF_INTERMEDIATE || B->node >= g->nnodes)
            bad(r, "a buffer of a bad kind or node");
        else if ((kind == CLF__BUF_INPUT && B->index >= nin) || (kind == CLF__BUF_OUTPUT && B->index >= nout))
            bad(r, "a buffer index out of range");
        else if (kind == CLF__BUF_CONSTANT &&
                 (!clf__graph_node(g, B->node)->data ||
                  B->bytes != (uint64_t)clf__node_numel(clf__graph_node(g, B->node)) *
                                  clf_dtype_size(clf__graph_node(g, B->node)->dtype)))
            bad(r, "a constant buffer that does not match the graph");
    }
    for (size_t i = 0; !r->bad && i < nin + nout; i++) {
        const clf__io *io = i < nin ? &e->inputs[i] : &e->outputs[i - nin];
        if (io->buffer >= nb || e->buffers[io->buffer].kind != (i < nin ? CLF__BUF_INPUT : CLF__BUF_OUTPUT))
            bad(r, "an input or output on a bad buffer");
    }
    if (!r->bad)
        clf__exe_mark_in_place(e, g);
    e->scratch_bytes = r_u64(r);
    for (uint32_t b = 0; !r->bad && b < nb; b++)
        if (e->buffers[b].kind == CLF__BUF_INTERMEDIATE &&
            (e->offsets[b] > e->scratch_bytes || e->buffers[b].bytes > e->scratch_bytes - e->offsets[b]))
            bad(r, "an intermediate past the scratch");
    uint32_t nk = r_count(r, 40);
    e->kernels = r_alloc(r, nk, sizeof *e->kernels);
    if (r->bad)
        return;
    for (uint32_t k = 0; k < nk && !r->bad; k++) {
        clf__exe_kernel *K = &e->kernels[e->nkernels++];
        K->name = r_str(r, false);
        K->entry = r_str(r, false);
        K->ops = r_str(r, false);
        K->source = r_text(r);
        K->final_name = r_str(r, true);
        uint32_t np = r_count(r, 4);
        K->params = r_alloc(r, np, sizeof *K->params);
        for (uint32_t p = 0; p < np && !r->bad; p++) {
            K->params[K->nparams++] = r_u32(r);
            if (K->params[p] >= nb)
                bad(r, "a kernel parameter out of range");
        }
        uint32_t nn = r_count(r, 4);
        K->nodes = nn ? r_alloc(r, nn, sizeof *K->nodes) : NULL;
        for (uint32_t n = 0; n < nn && !r->bad; n++) {
            K->nodes[K->nnodes++] = r_u32(r);
            if (K->nodes[n] >= g->nnodes)
                bad(r, "a kernel node out of range");
        }
        K->wide_index = r_u32(r) != 0;
        K->numel = r_u64(r);
        K->global = (size_t)r_u64(r);
        K->local = (size_t)r_u64(r);
        K->final_global = (size_t)r_u64(r);
        K->final_local = (size_t)r_u64(r);
        K->partial_bytes = r_u64(r);
        K->partial_offset = r_u64(r);
        K->state_bytes = r_u64(r);
        if (!r->bad && K->partial_bytes &&
            (!K->final_name || K->partial_offset > e->scratch_bytes ||
             K->partial_bytes > e->scratch_bytes - K->partial_offset))
            bad(r, "partial results past the scratch");
        if (!r->bad && K->state_bytes > ((uint64_t)1 << 32))
            bad(r, "a kernel's state over 4 GiB");
    }
    uint64_t stats[sizeof(clf_plan_stats) / sizeof(uint64_t)];
    if (r_u32(r) != sizeof stats / sizeof stats[0])
        bad(r, "a different statistics layout");
    for (size_t i = 0; i < sizeof stats / sizeof stats[0]; i++)
        stats[i] = r_u64(r);
    if (!r->bad && r->left)
        bad(r, "bytes after the payload");
    if (!r->bad)
        memcpy(&e->stats, stats, sizeof stats);
}

/* Frees what parse put in e, leaving it fresh for lowering. */
static void unparse(clf_executable *e)
{
    for (size_t i = 0; e->inputs && i < e->ninputs; i++)
        clf__free(e->inputs[i].name);
    for (size_t i = 0; e->outputs && i < e->noutputs; i++)
        clf__free(e->outputs[i].name);
    for (size_t k = 0; e->kernels && k < e->nkernels; k++) {
        clf__exe_kernel *K = &e->kernels[k];
        clf__free(K->name);
        clf__free(K->entry);
        clf__free(K->ops);
        clf__text_release(K->source);
        clf__free(K->final_name);
        clf__free(K->params);
        clf__free(K->nodes);
    }
    clf__free(e->inputs);
    clf__free(e->outputs);
    clf__free(e->buffers);
    clf__free(e->offsets);
    clf__free(e->kernels);
    e->inputs = e->outputs = NULL;
    e->ninputs = e->noutputs = 0;
    e->buffers = NULL;
    e->offsets = NULL;
    e->nbuffers = 0;
    e->kernels = NULL;
    e->nkernels = 0;
    e->scratch_bytes = 0;
    memset(&e->stats, 0, sizeof e->stats);
}

bool clf__plan_cache_load(clf_context *ctx, const char *key, const clf_graph *g, clf_executable *e)
{
    char *path = clf__plan_cache_path(ctx, key);
    if (!path) {
        clf__log(CLF__LOG_CACHE, "plan cache skipped: out of memory");
        return false;
    }
    clf__cache_entry entry;
    bool hit = clf__cache_file_read(ctx, "plan", path, MAGIC, FORMAT_VERSION, key, &ctx->counts.plan_discards, &entry);
    if (hit) {
        reader r = {entry.payload, entry.payload_len, false, false, NULL};
        parse(&r, g, e);
        if (r.bad) {
            unparse(e);
            hit = false;
            if (r.oom) {
                clf__log(CLF__LOG_CACHE, "plan miss %s: out of memory", path);
            } else {
                char why[128];
                snprintf(why, sizeof why, "malformed payload (%s)", r.why);
                clf__cache_file_discard(ctx, "plan", path, &entry.st, &ctx->counts.plan_discards, why);
            }
        } else {
            pthread_mutex_lock(&ctx->lock);
            ctx->counts.plan_hits++;
            pthread_mutex_unlock(&ctx->lock);
            clf__log(CLF__LOG_CACHE, "plan hit %s (%zu kernels)", path, e->nkernels);
        }
    }
    clf__cache_entry_free(&entry);
    clf__free(path);
    return hit;
}
