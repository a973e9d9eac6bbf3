/* Kernel templates from kernels_templates/, embedded at build time by
 * tools/embed_templates.py. */
#ifndef CLFUSE_TEMPLATES_H
#define CLFUSE_TEMPLATES_H

extern const char clf__template_pointwise[];
extern const char clf__template_reduction_cpu[];
extern const char clf__template_reduction_gpu[];
extern const char clf__template_reduction_split[];
extern const char clf__template_gemm[];
extern const char clf__template_gemm_cpu[];
extern const char clf__template_gemm_mma[];
extern const char clf__template_gemm_rows[];
extern const char clf__template_attention_cpu[];
extern const char clf__template_attention_gpu[];
extern const char clf__template_attention_mma[];
extern const char clf__template_attention_decode[];
extern const char clf__template_mma_sync[];
extern const char clf__template_erf[];
extern const char clf__template_row_stats[];
/* Changes whenever any template changes: part of every cache key. */
extern const char clf__templates_hash[];

#endif

