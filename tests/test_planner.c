/* The planner's phases one at a time, and its region-kind table, without a
 * device: what each phase writes for small graphs whose answer is known. */
#include <math.h>
#include <string.h>

#include "planner/planner_internal.h"
#include "test_support.h"

/* Runs the phases of g up to and including `last` (1 liveness, 2 attention
 * and materialisation, ... 7 count) into S and p. */
static void run_phases(const clf_graph *g, const clf__plan_options *o, int last, clf__plan_state *S, clf__plan *p)
{
    char err[256] = "";
    ck_assert_int_eq(clf__plan_state_init(S, g, o, p), CLF_OK);
    clf_status st = CLF_OK;
    if (st == CLF_OK && last >= 1)
        st = clf__plan_liveness(S);
    if (st == CLF_OK && last >= 2)
        st = clf__plan_find_attention(S);
    if (st == CLF_OK && last >= 2)
        st = clf__plan_materialise(S);
    if (st == CLF_OK && last >= 3)
        st = clf__plan_grow(S);
    if (st == CLF_OK && last >= 4)
        st = clf__plan_order(S, err, sizeof err);
    if (st == CLF_OK && last >= 5)
        st = clf__plan_buffers(S);
    if (st == CLF_OK && last >= 6)
        st = clf__plan_kernels(S);
    if (st == CLF_OK && last >= 7)
        clf__plan_count(S);
    ck_assert_msg(st == CLF_OK, "phase failed: %s", err);
}

static void end_phases(clf__plan_state *S, clf__plan *p)
{
    clf__plan_state_free(S);
    clf__plan_free(p);
}

START_TEST(liveness_skips_unused_nodes)
{
    int64_t n = 64;
    clf_graph *g = clf_graph_create();
    clf_tensor a = clf_input(g, "a", CLF_F32, 1, &n);
    clf_tensor used = clf_relu(g, a), unused = clf_exp(g, a);
    clf_graph_output(g, "y", clf_neg(g, used));
    clf__plan_state S;
    clf__plan p;
    run_phases(g, NULL, 1, &S, &p);
    ck_assert(S.needed[a.node] && S.needed[used.node]);
    ck_assert(!S.needed[unused.node]);
    ck_assert(!S.is_out[used.node]);
    end_phases(&S, &p);
    clf_graph_destroy(&g);
}
END_TEST

START_TEST(materialise_anchors_outputs_and_cuts)
{
    int64_t sh[2] = {8, 16};
    clf_graph *g = clf_graph_create();
    clf_tensor x = clf_input(g, "x", CLF_F32, 2, sh), w = clf_input(g, "w", CLF_F32, 2, (int64_t[]){16, 4});
    clf_tensor chain = x;
    clf_tensor links[5];
    for (int i = 0; i < 5; i++)
        chain = links[i] = clf_exp(g, chain);
    clf_tensor sum = clf_reduce(g, CLF_REDUCE_SUM, chain, 1, (int[]){1}, true);
    clf_tensor mm = clf_matmul(g, x, w);
    clf_graph_output(g, "s", sum);
    clf_graph_output(g, "m", mm);
    clf__plan_state S;
    clf__plan p;
    run_phases(g, &(clf__plan_options){.max_fused_depth = 2}, 2, &S, &p);
    ck_assert(S.mat[sum.node] && S.mat[mm.node]);
    ck_assert(!S.mat[x.node]); /* an input that is not an output is read, not stored */
    /* depth 1, 2, then a cut at the third link (depth 3 > 2), 1, 2. */
    ck_assert(!S.mat[links[0].node] && !S.mat[links[1].node]);
    ck_assert(S.mat[links[2].node] && S.cut[links[2].node]);
    ck_assert(!S.mat[links[3].node] && !S.mat[links[4].node]);
    end_phases(&S, &p);
    clf_graph_destroy(&g);
}
END_TEST

START_TEST(grow_gives_each_kind_its_region)
{
    int64_t sh[2] = {8, 16};
    clf_graph *g = clf_graph_create();
    clf_tensor x = clf_input(g, "x", CLF_F32, 2, sh), w = clf_input(g, "w", CLF_F32, 2, (int64_t[]){16, 4});
    clf_tensor sm = clf_reduce(g, CLF_REDUCE_SUM, x, 1, (int[]){1}, true);
    clf_tensor y = clf_relu(g, clf_matmul(g, clf_div(g, x, sm), w));
    clf_tensor z = clf_add(g, x, x);
    clf_graph_output(g, "y", y);
    clf_graph_output(g, "z", z);
    clf_graph_output(g, "sm", sm); /* read beyond the product's loads: not one of its row statistics */
    clf__plan_state S;
    clf__plan p;
    run_phases(g, NULL, 3, &S, &p);
    /* The sum and z: one reduction region (z is over the full space); the
     * product and its relu: one GEMM region (x / sum in its loads). */
    ck_assert_uint_eq(S.nr, 2);
    int32_t rs = S.region_of[sm.node], ry = S.region_of[y.node];
    ck_assert_int_ge(rs, 0);
    ck_assert_int_ge(ry, 0);
    ck_assert_int_eq(S.rs[rs].kind, CLF__REGION_REDUCTION);
    ck_assert_int_eq(S.rs[ry].kind, CLF__REGION_GEMM);
    ck_assert_int_eq(S.region_of[z.node], rs);
    ck_assert(clf__u32vec_has(&S.rs[ry].deps, (uint32_t)rs));
    end_phases(&S, &p);
    clf_graph_destroy(&g);
}
END_TEST

/* A GEMM operand that applies a stored reduction's result (x / sum, a
 * norm's shape, over an operand too large for the product to compute the
 * sums itself: row statistics) is computed in the GEMM's loads on CPUs,
 * and stored by its own kernel where tiles reload operands (the GPU forms
 * recompute a prologue for every tile that loads the element). */
START_TEST(row_statistic_prologue_stored_where_tiles_reload)
{
    int64_t sh[2] = {128, 128};
    clf_graph *g = clf_graph_create();
    clf_tensor x = clf_input(g, "x", CLF_F32, 2, sh), w = clf_input(g, "w", CLF_F32, 2, (int64_t[]){128, 4});
    clf_tensor sm = clf_reduce(g, CLF_REDUCE_SUM, x, 1, (int[]){1}, true);
    clf_tensor d = clf_div(g, x, sm), e = clf_mul(g, x, clf_scalar(g, CLF_F32, 2.0));
    clf_graph_output(g, "y", clf_matmul(g, d, w));
    clf_graph_output(g, "v", clf_matmul(g, e, w));
    for (int reload = 0; reload < 2; reload++) {
        clf__plan_options o = {.tiles_reload_operands = reload != 0};
        clf__plan_state S;
        clf__plan p;
        run_phases(g, &o, 2, &S, &p);
        ck_assert_msg(S.mat[d.node] == (reload != 0), "tiles_reload_operands %d", reload);
        ck_assert(!S.mat[e.node]); /* no reduction: a prologue either way */
        end_phases(&S, &p);
    }
    clf_graph_destroy(&g);
}
END_TEST

/* A norm's statistics over the rows of a product's first operand are
 * computed in the product's loads (not materialised; the product one
 * region, its kernel evaluating them): in the CPU form; in the GPU tiles
 * (tiles_reload_operands) one statistic (a mean square), not a mean and
 * then the variance; and where sizes vary only for an operand of one row
 * (its specialisations share programs). */
START_TEST(row_statistics_computed_in_product_loads)
{
    for (int c = 0; c < 4; c++) {
        const int rows = c % 2 ? 8 : 1;
        const bool two = c < 2; /* a layer norm's two statistics, else an RMSNorm's one */
        int64_t sh[2] = {rows, 16};
        clf_graph *g = clf_graph_create();
        clf_tensor x = clf_input(g, "x", CLF_F32, 2, sh), w = clf_input(g, "w", CLF_F32, 2, (int64_t[]){16, 4});
        clf_tensor d = x;
        if (two)
            d = clf_sub(g, x, clf_reduce(g, CLF_REDUCE_MEAN, x, 1, (int[]){1}, true));
        clf_tensor var = clf_reduce(g, CLF_REDUCE_MEAN, clf_mul(g, d, d), 1, (int[]){1}, true);
        clf_graph_output(g, "y", clf_matmul(g, clf_mul(g, d, clf_rsqrt(g, var)), w));
        const uint32_t want = two ? 2 : 1;
        for (int o = 0; o < 3; o++) {
            clf__plan_options opt = {.tiles_reload_operands = o == 1, .sizes_vary = o == 2};
            const bool folds = o == 0 || (o == 1 && !two) || (o == 2 && rows == 1);
            clf__plan_state S;
            clf__plan p;
            run_phases(g, &opt, 6, &S, &p);
            /* A mean is a sum and a division: the REDUCE nodes. */
            uint32_t reduces = 0, stored = 0;
            for (uint32_t i = 0; i < S.n; i++)
                if (clf__graph_node(g, i)->op == CLF__OP_REDUCE) {
                    reduces++;
                    stored += S.mat[i];
                }
            ck_assert_uint_eq(reduces, want);
            ck_assert_msg(stored == (folds ? 0u : want), "case %d, options %d: %u stored", c, o, stored);
            ck_assert_uint_eq(p.nkernels, folds ? 1u : 2u);
            if (folds) { /* the product's kernel evaluates them */
                uint32_t in_kernel = 0;
                for (uint32_t j = 0; j < p.kernels[0].nops; j++)
                    in_kernel += clf__graph_node(g, p.kernels[0].ops[j])->op == CLF__OP_REDUCE;
                ck_assert_int_eq(p.kernels[0].kind, CLF__REGION_GEMM);
                ck_assert_uint_eq(in_kernel, want);
            }
            end_phases(&S, &p);
        }
        clf_graph_destroy(&g);
    }
}
END_TEST

/* A decoder's residual stream (h = h + attention, h = h + MLP, each read by
 * the next layer's products and the next residual) is stored once, by the
 * product computing its last term, from the second sum on: else each
 * layer's loads sum every layer's results again (a sixth layer read 12
 * buffers). One kernel a product, in both kernel forms' options; no
 * kernel reads more than the product's operand, its weight and two terms. */
START_TEST(residual_stream_stored_once)
{
    enum { LAYERS = 6 };
    int64_t sh[2] = {2, 16};
    clf_graph *g = clf_graph_create();
    clf_tensor h = clf_input(g, "x", CLF_F32, 2, sh), w = clf_input(g, "w", CLF_F32, 2, (int64_t[]){16, 16});
    uint32_t sums[2 * LAYERS];
    for (int l = 0; l < 2 * LAYERS; l++) {
        h = clf_add(g, h, clf_matmul(g, clf_relu(g, h), w));
        sums[l] = h.node;
    }
    clf_graph_output(g, "y", h);
    for (int o = 0; o < 2; o++) {
        clf__plan_options opt = {.tiles_reload_operands = o == 1};
        clf__plan_state S;
        clf__plan p;
        run_phases(g, &opt, 6, &S, &p);
        ck_assert_uint_eq(p.nkernels, 2 * LAYERS);
        ck_assert_msg(!S.mat[sums[0]], "options %d: the first sum (one product's result) is stored", o);
        for (int l = 1; l < 2 * LAYERS; l++)
            ck_assert_msg(S.mat[sums[l]], "options %d: sum %d is not stored", o, l);
        for (uint32_t k = 0; k < p.nkernels; k++)
            ck_assert_msg(p.kernels[k].nreads <= 4, "options %d: kernel %u reads %u buffers", o, k,
                          p.kernels[k].nreads);
        end_phases(&S, &p);
    }
    clf_graph_destroy(&g);
}
END_TEST

/* A post-LN stack (BERT: x = LN(x + x @ w)): each sum is read only by its
 * norm, in the norm's kernel, so it is not stored (the norm's loads add x
 * and the product again); the norm's output, which the next residual sum
 * and the next product read, is. The last layer's norm is the output. */
START_TEST(post_norm_sums_stay_in_the_norm)
{
    enum { LAYERS = 4 };
    int64_t sh[2] = {2, 16};
    clf_graph *g = clf_graph_create();
    clf_tensor x = clf_input(g, "x", CLF_F32, 2, sh), w = clf_input(g, "w", CLF_F32, 2, (int64_t[]){16, 16});
    uint32_t sums[LAYERS], norms[LAYERS];
    for (int l = 0; l < LAYERS; l++) {
        clf_tensor h = clf_add(g, x, clf_matmul(g, x, w));
        x = clf_layer_norm(g, h, 1, 1e-5, CLF_TENSOR_INVALID, CLF_TENSOR_INVALID);
        sums[l] = h.node;
        norms[l] = x.node;
    }
    clf_graph_output(g, "y", x);
    ck_assert_int_eq(clf_graph_status(g, NULL), CLF_OK);
    for (int o = 0; o < 2; o++) {
        clf__plan_options opt = {.tiles_reload_operands = o == 1};
        clf__plan_state S;
        clf__plan p;
        run_phases(g, &opt, 6, &S, &p);
        for (int l = 0; l < LAYERS; l++) {
            ck_assert_msg(!S.mat[sums[l]], "options %d: sum %d, read only by its norm, is stored", o, l);
            ck_assert_msg(S.mat[norms[l]], "options %d: norm %d is not stored", o, l);
        }
        end_phases(&S, &p);
    }
    clf_graph_destroy(&g);
}
END_TEST

START_TEST(order_and_buffers)
{
    int64_t sh[2] = {8, 16};
    clf_graph *g = clf_graph_create();
    clf_tensor x = clf_input(g, "x", CLF_F32, 2, sh), w = clf_input(g, "w", CLF_F32, 2, (int64_t[]){16, 16});
    /* Two products in a row: the first crosses into the second's kernel
     * (a product is never a prologue). */
    clf_tensor m1 = clf_matmul(g, x, w), m2 = clf_matmul(g, m1, w);
    clf_graph_output(g, "y", m2);
    clf__plan_state S;
    clf__plan p;
    run_phases(g, NULL, 7, &S, &p);
    ck_assert_uint_eq(S.nr, 2);
    ck_assert_uint_eq(S.order[0], (uint32_t)S.region_of[m1.node]);
    ck_assert_uint_eq(S.order[1], (uint32_t)S.region_of[m2.node]);
    ck_assert(S.crosses[m1.node]);
    ck_assert(!S.crosses[m2.node]);
    ck_assert_int_ge(p.src_buffer[m1.node], 0);
    ck_assert_int_eq(p.buffers[p.src_buffer[m1.node]].kind, CLF__BUF_INTERMEDIATE);
    ck_assert_uint_eq(p.nkernels, 2);
    ck_assert_int_eq(p.kernels[0].kind, CLF__REGION_GEMM);
    ck_assert_uint_eq(p.kernels[1].anchor, m2.node);
    ck_assert_uint_eq(p.stats.launches, 2);
    end_phases(&S, &p);
    clf_graph_destroy(&g);
}
END_TEST

START_TEST(kind_table_rows)
{
    for (int k = 0; k < CLF__REGION_KIND_COUNT; k++) {
        ck_assert_int_eq(clf__region_kinds[k].kind, k);
        ck_assert_ptr_nonnull(clf__region_kinds[k].name);
        ck_assert(clf__region_kinds[k].anchors != NULL && clf__region_kinds[k].start != NULL &&
                  clf__region_kinds[k].role != NULL);
        ck_assert_str_eq(clf__region_kind_name((clf__region_kind)k), clf__region_kinds[k].name);
    }
    ck_assert_str_eq(clf__region_kind_name(CLF__REGION_KIND_COUNT), "?");
    int64_t sh[2] = {4, 4};
    clf_graph *g = clf_graph_create();
    clf_tensor x = clf_input(g, "x", CLF_F32, 2, sh);
    clf_tensor red = clf_reduce(g, CLF_REDUCE_SUM, x, 1, (int[]){1}, true), mm = clf_matmul(g, x, x),
               add = clf_add(g, x, x);
    clf_graph_output(g, "r", red);
    clf_graph_output(g, "m", mm);
    clf_graph_output(g, "a", add);
    clf__plan_state S;
    clf__plan p;
    run_phases(g, NULL, 2, &S, &p);
    ck_assert_int_eq(clf__region_kind_of_anchor(&S, red.node), CLF__REGION_REDUCTION);
    ck_assert_int_eq(clf__region_kind_of_anchor(&S, mm.node), CLF__REGION_GEMM);
    ck_assert_int_eq(clf__region_kind_of_anchor(&S, add.node), CLF__REGION_POINTWISE);
    end_phases(&S, &p);
    clf_graph_destroy(&g);
}
END_TEST

/* An attention graph of clf_attention: bool mask, causal with Sq < Sk.
 * which: 0 the output only; 1 the scores an output too; 2 the causal WHERE
 * before an additive mask (not the last op before the softmax). */
static clf_graph *attention_graph(int which, clf_tensor *out, clf_tensor *scores)
{
    clf_graph *g = clf_graph_create();
    int64_t qs[4] = {1, 2, 4, 8}, ks[4] = {1, 2, 6, 8}, ms[4] = {1, 1, 4, 6};
    clf_tensor q = clf_input(g, "q", CLF_F32, 4, qs), k = clf_input(g, "k", CLF_F32, 4, ks),
               v = clf_input(g, "v", CLF_F32, 4, ks);
    if (which < 2) {
        clf_tensor m = clf_input(g, "m", CLF_BOOL, 4, ms);
        *out = clf_attention(g, q, k, v, m, 0, true);
        *scores = CLF_TENSOR_INVALID;
        for (uint32_t i = 0; i < g->nnodes; i++)
            if (clf__graph_node(g, i)->op == CLF__OP_MATMUL) {
                *scores = (clf_tensor){.graph = out->graph, .node = i};
                break;
            }
        if (which == 1)
            clf_graph_output(g, "s", *scores);
    } else {
        /* causal (j <= i + 2) by hand, then an additive mask */
        clf_tensor m = clf_input(g, "m", CLF_F32, 4, ms);
        uint8_t c[24];
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 6; j++)
                c[i * 6 + j] = j <= i + 2;
        clf_tensor cc = clf_constant(g, CLF_BOOL, 2, (int64_t[]){4, 6}, c);
        *scores = clf_matmul(g, q, clf_transpose(g, k, 4, (int[]){0, 1, 3, 2}));
        clf_tensor s = clf_where(g, cc, *scores, clf_scalar(g, CLF_F32, -INFINITY));
        *out = clf_matmul(g, clf_softmax(g, clf_add(g, s, m), -1), v);
    }
    clf_graph_output(g, "o", *out);
    const char *msg;
    ck_assert_msg(clf_graph_status(g, &msg) == CLF_OK, "%s", msg);
    return g;
}

START_TEST(find_attention_matches_and_refuses)
{
    for (int which = 0; which < 3; which++) {
        clf_tensor out, scores;
        clf_graph *g = attention_graph(which, &out, &scores);
        clf__plan_state S;
        clf__plan p;
        run_phases(g, NULL, 2, &S, &p);
        if (which == 1) {
            /* The scores must be stored: no attention region. */
            ck_assert_uint_eq(S.nmatches, 0);
            ck_assert_int_eq(clf__region_kind_of_anchor(&S, out.node), CLF__REGION_GEMM);
            ck_assert(S.mat[scores.node]);
        } else {
            ck_assert_uint_eq(S.nmatches, 1);
            const clf__attention_match *M = &S.matches[0];
            ck_assert_uint_eq(M->anchor, out.node);
            ck_assert_uint_eq(M->at.scores, scores.node);
            ck_assert_int_eq(clf__region_kind_of_anchor(&S, out.node), CLF__REGION_ATTENTION);
            /* Causal is skipped only where its WHERE is the last op. */
            ck_assert_int_eq(M->at.causal, which == 0);
            if (which == 0) {
                ck_assert_int_eq(M->at.causal_offset, 2);
                ck_assert(isinf(M->at.causal_fill) && M->at.causal_fill < 0);
            }
            /* Nothing between the two products is materialised. */
            for (uint32_t i = 0; i < S.n; i++)
                if (S.attention_of[i] == (int32_t)out.node && i != out.node)
                    ck_assert_msg(!S.mat[i], "node %u inside the attention is materialised", i);
            ck_assert(S.mat[out.node]);
            ck_assert(!S.mat[scores.node]);
        }
        end_phases(&S, &p);
        clf_graph_destroy(&g);
    }
}
END_TEST

/* The one store of kernel k of node id; fails the test when there is none. */
static const clf__plan_store *store_of(const clf__plan *p, uint32_t k, uint32_t id)
{
    for (uint32_t s = 0; s < p->kernels[k].nstores; s++)
        if (p->kernels[k].stores[s].node == id)
            return &p->kernels[k].stores[s];
    ck_abort_msg("kernel %u does not store node %u", k, id);
    return NULL;
}

/* Permuted stores (region_kinds.c's clf__product_store_from): attention's
 * output O [1, 2, 4, 8] with its heads merged back to [1, 4, 16] is stored
 * by the attention kernel itself, from O's values, and O is not stored;
 * which: 0 the merged heads an output; 1 they feed a GEMM, which reads
 * them from the attention kernel's store (a plain operand); 2 half of them
 * (a slice: no permutation) an output, which takes a copy kernel. */
START_TEST(permuted_store_of_merged_heads)
{
    for (int which = 0; which < 3; which++) {
        clf_graph *g = clf_graph_create();
        int64_t qs[4] = {1, 2, 4, 8}, flat[3] = {1, 4, 16};
        clf_tensor q = clf_input(g, "q", CLF_F32, 4, qs), k = clf_input(g, "k", CLF_F32, 4, qs),
                   v = clf_input(g, "v", CLF_F32, 4, qs);
        clf_tensor o = clf_attention(g, q, k, v, CLF_TENSOR_INVALID, 0, false);
        clf_tensor m = clf_reshape(g, clf_transpose(g, o, 4, (int[]){0, 2, 1, 3}), 3, flat), y = m;
        if (which == 1)
            y = clf_matmul(g, m, clf_input(g, "w", CLF_F32, 2, (int64_t[]){16, 8}));
        else if (which == 2)
            y = clf_slice(g, m, 1, (int64_t[]){0}, (int64_t[]){2}, (int[]){1}, NULL);
        clf_graph_output(g, "y", y);
        clf__plan_state S;
        clf__plan p;
        run_phases(g, NULL, 7, &S, &p);
        ck_assert_uint_eq(p.nkernels, which == 0 ? 1 : 2);
        ck_assert_int_eq(p.kernels[0].kind, CLF__REGION_ATTENTION);
        ck_assert_uint_eq(p.kernels[0].nstores, 1);
        if (which < 2) {
            const clf__plan_store *st = store_of(&p, 0, m.node);
            ck_assert_uint_eq(st->from, o.node);
            ck_assert_int_lt(p.src_buffer[o.node], 0); /* O itself is never stored */
        } else {
            ck_assert_uint_eq(store_of(&p, 0, o.node)->from, o.node);
        }
        if (which == 1) {
            /* The GEMM reads the merged heads from their buffer, not O
             * through a transpose. */
            ck_assert(S.mat[m.node]);
            const clf__plan_kernel *K = &p.kernels[1];
            ck_assert_int_eq(K->kind, CLF__REGION_GEMM);
            bool reads_m = false;
            for (uint32_t i = 0; i < K->nreads; i++)
                reads_m = reads_m || K->reads[i] == (uint32_t)p.src_buffer[m.node];
            ck_assert(reads_m);
        }
        end_phases(&S, &p);
        clf_graph_destroy(&g);
    }
}
END_TEST

/* A GEMM's product transposed as an output, after an epilogue and
 * reshaped (0) or beside a plain epilogue output (1): the GEMM stores it
 * at permuted positions, one kernel. */
START_TEST(permuted_store_of_a_gemm)
{
    for (int which = 0; which < 2; which++) {
        clf_graph *g = clf_graph_create();
        clf_tensor x = clf_input(g, "x", CLF_F32, 2, (int64_t[]){6, 5}),
                   w = clf_input(g, "w", CLF_F32, 2, (int64_t[]){5, 4});
        clf_tensor pr = clf_matmul(g, x, w), from = which ? pr : clf_relu(g, pr);
        clf_tensor y = clf_transpose(g, from, 0, NULL);
        if (which == 0)
            y = clf_reshape(g, y, 1, (int64_t[]){24});
        clf_graph_output(g, "y", y);
        if (which == 1)
            clf_graph_output(g, "z", clf_add(g, pr, clf_scalar(g, CLF_F32, 1.0)));
        clf__plan_state S;
        clf__plan p;
        run_phases(g, NULL, 7, &S, &p);
        ck_assert_uint_eq(p.nkernels, 1);
        ck_assert_int_eq(p.kernels[0].kind, CLF__REGION_GEMM);
        ck_assert_uint_eq(store_of(&p, 0, y.node)->from, from.node);
        end_phases(&S, &p);
        clf_graph_destroy(&g);
    }
}
END_TEST

/* Members of a GEMM region read the product at the element they store:
 * through pointwise nodes of their shape and reshapes (decided without
 * index algebra), beside broadcast values computed from other inputs; a
 * transpose of a square product and a gather along its rows have the
 * product's shape but read it at another element, and are refused. */
START_TEST(gemm_members_read_the_product_in_place)
{
    for (int which = 0; which < 4; which++) {
        clf_graph *g = clf_graph_create();
        clf_tensor x = clf_input(g, "x", CLF_F32, 2, (int64_t[]){4, 4}),
                   w = clf_input(g, "w", CLF_F32, 2, (int64_t[]){4, 4}),
                   idx = clf_input(g, "idx", CLF_I32, 2, (int64_t[]){4, 4}),
                   b = clf_input(g, "b", CLF_F32, 1, (int64_t[]){4}),
                   res = clf_input(g, "res", CLF_F32, 1, (int64_t[]){16});
        clf_tensor pr = clf_matmul(g, x, w), y;
        if (which == 0) /* bias, activation, reshape, residual */
            y = clf_add(g, clf_reshape(g, clf_relu(g, clf_add(g, pr, b)), 1, (int64_t[]){16}), res);
        else if (which == 1) /* a broadcast value computed from an input */
            y = clf_mul(g, pr, clf_exp(g, b));
        else if (which == 2) /* the product transposed: another element */
            y = clf_add(g, pr, clf_transpose(g, pr, 0, NULL));
        else /* gathered along its rows (the product's own shape, read at indices) */
            y = clf_add(g, pr, clf_gather_elements(g, pr, idx, 1));
        clf_graph_output(g, "y", y);
        clf__plan_state S;
        clf__plan p;
        run_phases(g, NULL, 7, &S, &p);
        ck_assert_msg(p.nkernels == (which >= 2 ? 2u : 1u), "case %d: %u kernels", which, p.nkernels);
        ck_assert_int_eq(p.kernels[0].kind, CLF__REGION_GEMM);
        if (which < 2)
            ck_assert_uint_eq(store_of(&p, 0, y.node)->from, y.node);
        end_phases(&S, &p);
        clf_graph_destroy(&g);
    }
}
END_TEST

/* Members of a reduction region read its rows at their own row: a
 * layer norm's variance reads the mean there (stage 1), its output reads
 * both broadcast along the row, and a softmax the max and the sum. A
 * member that reads another row's statistic in the statistic's own shape
 * (the rows' maxima rotated by one, or gathered) is refused, and so is a
 * reduction past the last stage a kernel holds (a new kernel instead). */
START_TEST(reduction_members_read_rows_in_place)
{
    for (int which = 0; which < 5; which++) {
        clf_graph *g = clf_graph_create();
        clf_tensor x = clf_input(g, "x", CLF_F32, 2, (int64_t[]){4, 4}),
                   idx = clf_input(g, "idx", CLF_I32, 2, (int64_t[]){4, 1});
        int last = -1;
        clf_tensor y;
        if (which == 0) { /* layer norm by hand */
            clf_tensor mean = clf_reduce_mean(g, x, 1, &last, true);
            clf_tensor d = clf_sub(g, x, mean);
            clf_tensor var = clf_reduce_mean(g, clf_mul(g, d, d), 1, &last, true);
            y = clf_div(g, d, clf_sqrt(g, clf_add(g, var, clf_scalar(g, CLF_F32, 1e-5))));
        } else if (which == 1) {
            y = clf_softmax(g, x, -1);
        } else if (which == 4) { /* sums each of x less the one before: one stage more each, past the limit */
            clf_tensor sum = clf_reduce_sum(g, x, 1, &last, true);
            for (int i = 0; i < CLF__MAX_REDUCTION_STAGES; i++)
                sum = clf_reduce_sum(g, clf_sub(g, x, sum), 1, &last, true);
            y = sum;
        } else if (which == 3) { /* x minus a max gathered from another row, in the max's own shape */
            clf_tensor mx = clf_reduce_max(g, x, 1, &last, true);
            y = clf_sub(g, x, clf_gather_elements(g, mx, idx, 0));
        } else { /* x minus the max of another row */
            clf_tensor mx = clf_reduce_max(g, x, 1, &last, true);
            clf_tensor next = clf_slice(g, mx, 1, (int64_t[]){1}, (int64_t[]){4}, (int[]){0}, NULL),
                       first = clf_slice(g, mx, 1, (int64_t[]){0}, (int64_t[]){1}, (int[]){0}, NULL);
            clf_tensor moved = clf_concat(g, 2, (clf_tensor[]){next, first}, 0); /* row i + 1's max */
            y = clf_sub(g, x, moved);
        }
        clf_graph_output(g, "y", y);
        clf__plan_state S;
        clf__plan p;
        run_phases(g, NULL, 7, &S, &p);
        ck_assert_msg(p.nkernels == (which >= 2 ? 2u : 1u), "case %d: %u kernels", which, p.nkernels);
        for (uint32_t i = 0; i < (uint32_t)g->nnodes; i++)
            ck_assert_int_lt(p.stage[i], CLF__MAX_REDUCTION_STAGES);
        if (which == 0) { /* the mean's sum at stage 0, the variance's at 1 */
            int stages[2] = {0, 0};
            for (uint32_t i = 0; i < (uint32_t)g->nnodes; i++)
                if (clf__graph_node(g, i)->op == CLF__OP_REDUCE && p.stage[i] >= 0 && p.stage[i] < 2)
                    stages[p.stage[i]]++;
            ck_assert_msg(stages[0] == 1 && stages[1] == 1, "stages 0: %d, 1: %d", stages[0], stages[1]);
        }
        end_phases(&S, &p);
        clf_graph_destroy(&g);
    }
}
END_TEST

int main(void)
{
    clf_test_setup_env();
    Suite *s = suite_create("planner");
    clf_test_add_case(s, "liveness_skips_unused_nodes", liveness_skips_unused_nodes);
    clf_test_add_case(s, "materialise_anchors_outputs_and_cuts", materialise_anchors_outputs_and_cuts);
    clf_test_add_case(s, "grow_gives_each_kind_its_region", grow_gives_each_kind_its_region);
    clf_test_add_case(s, "row_statistics_computed_in_product_loads", row_statistics_computed_in_product_loads);
    clf_test_add_case(s, "residual_stream_stored_once", residual_stream_stored_once);
    clf_test_add_case(s, "post_norm_sums_stay_in_the_norm", post_norm_sums_stay_in_the_norm);
    clf_test_add_case(s, "order_and_buffers", order_and_buffers);
    clf_test_add_case(s, "kind_table_rows", kind_table_rows);
    clf_test_add_case(s, "find_attention_matches_and_refuses", find_attention_matches_and_refuses);
    clf_test_add_case(s, "permuted_store_of_merged_heads", permuted_store_of_merged_heads);
    clf_test_add_case(s, "permuted_store_of_a_gemm", permuted_store_of_a_gemm);
    clf_test_add_case(s, "gemm_members_read_the_product_in_place", gemm_members_read_the_product_in_place);
    clf_test_add_case(s, "reduction_members_read_rows_in_place", reduction_members_read_rows_in_place);
    clf_test_add_case(s, "row_statistic_prologue_stored_where_tiles_reload", row_statistic_prologue_stored_where_tiles_reload);
    return clf_test_run_suite(s);
}
