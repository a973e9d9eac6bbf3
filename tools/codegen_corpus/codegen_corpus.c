/* codegen_corpus: plans and generates every kernel of a corpus of graphs
 * for a fixed set of device targets, without a device, and prints one line
 * per kernel (graph, plan options, target, kernel, its name, geometry and
 * the SHA-256 of its source). Run before and after a refactor of the
 * planner or codegen, the two outputs diffed show every generated source
 * that changed:
 *
 *   build/tools/codegen_corpus/codegen_corpus FILES... > before.txt
 *
 * with FILES the model fixtures (tests/models/NAME/model.onnx), tests/onnx
 * and tests/graphs.
 *
 * The corpus is the model files named on the command line plus the
 * benchmark suite's graphs (bench/bench_graphs.c) at GPU and CPU sizes.
 * With --dump DIR first, each source is also written to DIR/NNNNN.cl (the
 * input of lift_corpus, beside this file). */
#include <stdio.h>
#include <string.h>

#include "clfuse/clfuse.h"
#include "clfuse/onnx.h"

#include "../../bench/bench_graphs.h"
#include "codegen/codegen.h"
#include "planner/planner.h"
#include "util/sha256.h"

/* --dump's directory, NULL without it; the sources written so far. */
static const char *dump_dir;
static unsigned dumped;

static void dump(const char *source)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%05u.cl", dump_dir, dumped++);
    FILE *f = fopen(path, "w");
    if (!f || fputs(source, f) < 0)
        fprintf(stderr, "codegen_corpus: cannot write %s\n", path);
    if (f)
        fclose(f);
}

typedef struct named_target {
    const char *name;
    clf__codegen_target t;
} named_target;

static const named_target targets[] = {
    {"cpu", {.cpu = true, .max_local = 4096, .compute_units = 2, .local_mem = 65536}},
    {"gpu", {.cpu = false, .max_local = 1024, .compute_units = 132, .local_mem = 49152}},
    {"nvidia", {.cpu = false, .max_local = 1024, .compute_units = 132, .local_mem = 49152, .warp_shuffle = true}},
    {"llvmpipe", {.cpu = true, .max_local = 32, .compute_units = 2, .local_mem = 65536, .max_loop_trips = 65535,
                  .small_code = true}},
};

static void emit(const char *graph, const clf_graph *g)
{
    for (size_t t = 0; t < sizeof targets / sizeof targets[0]; t++) {
        for (int fused = 1; fused >= 0; fused--) {
            const clf__codegen_target *T = &targets[t].t;
            clf__plan_options o = {.disable_fusion = !fused, .max_fused_depth = T->small_code ? CLF__SMALL_CODE_DEPTH : 0};
            clf__plan p;
            char err[256] = "";
            if (clf__plan_build(g, &o, &p, err, sizeof err) != CLF_OK) {
                printf("%s %s %s plan-failed %s\n", graph, fused ? "fused" : "unfused", targets[t].name, err);
                continue;
            }
            for (uint32_t k = 0; k < p.nkernels; k++) {
                clf__kernel_code c;
                if (clf__codegen_kernel(g, &p, k, T, &c, err, sizeof err) != CLF_OK) {
                    printf("%s %s %s %u codegen-failed %s\n", graph, fused ? "fused" : "unfused", targets[t].name, k,
                           err);
                    continue;
                }
                clf__sha256 s;
                unsigned char d[32];
                clf__sha256_init(&s);
                clf__sha256_update(&s, c.source, strlen(c.source));
                if (dump_dir)
                    dump(c.source);
                clf__sha256_final(&s, d);
                printf("%s %s %s %u %s g=%zu l=%zu v=%d i=%d fin=%s %zu/%zu scratch=%llu ", graph,
                       fused ? "fused" : "unfused", targets[t].name, k, c.name, c.global, c.local, c.vec, c.items,
                       c.final_name ? c.final_name : "-", c.final_global, c.final_local,
                       (unsigned long long)c.scratch_bytes);
                for (int i = 0; i < 8; i++)
                    printf("%02x", d[i]);
                printf("\n");
                clf__kernel_code_free(&c);
            }
            clf__plan_free(&p);
        }
    }
}

int main(int argc, char **argv)
{
    int first = 1;
    if (argc > 2 && !strcmp(argv[1], "--dump")) {
        dump_dir = argv[2];
        first = 3;
    }
    for (int a = first; a < argc; a++) {
        clf_onnx_model *m = NULL;
        char msg[512] = "";
        if (clf_onnx_load_file(argv[a], clf_onnx_params(.message = msg, .message_cap = sizeof msg), &m) != CLF_OK) {
            printf("%s load-failed %s\n", argv[a], msg);
            continue;
        }
        emit(argv[a], clf_onnx_model_graph(m));
        clf_onnx_model_destroy(&m);
    }
    static const clf_dtype dts[] = {CLF_F32, CLF_F16, CLF_BF16};
    for (int gpu = 0; gpu < 2; gpu++)
        for (size_t d = 0; d < 3; d++) {
            bench_case cases[64];
            size_t n = bench_suite_cases(gpu, dts[d], cases, 64);
            for (size_t i = 0; i < n; i++) {
                clf_graph *g = bench_case_graph(&cases[i]);
                char name[128];
                snprintf(name, sizeof name, "bench:%s:%s:%s", cases[i].name, gpu ? "gpu" : "cpu",
                         clf_dtype_name(dts[d]));
                if (g)
                    emit(name, g);
                clf_graph_destroy(&g);
            }
        }
    return 0;
}
