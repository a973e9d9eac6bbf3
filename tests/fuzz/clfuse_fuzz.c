/* clfuse-fuzz: the differential graph fuzzer's command line.
 *
 *   clfuse-fuzz [--seed S] [--count N] [--start I] [--index I] ...
 *
 * Generates graphs S/I for I in [start, start + count), runs each on the
 * device (fused and unfused, and both kernel styles for graphs with
 * reductions) against the reference interpreter, and for each failure
 * prints the seed and index, the shrunk graph as a listing and as ONNX
 * text (for `clfuse check`), and the command that reproduces it. Exit
 * status: 0 when every graph agreed, 1 when one failed, 2 on bad usage,
 * 77 when there is no OpenCL device. */
#define _XOPEN_SOURCE 700 /* nftw */
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fuzz.h"

static const char usage[] =
    "usage: clfuse-fuzz [options]\n"
    "  --seed S          seed of the run (default 1)\n"
    "  --count N         graphs to try (default 100)\n"
    "  --start I         index of the first graph (default 0)\n"
    "  --index I         only graph I (same as --start I --count 1)\n"
    "  --family F        draw each graph's first op from family F (matmul, gemm,\n"
    "                    reduce, softmax, ...: the names in fuzz_ops.c's table)\n"
    "  --unfused-every K compare against disable_fusion on every K-th graph (default 1; 0: never)\n"
    "  --no-styles       do not force the CPU and GPU kernel styles\n"
    "  --no-shrink       print failing graphs as generated\n"
    "  --max-failures N  stop after N failing graphs (default 5)\n"
    "  --list            print the graphs without running them\n"
    "  --onnx            with --list: print each graph as ONNX text instead\n"
    "  --verbose         print every graph and its verdict\n"
    "  --device D        device, as CLFUSE_DEVICE\n";

static char crash_line[128];

/* A crash inside the library still names the graph that caused it. */
static void on_crash(int sig)
{
    if (crash_line[0]) {
        ssize_t w = write(2, crash_line, strlen(crash_line));
        (void)w;
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static bool parse_u64(const char *s, uint64_t *out)
{
    char *end;
    if (!s || !*s)
        return false;
    *out = strtoull(s, &end, 0);
    return *end == 0;
}

int main(int argc, char **argv)
{
    uint64_t seed = 1, count = 100, start = 0, unfused_every = 1, max_failures = 5;
    bool styles = true, shrink = true, list = false, verbose = false, onnx = false;
    const char *device = NULL;
    int force = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        bool ok = true;
        if (!strcmp(a, "--seed"))
            ok = parse_u64(v, &seed), i++;
        else if (!strcmp(a, "--count"))
            ok = parse_u64(v, &count), i++;
        else if (!strcmp(a, "--start"))
            ok = parse_u64(v, &start), i++;
        else if (!strcmp(a, "--index"))
            ok = parse_u64(v, &start), count = 1, i++;
        else if (!strcmp(a, "--unfused-every"))
            ok = parse_u64(v, &unfused_every), i++;
        else if (!strcmp(a, "--max-failures"))
            ok = parse_u64(v, &max_failures), i++;
        else if (!strcmp(a, "--family")) {
            force = v ? fz_family_by_name(v) : -1;
            if (force < 0 || !fz_families[force].weight) {
                fprintf(stderr, "clfuse-fuzz: --family: no op family '%s'\n", v ? v : "");
                return 2;
            }
            i++;
        } else if (!strcmp(a, "--device"))
            ok = (device = v) != NULL, i++;
        else if (!strcmp(a, "--no-styles"))
            styles = false;
        else if (!strcmp(a, "--no-shrink"))
            shrink = false;
        else if (!strcmp(a, "--list"))
            list = true;
        else if (!strcmp(a, "--onnx"))
            onnx = true;
        else if (!strcmp(a, "--verbose"))
            verbose = true;
        else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage, stdout);
            return 0;
        } else {
            fprintf(stderr, "clfuse-fuzz: unknown option '%s'\n%s", a, usage);
            return 2;
        }
        if (!ok) {
            fprintf(stderr, "clfuse-fuzz: %s needs a number\n%s", a, usage);
            return 2;
        }
    }

    fz_graph *G = malloc(sizeof *G);
    if (!G) {
        fprintf(stderr, "clfuse-fuzz: out of memory\n");
        return 1;
    }
    if (list) {
        for (uint64_t i = start; i < start + count; i++) {
            fz_generate(seed, i, force, G);
            if (onnx) {
                printf("# graph %llu/%llu\n", (unsigned long long)seed, (unsigned long long)i);
                fz_print_onnx(stdout, G);
                continue;
            }
            printf("graph %llu/%llu:\n", (unsigned long long)seed, (unsigned long long)i);
            fz_print_listing(stdout, G);
        }
        free(G);
        return 0;
    }

    /* PoCL's kernel cache in a folder of our own, removed at the end. */
    char tmpdir[] = "/tmp/clfuse-fuzz-XXXXXX";
    bool own_tmp = false;
    if (!getenv("POCL_CACHE_DIR") && mkdtemp(tmpdir)) {
        setenv("POCL_CACHE_DIR", tmpdir, 1);
        own_tmp = true;
    }

    char cmsg[512] = "";
    clf_context *ctx = NULL;
    /* The fuzzer's thousands of programs stay out of the user's disk cache. */
    clf_status st = clf_context_create(
        clf_context_params(.device = device, .disable_disk_cache = true, .message = cmsg, .message_cap = sizeof cmsg),
        &ctx);
    if (st != CLF_OK) {
        fprintf(stderr, "clfuse-fuzz: no OpenCL device: %s (%s); skipped\n", cmsg, clf_status_name(st));
        free(G);
        return 77;
    }
    clf_device_desc dev;
    clf_context_device(ctx, &dev);
    printf("clfuse-fuzz: seed %llu, graphs %llu..%llu, device %s (%s)\n", (unsigned long long)seed,
           (unsigned long long)start, (unsigned long long)(start + count - 1), dev.device_name, dev.platform_name);
    fflush(stdout);
    signal(SIGSEGV, on_crash);
    signal(SIGBUS, on_crash);
    signal(SIGFPE, on_crash);
    signal(SIGABRT, on_crash);
    signal(SIGILL, on_crash);

    uint64_t failures = 0, ran = 0, nodes = 0, contractions = 0;
    time_t t0 = time(NULL);
    char why[2048];
    for (uint64_t i = start; i < start + count && failures < max_failures; i++) {
        fz_generate(seed, i, force, G);
        snprintf(crash_line, sizeof crash_line, "\nclfuse-fuzz: crashed on graph --seed %llu --index %llu\n",
                 (unsigned long long)seed, (unsigned long long)i);
        fz_options o = {.unfused = unfused_every && i % unfused_every == 0, .styles = styles, .verbose = verbose};
        if (verbose) {
            printf("graph %llu/%llu:\n", (unsigned long long)seed, (unsigned long long)i);
            fz_print_listing(stdout, G);
            fflush(stdout);
        }
        fz_verdict v = fz_check(ctx, G, &o, why, sizeof why);
        ran++;
        nodes += (uint64_t)G->n;
        for (int k = 0; k < G->n; k++)
            if (fz_families[G->node[k].family].tol == FZ_TOL_CONTRACTION) {
                contractions++;
                break;
            }
        if (v == FZ_INVALID && verbose)
            printf("  (skipped: %s)\n", why);
        if (v != FZ_FAIL)
            continue;
        failures++;
        printf("\nFAIL seed %llu index %llu: %s\n", (unsigned long long)seed, (unsigned long long)i, why);
        printf("graph as generated (%d nodes):\n", G->n);
        fz_print_listing(stdout, G);
        fflush(stdout);
        if (shrink) {
            int steps = fz_shrink(ctx, G, &o, why, sizeof why);
            printf("shrunk in %d steps to %d nodes: %s\n", steps, G->n, why);
            fz_print_listing(stdout, G);
        }
        printf("as ONNX text (clfuse check FILE --tol ...):\n");
        fz_print_onnx(stdout, G);
        printf("reproduce: clfuse-fuzz --seed %llu --index %llu%s%s%s\n\n", (unsigned long long)seed,
               (unsigned long long)i, o.unfused ? "" : " --unfused-every 0", force >= 0 ? " --family " : "",
               force >= 0 ? fz_families[force].name : "");
        fflush(stdout);
    }
    crash_line[0] = 0;
    printf("clfuse-fuzz: %llu graphs (%llu nodes, %llu with a matmul or gemm), %llu failed, %lld s\n",
           (unsigned long long)ran, (unsigned long long)nodes, (unsigned long long)contractions,
           (unsigned long long)failures, (long long)(time(NULL) - t0));
    clf_context_destroy(&ctx);
    free(G);
    if (own_tmp)
        nftw(tmpdir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    return failures ? 1 : 0;
}
