/* codegen_corpus: plans and generates every kernel of a corpus of graphs
 * for a fixed set of device targets, without a device, and prints one line
 * per kernel (graph, plan options, target, kernel, its name, geometry and
 * the SHA-256 of its source, then its schedule). Run before and after a refactor of the
 * planner or codegen, the two outputs diffed show every generated source
 * that changed:
 *
 *   build/tools/codegen_corpus/codegen_corpus FILES... > before.txt
 *
 * with FILES the model fixtures (tests/models/NAME/model.onnx), tests/onnx
 * and tests/graphs (a folder stands for its .onnx and .onnxtxt files and
 * its folders' model.onnx).
 *
 * The corpus is the model files named on the command line plus the
 * benchmark suite's graphs (bench/bench_graphs.c) at GPU and CPU sizes.
 * With --dump DIR first, each source is also written to DIR/NNNNN.cl (the
 * input of lift_corpus, beside this file). With --memo first, each kernel
 * is also taken through a kernel memo (codegen.h's clf__kernel_memo, one a
 * target, shared by every graph) and compared with the one just generated:
 * any difference is printed and the exit status is 1 (the check of the
 * memo's key, run by the test suite over the model fixtures). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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
    {"nvidia-mma", {.cpu = false, .max_local = 1024, .compute_units = 132, .local_mem = 49152, .warp_shuffle = true,
                    .tensor_cores = true}},
    {"cpu16", {.cpu = true, .fp64 = true, .max_local = 4096, .compute_units = 16, .local_mem = 65536, .float_width = 16}},
    {"llvmpipe", {.cpu = true, .max_local = 32, .compute_units = 2, .local_mem = 65536, .max_loop_trips = 65535,
                  .small_code = true}},
};

enum { NTARGETS = sizeof targets / sizeof targets[0] };

/* --memo: a memo a target, the kernels compared, those the memo gave, and
 * the differences found. */
static clf__kernel_memo *memos[NTARGETS];
static unsigned long compared, differing;

static bool same_str(const char *a, const char *b) { return a == b || (a && b && !strcmp(a, b)); }

/* Whether the schedules read the same (clf__schedule_str: every field). */
static bool same_schedule(const clf__kernel_code *a, const clf__kernel_code *b)
{
    char x[512], y[512];
    return !strcmp(clf__schedule_str(a, x, sizeof x), clf__schedule_str(b, y, sizeof y));
}

/* Whether code b (through the memo) is code a (generated), field by field. */
static bool same_code(const clf__kernel_code *a, const clf__kernel_code *b)
{
    return same_str(a->name, b->name) && same_str(a->entry, b->entry) && same_str(a->ops, b->ops) &&
           same_str(a->source, b->source) && same_str(a->final_name, b->final_name) && a->nparams == b->nparams &&
           !memcmp(a->params, b->params, a->nparams * sizeof *a->params) && a->wide_index == b->wide_index &&
           a->vec == b->vec && a->items == b->items && a->global == b->global && a->local == b->local &&
           a->final_global == b->final_global && a->final_local == b->final_local &&
           a->scratch_bytes == b->scratch_bytes && a->state_bytes == b->state_bytes && a->canonical == b->canonical &&
           same_schedule(a, b);
}

static void check_memo(const char *graph, size_t t, const clf_graph *g, const clf__plan *p, uint32_t k,
                       const clf__kernel_code *fresh)
{
    clf__kernel_code m;
    char err[256] = "";
    compared++;
    if (clf__codegen_kernel_memo(memos[t], g, p, k, &targets[t].t, &m, err, sizeof err) != CLF_OK) {
        printf("%s %s %u memo-failed %s\n", graph, targets[t].name, k, err);
        differing++;
        return;
    }
    if (!same_code(fresh, &m)) {
        printf("%s %s %u memo-differs %s / %s\n", graph, targets[t].name, k, fresh->name, m.name);
        differing++;
    }
    clf__kernel_code_free(&m);
}

static void emit(const char *graph, const clf_graph *g)
{
    for (size_t t = 0; t < NTARGETS; t++) {
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
                if (memos[t])
                    check_memo(graph, t, g, &p, k, &c);
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
                char line[512];
                printf(" %s\n", clf__schedule_str(&c, line, sizeof line));
                clf__kernel_code_free(&c);
            }
            clf__plan_free(&p);
        }
    }
}

static void emit_file(const char *path)
{
    clf_onnx_model *m = NULL;
    char msg[512] = "";
    if (clf_onnx_load_file(path, clf_onnx_params(.message = msg, .message_cap = sizeof msg), &m) != CLF_OK) {
        printf("%s load-failed %s\n", path, msg);
        return;
    }
    emit(path, clf_onnx_model_graph(m));
    clf_onnx_model_destroy(&m);
}

static bool ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), t = strlen(tail);
    return n >= t && !strcmp(s + n - t, tail);
}

/* A model file, or a folder: its .onnx and .onnxtxt files and its
 * folders' model.onnx (tests/models, tests/onnx), in name order. */
static void emit_path(const char *path)
{
    struct dirent **names = NULL;
    int n = scandir(path, &names, NULL, alphasort);
    if (n < 0) {
        emit_file(path);
        return;
    }
    for (int i = 0; i < n; i++) {
        char sub[4096];
        const char *e = names[i]->d_name;
        struct stat st;
        snprintf(sub, sizeof sub, "%s/%s", path, e);
        if (e[0] != '.' && (ends_with(e, ".onnx") || ends_with(e, ".onnxtxt")))
            emit_file(sub);
        else if (e[0] != '.' && stat(sub, &st) == 0 && S_ISDIR(st.st_mode)) {
            snprintf(sub, sizeof sub, "%s/%s/model.onnx", path, e);
            if (stat(sub, &st) == 0)
                emit_file(sub);
        }
        free(names[i]);
    }
    free(names);
}

int main(int argc, char **argv)
{
    int first = 1;
    if (argc > 2 && !strcmp(argv[1], "--dump")) {
        dump_dir = argv[2];
        first = 3;
    }
    const bool memo = argc > first && !strcmp(argv[first], "--memo");
    first += memo;
    for (size_t t = 0; memo && t < NTARGETS; t++)
        if (!(memos[t] = clf__kernel_memo_new()))
            return 2;
    for (int a = first; a < argc; a++)
        emit_path(argv[a]);
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
    if (!memo)
        return 0;
    unsigned long hits = 0;
    for (size_t t = 0; t < NTARGETS; t++) {
        hits += clf__kernel_memo_hits(memos[t]);
        clf__kernel_memo_free(&memos[t]);
    }
    fprintf(stderr, "codegen_corpus --memo: %lu kernels, %lu from the memo, %lu differ\n", compared, hits, differing);
    return differing ? 1 : 0;
}
