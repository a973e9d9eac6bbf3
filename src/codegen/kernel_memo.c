/* Generated code kept by kernel key (codegen.h's clf__kernel_memo): a
 * kernel whose key was seen before gets a copy of that code instead of
 * being generated again.
 *
 * The key holds everything a writer reads, with the graph's node and
 * buffer ids replaced by their order of appearance, so that kernels that
 * compute the same thing on other tensors (the layers of a model, a kernel
 * that a new sequence length leaves alone) have one key, and generate one
 * source once canonical_names.c has renamed their ids. What the writers
 * read (codegen/, index/, the planner's queries): the target; the plan
 * kernel's fields; for each node a kernel evaluates or loads, its op,
 * dtype, shape, attributes and generator (clf__graph_key_node), a
 * literal's values, its inputs, and the plan's facts about it (where its
 * value lives: this kernel, another's buffer, nowhere; its reduction
 * stage); for each buffer parameter, its kind and node. The walk starts
 * from the kernel's ops, stores and anchor nodes and goes through every
 * input except past a node loaded from a buffer (what the writers do:
 * codegen_expr.c's value, clf__cg_operand_plain). codegen_corpus --memo
 * checks over the model fixtures and the benchmark graphs that every
 * kernel found in the memo is the kernel generated anew. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "codegen/codegen_expr.h"
#include "graph/graph_key.h"
#include "util/alloc.h"
#include "util/hash.h"
#include "util/text.h"

/* The nodes met so far, numbered in order (ord[id]: 0 unseen, else 1 +
 * the number), and the ones still to write. */
typedef struct walk {
    const clf_graph *g;
    const clf__plan *plan;
    uint32_t k;
    uint32_t *ord;
    uint32_t *todo;
    size_t ntodo, nseen;
} walk;

/* The number of node id in the key (numbering it when first met). */
static uint32_t number(walk *w, uint32_t id)
{
    if (!w->ord[id]) {
        w->ord[id] = (uint32_t)++w->nseen;
        w->todo[w->ntodo++] = id;
    }
    return w->ord[id] - 1;
}

/* Whether the writers read node id from a buffer rather than evaluate it. */
static bool loaded(const walk *w, uint32_t id)
{
    const clf__node *n = clf__graph_node(w->g, id);
    return w->plan->src_buffer[id] >= 0 &&
           (clf__node_class_of(n) == CLF__CLASS_LEAF || w->plan->producer[id] != (int32_t)w->k);
}

/* The parameter position of buffer b in kernel K, or -1. */
static int param_of(const clf__plan_kernel *K, int32_t b)
{
    for (uint32_t i = 0; i < K->nreads; i++)
        if ((int32_t)K->reads[i] == b)
            return (int)i;
    for (uint32_t i = 0; i < K->nstores; i++)
        if ((int32_t)K->stores[i].buffer == b)
            return (int)(K->nreads + i);
    return -1;
}

static uint64_t bits(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

/* name (" x=" or ",") and v: keys are written a field at a time, without
 * printf (26 keys a new length of a small decoder). */
static void put(clf__strbuf *sb, const char *name, long long v)
{
    clf__sb_puts(sb, name);
    clf__sb_put_i64(sb, v);
}

static void put_target(const clf__codegen_target *t, clf__strbuf *sb)
{
    put(sb, "target cpu=", t->cpu);
    put(sb, " local=", (long long)t->max_local);
    put(sb, " fp64=", t->fp64);
    put(sb, " cus=", t->compute_units);
    put(sb, " lmem=", (long long)t->local_mem);
    put(sb, " fw=", t->float_width);
    put(sb, " shfl=", t->warp_shuffle);
    put(sb, " tc=", t->tensor_cores);
    put(sb, " tf32=", t->tf32);
    put(sb, " rows=", t->no_gemm_rows);
    put(sb, " trips=", t->max_loop_trips);
    put(sb, " small=", t->small_code);
    put(sb, " vary=", t->sizes_vary);
    if (t->gemm) {
        put(sb, " gemm=", t->gemm->tm);
        put(sb, ",", t->gemm->tn);
        put(sb, ",", t->gemm->tk);
        put(sb, ",", t->gemm->wm);
        put(sb, ",", t->gemm->wn);
        put(sb, ",", t->gemm->mma);
    }
    if (t->attention_tile) {
        put(sb, " attention=", t->attention_tile->warps);
        put(sb, ",", t->attention_tile->rows);
        put(sb, ",", t->attention_tile->bkt);
        put(sb, ",", t->attention_tile->stages);
        put(sb, ",", t->attention_tile->fma_keys);
    }
    put(sb, " narrow-decode=", t->no_decode_wide);
    put(sb, " decode-chunk=", (int)t->decode_chunk);
    clf__sb_puts(sb, "\n");
}

/* A literal's values: its bytes (in hexadecimal up to 64 of them, else
 * their length and two 64-bit hashes). */
static void put_data(const clf__node *n, clf__strbuf *sb)
{
    const size_t bytes = (size_t)clf__node_numel(n) * clf_dtype_size(n->dtype);
    const unsigned char *p = n->data;
    put(sb, " data=", (long long)bytes);
    clf__sb_puts(sb, ":");
    if (bytes <= 64) {
        for (size_t i = 0; i < bytes; i++)
            clf__sb_put_hex(sb, p[i], 2);
    } else {
        clf__sb_put_hex(sb, clf__hash_bytes(CLF__HASH_SEED, p, bytes), 16);
        clf__sb_put_hex(sb, clf__hash_bytes(~CLF__HASH_SEED, p, bytes), 16);
    }
}

static bool kernel_key(const clf_graph *g, const clf__plan *plan, uint32_t k, const clf__codegen_target *target,
                        clf__strbuf *out)
{
    const clf__plan_kernel *K = &plan->kernels[k];
    walk w = {g, plan, k, clf__calloc(g->nnodes ? g->nnodes : 1, sizeof *w.ord),
              clf__malloc((g->nnodes ? g->nnodes : 1) * sizeof *w.todo), 0, 0};
    if (!w.ord || !w.todo) {
        clf__free(w.ord);
        clf__free(w.todo);
        return false;
    }
    put_target(target, out);
    /* The kernel: its fields, with node ids as numbers and buffers as
     * parameter positions (products, attention and cache writes have an
     * anchor node; other kinds leave the field 0). */
    const bool anchored =
        K->kind == CLF__REGION_GEMM || K->kind == CLF__REGION_ATTENTION || K->kind == CLF__REGION_CACHE_WRITE;
    put(out, "kind=", (int)K->kind);
    put(out, " anchor=", anchored ? (long long)number(&w, K->anchor) : -1);
    clf__sb_puts(out, " mask=");
    clf__sb_put_hex(out, K->reduce_mask, 0);
    put(out, " rows=", K->rows);
    put(out, " rlen=", K->rlen);
    put(out, " numel=", K->numel);
    clf__sb_puts(out, " shape");
    for (int d = 0; d < K->rank && d < CLF_MAX_RANK; d++)
        put(out, d ? "," : "=", K->shape[d]);
    const clf__plan_attention *A = &K->attention;
    if (K->kind == CLF__REGION_ATTENTION) {
        /* number() in the order the fields are written (the order met). */
        put(out, " att=", number(&w, A->scores));
        put(out, ",", number(&w, A->logits));
        put(out, ",", number(&w, A->max));
        put(out, ",", number(&w, A->sum));
        put(out, ",", number(&w, A->probs));
        put(out, " causal=", (int)A->causal);
        put(out, ",", A->causal_offset);
        clf__sb_puts(out, ",");
        clf__sb_put_hex(out, bits(A->causal_fill), 16);
        put(out, ",", A->causal_where < g->nnodes ? (long long)number(&w, A->causal_where) : -1);
        put(out, ",", A->causal_keep);
        put(out, " nan=", (int)A->has_nan_fill);
        clf__sb_puts(out, ",");
        clf__sb_put_hex(out, bits(A->nan_fill), 16);
    }
    clf__sb_puts(out, "\nops");
    for (uint32_t i = 0; i < K->nops; i++) {
        clf__sb_putn(out, " ", 1);
        clf__sb_put_i64(out, number(&w, K->ops[i]));
    }
    clf__sb_puts(out, "\nstores");
    for (uint32_t i = 0; i < K->nstores; i++) {
        clf__sb_putn(out, " ", 1);
        clf__sb_put_i64(out, number(&w, K->stores[i].node));
        clf__sb_putn(out, ">", 1);
        clf__sb_put_i64(out, param_of(K, (int32_t)K->stores[i].buffer));
        clf__sb_putn(out, "<", 1);
        clf__sb_put_i64(out, number(&w, K->stores[i].from));
    }
    clf__sb_puts(out, "\nparams");
    for (uint32_t i = 0; i < K->nreads + K->nstores; i++) {
        const uint32_t b = i < K->nreads ? K->reads[i] : K->stores[i - K->nreads].buffer;
        const clf__plan_buffer *B = &plan->buffers[b];
        clf__sb_putn(out, " ", 1);
        clf__sb_put_i64(out, (int)B->kind);
        clf__sb_putn(out, ":", 1);
        clf__sb_put_i64(out, number(&w, B->node));
        clf__sb_putn(out, B->in_place ? ":1" : ":0", 2);
    }
    clf__sb_puts(out, "\n");
    /* Every node met, in the order met: what it is, where its value lives,
     * its inputs (which the walk then writes, unless it is loaded). */
    for (size_t t = 0; t < w.ntodo; t++) {
        const uint32_t id = w.todo[t];
        const clf__node *n = clf__graph_node(g, id);
        const int32_t p = plan->producer[id];
        clf__sb_put_i64(out, (long long)t);
        clf__graph_key_node(n, out);
        clf__sb_puts(out, p < 0 ? " at=n" : p == (int32_t)k ? " at=h" : " at=e");
        clf__sb_put_i64(out, param_of(K, plan->src_buffer[id]));
        clf__sb_puts(out, " stage=");
        clf__sb_put_i64(out, plan->stage[id]);
        if (n->data && (clf__plan_is_literal(n) || !loaded(&w, id)))
            put_data(n, out);
        if (!loaded(&w, id)) {
            clf__sb_puts(out, " in");
            for (int i = 0; i < n->ninputs; i++) {
                clf__sb_putn(out, i ? "," : "=", 1);
                clf__sb_put_i64(out, number(&w, n->inputs[i]));
            }
        }
        clf__sb_puts(out, "\n");
    }
    clf__free(w.ord);
    clf__free(w.todo);
    return clf__sb_ok(out);
}

/* ---- The memo ------------------------------------------------------------------ */

/* The most kernels kept (sources of tens of kB each): past it each new one
 * replaces the oldest. */
#define MEMO_CAP 256

typedef struct entry {
    uint64_t hash;
    char *key;
    clf__kernel_code code; /* name and params: the first kernel's */
} entry;

struct clf__kernel_memo {
    pthread_mutex_t lock;
    entry *entries;
    size_t n, oldest; /* entries used; the one replaced next once all are */
    unsigned long hits;
};

clf__kernel_memo *clf__kernel_memo_new(void)
{
    clf__kernel_memo *m = clf__calloc(1, sizeof *m);
    if (m && !(m->entries = clf__calloc(MEMO_CAP, sizeof *m->entries))) {
        clf__free(m);
        return NULL;
    }
    if (m)
        pthread_mutex_init(&m->lock, NULL);
    return m;
}

static void entry_free(entry *e)
{
    clf__free(e->key);
    clf__kernel_code_free(&e->code);
}

void clf__kernel_memo_free(clf__kernel_memo **mp)
{
    if (!mp || !*mp)
        return;
    clf__kernel_memo *m = *mp;
    for (size_t i = 0; i < m->n; i++)
        entry_free(&m->entries[i]);
    clf__free(m->entries);
    pthread_mutex_destroy(&m->lock);
    clf__free(m);
    *mp = NULL;
}

unsigned long clf__kernel_memo_hits(clf__kernel_memo *m)
{
    pthread_mutex_lock(&m->lock);
    const unsigned long n = m->hits;
    pthread_mutex_unlock(&m->lock);
    return n;
}

/* A copy of from for kernel k (its own strings, K's parameters, its name);
 * false when out of memory (out then holds nothing). */
static bool copy_code(const clf__kernel_code *from, const clf__plan_kernel *K, uint32_t k, clf__kernel_code *out)
{
    *out = *from;
    out->entry = clf__strdup(from->entry);
    out->ops = clf__strdup(from->ops);
    out->source = clf__text_ref(from->source);
    out->final_name = from->final_name ? clf__strdup(from->final_name) : NULL;
    out->name = clf__kernel_code_name(out->entry, k);
    out->params = NULL;
    bool ok = out->entry && out->ops && out->source && (out->final_name || !from->final_name) && out->name &&
              clf__cg_params(K, &out->params, &out->nparams);
    if (!ok)
        clf__kernel_code_free(out);
    return ok;
}

clf_status clf__codegen_kernel_memo(clf__kernel_memo *m, const clf_graph *g, const clf__plan *plan, uint32_t k,
                                    const clf__codegen_target *target, clf__kernel_code *out, char *err,
                                    size_t errlen)
{
    clf__strbuf key = {0};
    if (!kernel_key(g, plan, k, target, &key)) {
        clf__sb_free(&key);
        return clf__codegen_kernel(g, plan, k, target, out, err, errlen);
    }
    const char *text = clf__sb_str(&key);
    const uint64_t h = clf__hash_words(CLF__HASH_SEED, text, strlen(text));
    bool found = false;
    pthread_mutex_lock(&m->lock);
    for (size_t i = 0; i < m->n && !found; i++)
        if (m->entries[i].hash == h && strcmp(m->entries[i].key, text) == 0) {
            found = copy_code(&m->entries[i].code, &plan->kernels[k], k, out);
            m->hits += found;
        }
    pthread_mutex_unlock(&m->lock);
    if (found) {
        clf__sb_free(&key);
        return CLF_OK;
    }
    clf_status st = clf__codegen_kernel(g, plan, k, target, out, err, errlen);
    /* Only a source whose ids became ordinals serves another kernel. */
    if (st == CLF_OK && out->canonical) {
        entry e = {h, clf__sb_take(&key), {0}};
        if (e.key && copy_code(out, &plan->kernels[k], k, &e.code)) {
            pthread_mutex_lock(&m->lock);
            if (m->n < MEMO_CAP) {
                m->entries[m->n++] = e;
            } else {
                entry_free(&m->entries[m->oldest]);
                m->entries[m->oldest] = e;
                m->oldest = (m->oldest + 1) % MEMO_CAP;
            }
            pthread_mutex_unlock(&m->lock);
        } else {
            clf__free(e.key);
        }
    }
    clf__sb_free(&key);
    return st;
}
