/* What the two writers of kernels that end in a product share (GEMM,
 * codegen_gemm.c; attention, codegen_attention.c): operand loads through
 * their prologues, the accumulator standing for the product, and the
 * epilogue's store function. */
#ifndef CLFUSE_CODEGEN_PRODUCT_H
#define CLFUSE_CODEGEN_PRODUCT_H

#include "codegen/codegen.h"
#include "codegen/codegen_expr.h"

/* Load hook: a plain buffer read inside a load function. */
const char *clf__cg_load_direct(clf__cg_fn *f, uint32_t buffer, clf__ix index, clf_dtype dt, char *name, size_t cap);
/* Product hook: the product at the element being stored is `acc`
 * (rounded to a storage float's dtype); NULL for any other element. */
const char *clf__cg_product_acc(clf__cg_fn *f, uint32_t node, const clf__view *v, char *name, size_t cap);

/* Whether a MATMUL's operand is read straight from a buffer in its own
 * row-major layout (no prologue, no movement op in between). */
bool clf__cg_operand_plain(const clf__plan *plan, uint32_t k, const clf_graph *g, uint32_t id);

/* Whether a MATMUL's operand id is a transpose of the last two axes (and
 * no other) of a node read straight from a buffer (clf__cg_operand_plain):
 * a transposed operand whose rows lie in that buffer as they are. Sets
 * *plain to that node. */
bool clf__cg_operand_plain_swapped(const clf__plan *plan, uint32_t k, const clf_graph *g, uint32_t id,
                                   uint32_t *plain);

/* The dtype of the values clf__cg_emit_stage16 would stage for MATMUL mm's
 * operand `which` (CLF_F16 or CLF_BF16; CLF_F32 where f32_values), or
 * CLF_BOOL where it would emit nothing. */
clf_dtype clf__cg_stage16_dtype(const clf_graph *g, const clf__plan *plan, uint32_t k, const clf__node *mm, int which,
                                bool swapped, bool f32_values);

/* Emits "#define CLF_HAVE_STAGE_<NAME> 1" and a raw 16-byte stage of
 * MATMUL mm's operand `which` for the tensor-core forms (attention_mma.cl,
 * gemm_mma.cl) and the wide decode form (attention_decode.cl): 8 raw
 * 16-bit values (4 f32 ones where f32_values, TF32's GEMM) of row r (an
 * expression of the parameters) from column col on (a multiple of 8, or
 * 4), the columns along the operand's rows where swapped (K of Q Kt, read
 * along D), else along its columns. Only where the operand is a buffer of
 * values of that width moved by index arithmetic alone (transposes,
 * reshapes, broadcast heads, slices), so that a piece's values lie one
 * after another from a multiple of the piece (index algebra's
 * clf__ix_unit_stride and clf__ix_multiple_of), and the staged axis is a
 * multiple of a piece. guarded: "static inline uint4
 * clf_stage_<name>(IDX_T bt, <params>, CLF_PARAMS)", the values, zeros
 * where col is past the row; else "static inline __global const uint4
 * *clf_stage_<name>_at(IDX_T bt, <params>, CLF_PARAMS)", their address
 * (for cp.async; the template checks the extents). Else emits nothing: the
 * template's stage goes through the generated loads. */
void clf__cg_emit_stage16(const clf_graph *g, const clf__plan *plan, uint32_t k, const clf__node *mm, int which,
                          bool swapped, bool f32_values, const char *name, const char *params, const char *r,
                          const char *col, bool guarded, clf__strbuf *src);

/* Emits "IDX_T off = ..." (and its temporaries): the offset of batch bt of
 * MATMUL mm's batch axes in the row-major buffer of node op, op's batch
 * axes broadcast from mm's (the last two axes of op are a matrix). */
void clf__cg_emit_batch_offset(const clf__node *mm, const clf__node *op, clf__strbuf *src);

/* Most row statistics a GEMM kernel computes (planner.c's
 * ROW_STATS_MAX). */
#define CLF__CG_ROW_STATS_MAX 8

/* The row statistics GEMM kernel k computes for its first operand's
 * prologue (the planner's row statistics: REDUCE nodes over the operand's
 * rows that it evaluates): how many, the first cap of them into stats,
 * ascending (each reads only those before it). 0 for other kinds. */
uint32_t clf__cg_row_stats(const clf__plan *plan, uint32_t k, const clf_graph *g, uint32_t *stats, uint32_t cap);

/* Emits "#define CLF_ROW_STATS <n>", the type a row's statistics travel
 * in by value (clf_row_stat_values, its floats in v[]) and what computes
 * the row statistics of GEMM kernel k's first operand. CPU forms: "static
 * inline void clf_row_stats(IDX_T bt, IDX_T m, float *out, CLF_PARAMS)",
 * row m of product bt into out[0..n), each a loop along the row (f32 sums
 * in double where fp64). GPU forms: what kernels_templates/row_stats.cl
 * takes (clf_row_stat_term, _init, _combine, _finish). False when out of
 * memory or not expressible. */
bool clf__cg_emit_row_stats(const clf_graph *g, const clf__plan *plan, uint32_t k, bool cpu, bool fp64,
                            clf__strbuf *src);

/* Emits "static inline float <fname>(IDX_T bt, IDX_T r, IDX_T c,
 * CLF_PARAMS)" returning operand `which` (0: a [.., M, K] as (m, k); 1: b
 * [.., K, N] as (k, n)) of MATMUL node mm at batch bt, its batch axes
 * broadcast from the product's. Where kernel k computes row statistics,
 * A's function takes its row's after c: "clf_row_stat_values st,
 * CLF_PARAMS". */
bool clf__cg_emit_operand_load(const clf_graph *g, const clf__plan *plan, uint32_t k, const clf__node *mm, int which,
                               const char *fname, clf__strbuf *src);
/* The same function evaluating w consecutive columns at once (A's k, B's
 * n; w 2, 4, 8 or 16): "static inline float<w> <fname>(...)", the same
 * parameters, its prologue computed in vectors. Where some value of the
 * prologue has no vector form (integers, gathers, movement that reorders
 * the columns) emits nothing and returns false: the caller keeps the
 * scalar function. */
bool clf__cg_emit_operand_prologue_vec(const clf_graph *g, const clf__plan *plan, uint32_t k, const clf__node *mm,
                                       int which, int w, const char *fname, clf__strbuf *src);

/* Emits "static inline float<w> <fname>(IDX_T bt, IDX_T r, IDX_T c,
 * CLF_PARAMS)": w consecutive elements of operand `which` of MATMUL node mm
 * along its rows (along 0: r .. r+w-1 at column c) or columns (along 1: c
 * .. c+w-1 of row r). One vector load (through a floatw pointer when the
 * caller proved the address aligned, else vloadw) when the operand is a
 * buffer contiguous along that axis: read as it is (columns), or a
 * TRANSPOSE of the last two axes of one (rows: K of Q Kt); returns true
 * then. Else the operand's prologue computed in vectors along that axis
 * where it has a vector form (as clf__cg_emit_operand_prologue_vec; not
 * for an A whose prologue takes row statistics), true too. Else w calls
 * of the scalar load `scalar` (same arguments), and false. */
bool clf__cg_emit_operand_load_vec(const clf_graph *g, const clf__plan *plan, uint32_t k, const clf__node *mm,
                                   int which, int along, int w, bool aligned, const char *scalar, const char *fname,
                                   clf__strbuf *src);

/* Emits "static inline void clf_store(IDX_T bt, IDX_T m, IDX_T n, float
 * acc, CLF_PARAMS)": every store of kernel k at the product's element
 * (bt, m, n) whose f32 value is acc (uses the M and N macros). */
clf_status clf__cg_emit_product_store(const clf_graph *g, const clf__plan *plan, uint32_t k, clf__strbuf *src,
                                      char *err, size_t errlen);
/* The same for w consecutive elements of a row of a GEMM's product,
 * "static inline void clf_store_v(IDX_T bt, IDX_T m, IDX_T n, float<w>
 * acc, CLF_PARAMS)" (n to n + w - 1, inside the row): the epilogue computed
 * in vectors, the stores vector stores. Emits nothing and returns false
 * where the epilogue has no vector form (integers, gathers, permuted
 * stores): the caller keeps clf_store. */
bool clf__cg_emit_product_store_vec(const clf_graph *g, const clf__plan *plan, uint32_t k, int w, clf__strbuf *src);

/* Emits "static inline floatW fname(IDX_T bt, IDX_T m, IDX_T n, floatW acc,
 * CLF_PARAMS)": node `value`, an elementwise function of the product mm's
 * elements (the attention's logits of its scores), at mm's elements (bt,
 * m, n .. n + w - 1) whose products are acc's lanes, evaluated as
 * forward_node's input forward_input where forward_node is not
 * UINT32_MAX. Only where every value has a vector form: otherwise false
 * with nothing appended (as for a failure). */
bool clf__cg_emit_product_value_vec(const clf_graph *g, const clf__plan *plan, uint32_t k, const clf__node *mm,
                                    uint32_t value, uint32_t forward_node, int forward_input, int w, const char *fname,
                                    clf__strbuf *src);

#endif
