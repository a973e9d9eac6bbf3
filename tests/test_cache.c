/* Suite "cache": the on-disk program cache and the plan cache. Cold then warm (the warm compile
 * builds nothing from source), entries that are corrupt, truncated, of
 * another format or refused by the driver (removed and rebuilt, with the
 * reason under CLFUSE_LOGS=cache), a changed key field and a hash collision
 * (misses), the switches that turn it off, an unusable directory (the
 * compile still succeeds), and several processes compiling at once. Each test
 * points CLFUSE_CACHE_DIR at a fresh directory before making a context. */
#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/driver_quirks.h"
#include "runtime/program_merge.h"
#include "runtime/runtime_internal.h"
#include "test_support.h"
#include "util/alloc.h"
#include "util/hash.h"

#define N 1000

/* The seed example: y = relu(a*b + c). */
static clf_graph *seed_graph(void)
{
    clf_graph *g = clf_graph_create();
    const int64_t n = N;
    clf_tensor a = clf_input(g, "a", CLF_F32, 1, &n), b = clf_input(g, "b", CLF_F32, 1, &n),
               c = clf_input(g, "c", CLF_F32, 1, &n);
    clf_graph_output(g, "y", clf_relu(g, clf_add(g, clf_mul(g, a, b), c)));
    ck_assert_int_eq(clf_graph_status(g, NULL), CLF_OK);
    return g;
}

/* A fresh cache directory, set as CLFUSE_CACHE_DIR; returns its path. */
static const char *fresh_cache_dir(const char *sub)
{
    static char path[512];
    char tmpl[] = "/tmp/clfuse-cache-test-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(tmpl));
    snprintf(path, sizeof path, "%s%s", tmpl, sub);
    ck_assert_int_eq(setenv("CLFUSE_CACHE_DIR", path, 1), 0);
    unsetenv("CLFUSE_CACHE");
    return path;
}

/* Compiles the seed graph on a new context, runs it and checks the result;
 * returns what the program caches did. */
static clf__program_counts compile_seed(const clf_context_params *params)
{
    clf_context *ctx = NULL;
    clf_status st = clf_context_create(params, &ctx);
    ck_assert_msg(st == CLF_OK, "clf_context_create: %s", clf_status_name(st));
    clf_graph *g = seed_graph();
    clf_executable *exe = NULL;
    st = clf_compile(ctx, g, NULL, &exe);
    ck_assert_msg(st == CLF_OK, "%s: %s", clf_status_name(st), clf_context_last_error(ctx));
    float a[N], b[N], c[N], y[N];
    clf_test_fill_f32(a, N, -1, 1);
    clf_test_fill_f32(b, N, -1, 1);
    clf_test_fill_f32(c, N, -1, 1);
    memset(y, 0xff, sizeof y);
    clf_host_binding in[3] = {{"a", a}, {"b", b}, {"c", c}}, out[1] = {{"y", y}};
    st = clf_run_host(exe, 3, in, 1, out);
    ck_assert_msg(st == CLF_OK, "%s: %s", clf_status_name(st), clf_context_last_error(ctx));
    for (int i = 0; i < N; i++) {
        float want = fmaxf(a[i] * b[i] + c[i], 0.0f);
        ck_assert_msg(fabsf(y[i] - want) <= 1e-6f + 1e-5f * fabsf(want), "y[%d] = %g, want %g", i, (double)y[i],
                      (double)want);
    }
    clf__program_counts counts;
    clf__program_cache_counts(ctx, &counts);
    clf_executable_destroy(&exe);
    clf_graph_destroy(&g);
    clf_context_destroy(&ctx);
    return counts;
}

/* Entries (*.clbin) and leftovers (anything else) in dir. */
static void list_dir(const char *dir, int *entries, int *others, char *entry, size_t cap)
{
    *entries = *others = 0;
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    for (struct dirent *de; (de = readdir(d));) {
        if (de->d_name[0] == '.')
            continue;
        size_t len = strlen(de->d_name);
        if (len > 6 && strcmp(de->d_name + len - 6, ".clbin") == 0) {
            (*entries)++;
            if (entry)
                snprintf(entry, cap, "%s/%s", dir, de->d_name);
        } else if (len > 7 && strcmp(de->d_name + len - 7, ".clplan") == 0) {
            /* plan entries: counted by list_plans */
        } else {
            (*others)++;
        }
    }
    closedir(d);
}

/* Plan entries (*.clplan) in dir; the last one's path in entry. */
static int list_plans(const char *dir, char *entry, size_t cap)
{
    int n = 0;
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    for (struct dirent *de; (de = readdir(d));) {
        size_t len = strlen(de->d_name);
        if (len > 7 && strcmp(de->d_name + len - 7, ".clplan") == 0) {
            n++;
            if (entry)
                snprintf(entry, cap, "%s/%s", dir, de->d_name);
        }
    }
    closedir(d);
    return n;
}

static unsigned char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *p = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(p);
    ck_assert_uint_eq(fread(p, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return p;
}

static void write_file(const char *path, const unsigned char *p, size_t len)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(p, 1, len, f), len);
    ck_assert_int_eq(fclose(f), 0);
}

/* Runs compile_seed with stderr captured and CLFUSE_LOGS=cache; the log goes
 * to log (cap bytes). */
static clf__program_counts compile_seed_logged(char *log, size_t cap)
{
    clf_test_log lc = clf_test_log_begin("cache");
    clf__program_counts c = compile_seed(NULL);
    clf_test_log_end(&lc, log, cap);
    return c;
}

START_TEST(cold_then_warm)
{
    const char *dir = fresh_cache_dir("/made/by/clfuse"); /* mkdir -p */
    char log[8192];
    clf__program_counts cold = compile_seed_logged(log, sizeof log);
    ck_assert_uint_eq(cold.source_builds, 1);
    /* Progress: each kernel's program, built or cached, and its time. */
    ck_assert_msg(strstr(log, "kernel 1 of 1 (") && strstr(log, "): built in "), "%s", log);
    ck_assert_uint_eq(cold.disk_hits, 0);
    ck_assert_uint_eq(cold.disk_stores, 1);
    int entries, others;
    char entry[600];
    list_dir(dir, &entries, &others, entry, sizeof entry);
    ck_assert_int_eq(entries, 1);
    ck_assert_int_eq(others, 0); /* no temporary file left */
    struct stat st;
    ck_assert_int_eq(stat(dir, &st), 0);
    ck_assert_uint_eq(st.st_mode & 0777, 0700);
    ck_assert_int_eq(stat(entry, &st), 0);
    ck_assert_uint_eq(st.st_mode & 0077, 0);

    /* A new context has an empty memory cache: the warm compile loads the
     * binary and builds nothing from source. */
    clf__program_counts warm = compile_seed_logged(log, sizeof log);
    ck_assert_uint_eq(warm.source_builds, 0);
    ck_assert_uint_eq(warm.disk_hits, 1);
    ck_assert_uint_eq(warm.disk_stores, 0);
    ck_assert_msg(strstr(log, "disk hit"), "%s", log);
    ck_assert_msg(strstr(log, "kernel 1 of 1 (") && strstr(log, "): cached in "), "%s", log);
    list_dir(dir, &entries, &others, NULL, 0);
    ck_assert_int_eq(entries, 1);
}
END_TEST

/* The header as program_cache_disk.c writes it. */
enum { MAGIC_AT = 0, VERSION_AT = 8, KLEN_AT = 16, BLEN_AT = 24, SUM_AT = 32, HEADER = 40 };

static uint64_t get64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static void put64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

/* Corrupts a good entry in one way each; the next compile must discard it
 * (saying why), rebuild from source, store a good entry again, and the one
 * after that must hit. */
static const struct corruption {
    const char *name;
    const char *why; /* in the cache log */
} corruptions[] = {
    {"flipped binary byte", "checksum mismatch"},
    {"flipped key byte", "checksum mismatch"},
    {"truncated to the header's middle", "truncated"},
    {"truncated in the binary", "truncated"},
    {"empty file", "truncated"},
    {"trailing garbage", "truncated or padded"},
    {"bad magic", "bad magic"},
    {"future format version", "format version"},
    {"binary the driver refuses", "rejected the binary"},
};

START_TEST(corrupt_entries)
{
    const struct corruption *c = &corruptions[_i];
    const char *dir = fresh_cache_dir("");
    clf__program_counts cold = compile_seed(NULL);
    ck_assert_uint_eq(cold.disk_stores, 1);
    int entries, others;
    char entry[600];
    list_dir(dir, &entries, &others, entry, sizeof entry);
    ck_assert_int_eq(entries, 1);
    size_t len;
    unsigned char *p = read_file(entry, &len);
    ck_assert_uint_gt(len, HEADER);
    size_t klen = (size_t)get64(p + KLEN_AT), blen = (size_t)get64(p + BLEN_AT);
    ck_assert_uint_eq(HEADER + klen + blen, len);
    switch (_i) {
    case 0: p[HEADER + klen + blen / 2] ^= 0x40; break;
    case 1: p[HEADER + klen / 2] ^= 0x01; break;
    case 2: len = HEADER / 2; break;
    case 3: len = HEADER + klen + blen / 2; break;
    case 4: len = 0; break;
    case 5: {
        unsigned char *q = realloc(p, len + 100);
        ck_assert_ptr_nonnull(q);
        p = q;
        memset(p + len, 0x5a, 100);
        len += 100;
        break;
    }
    case 6: p[MAGIC_AT] = 'X'; break;
    case 7: p[VERSION_AT] = 99; break;
    case 8:
        /* Garbage the size of the binary with a correct checksum: only the
         * driver can tell. */
        for (size_t i = 0; i < blen; i++)
            p[HEADER + klen + i] = (unsigned char)(clf_test_rand() >> 7);
        memcpy(p + HEADER + klen, "garbage!", 8);
        put64(p + SUM_AT, clf__hash_bytes(clf__hash_bytes(CLF__HASH_SEED, p + HEADER, klen), p + HEADER + klen, blen));
        break;
    }
    write_file(entry, p, len);
    free(p);

    char log[8192];
    clf__program_counts again = compile_seed_logged(log, sizeof log);
    ck_assert_msg(again.disk_discards == 1, "%s: %llu discards; log:\n%s", c->name,
                  (unsigned long long)again.disk_discards, log);
    ck_assert_uint_eq(again.disk_hits, 0);
    ck_assert_uint_eq(again.source_builds, 1);
    ck_assert_uint_eq(again.disk_stores, 1);
    ck_assert_msg(strstr(log, c->why), "%s: the log should say \"%s\":\n%s", c->name, c->why, log);
    list_dir(dir, &entries, &others, NULL, 0);
    ck_assert_int_eq(entries, 1);
    ck_assert_int_eq(others, 0);
    clf__program_counts warm = compile_seed(NULL);
    ck_assert_uint_eq(warm.disk_hits, 1);
    ck_assert_uint_eq(warm.source_builds, 0);
}
END_TEST

/* Every key field is in the key; changing one (here the driver version, as
 * after a driver upgrade) misses and stores a second entry. An entry under
 * the right name that holds another key (a hash collision) is a miss, not a
 * wrong binary, and is overwritten. */
START_TEST(changed_key_field)
{
    const char *dir = fresh_cache_dir("");
    clf_context *ctx = clf_test_context();
    const char *fields[] = {"platform-vendor ", "platform-name ", "platform-version ", "device-vendor ",
                            "device-name ", "device-version ", "driver-version ", "address-bits ",
                            "codegen-version ", "templates-hash "};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        ck_assert_msg(strstr(ctx->cache_device_key, fields[i]), "key lacks %s:\n%s", fields[i],
                      ctx->cache_device_key);
    const char *src = "__kernel void k(__global float *x) { x[get_global_id(0)] += 1.0f; }";
    cl_program prog = NULL;
    ck_assert_int_eq(clf__program_get(ctx, src, "", &prog, NULL), CLF_OK);
    clReleaseProgram(prog);
    char *path_old = clf__disk_cache_path(ctx, src, "");
    char *path_opt = clf__disk_cache_path(ctx, src, "-cl-fast-relaxed-math");
    ck_assert_str_ne(path_old, path_opt); /* build options are in the key */

    /* The driver is "upgraded": a new context with another driver version. */
    clf_context *ctx2 = clf_test_context();
    clf__strbuf key = {0};
    const char *dv = strstr(ctx2->cache_device_key, "driver-version ");
    clf__sb_putn(&key, ctx2->cache_device_key, (size_t)(dv - ctx2->cache_device_key));
    clf__sb_puts(&key, "driver-version 9:99.99.99\n");
    clf__sb_puts(&key, strchr(dv, '\n') + 1);
    clf__free(ctx2->cache_device_key);
    ctx2->cache_device_key = clf__sb_take(&key);
    char *path_new = clf__disk_cache_path(ctx2, src, "");
    ck_assert_str_ne(path_old, path_new);
    ck_assert_int_eq(clf__program_get(ctx2, src, "", &prog, NULL), CLF_OK);
    clReleaseProgram(prog);
    clf__program_counts c2;
    clf__program_cache_counts(ctx2, &c2);
    ck_assert_uint_eq(c2.disk_hits, 0);
    ck_assert_uint_eq(c2.source_builds, 1);
    int entries, others;
    list_dir(dir, &entries, &others, NULL, 0);
    ck_assert_int_eq(entries, 2);

    /* A collision: the new driver's entry under the old key's name. */
    ck_assert_int_eq(rename(path_new, path_old), 0);
    clf_context *ctx3 = clf_test_context();
    ck_assert_int_eq(clf__program_get(ctx3, src, "", &prog, NULL), CLF_OK);
    clReleaseProgram(prog);
    clf__program_counts c3;
    clf__program_cache_counts(ctx3, &c3);
    ck_assert_uint_eq(c3.disk_hits, 0);
    ck_assert_uint_eq(c3.disk_discards, 0);
    ck_assert_uint_eq(c3.source_builds, 1);
    ck_assert_uint_eq(c3.disk_stores, 1);
    clf__free(path_old);
    clf__free(path_opt);
    clf__free(path_new);
    clf_context_destroy(&ctx3);
    clf_context_destroy(&ctx2);
    clf_context_destroy(&ctx);
}
END_TEST

START_TEST(switches_off)
{
    const char *dir = fresh_cache_dir("/sub");
    clf__program_counts c = compile_seed(clf_context_params(.disable_disk_cache = true));
    ck_assert_uint_eq(c.disk_stores + c.disk_hits, 0);
    ck_assert_uint_eq(c.source_builds, 1);
    struct stat st;
    ck_assert_int_ne(stat(dir, &st), 0); /* never made */
    setenv("CLFUSE_CACHE", "0", 1);
    c = compile_seed(NULL);
    ck_assert_uint_eq(c.disk_stores + c.disk_hits, 0);
    ck_assert_int_ne(stat(dir, &st), 0);
    setenv("CLFUSE_CACHE", "1", 1);
    c = compile_seed(NULL);
    ck_assert_uint_eq(c.disk_stores, 1);
    ck_assert_int_eq(stat(dir, &st), 0);
    unsetenv("CLFUSE_CACHE");
}
END_TEST

/* A directory that cannot be made (a path through a regular file): the
 * compile succeeds and says why nothing was stored. */
START_TEST(unusable_dir)
{
    const char *dir = fresh_cache_dir("/file");
    write_file(dir, (const unsigned char *)"x", 1);
    char sub[600];
    snprintf(sub, sizeof sub, "%s/cache", dir);
    setenv("CLFUSE_CACHE_DIR", sub, 1);
    char log[8192];
    clf__program_counts c = compile_seed_logged(log, sizeof log);
    ck_assert_uint_eq(c.disk_stores, 0);
    ck_assert_uint_eq(c.source_builds, 1);
    ck_assert_msg(strstr(log, "cannot make"), "%s", log);
}
END_TEST

/* Several processes compile the same graph against one empty cache at once:
 * all succeed, and the cache ends with one good entry and no temporary
 * files. The children are forked before this process makes any context. */
START_TEST(several_processes)
{
    enum { NPROC = 6 };
    const char *dir = fresh_cache_dir("/shared");
    pid_t pids[NPROC];
    for (int i = 0; i < NPROC; i++) {
        pids[i] = fork();
        ck_assert_int_ge(pids[i], 0);
        if (pids[i] == 0) {
            /* No Check assertions here: report through the exit status. */
            clf_context *ctx = NULL;
            if (clf_context_create(NULL, &ctx) != CLF_OK)
                _exit(2);
            clf_graph *g = seed_graph();
            clf_executable *exe = NULL;
            int rc = clf_compile(ctx, g, NULL, &exe) == CLF_OK ? 0 : 3;
            float a[N], b[N], c[N], y[N];
            for (int k = 0; k < N; k++) {
                a[k] = (float)(k - i);
                b[k] = 0.5f;
                c[k] = -1.0f;
            }
            clf_host_binding in[3] = {{"a", a}, {"b", b}, {"c", c}}, out[1] = {{"y", y}};
            if (rc == 0 && clf_run_host(exe, 3, in, 1, out) != CLF_OK)
                rc = 4;
            for (int k = 0; rc == 0 && k < N; k++)
                if (y[k] != fmaxf(a[k] * 0.5f - 1.0f, 0.0f))
                    rc = 5;
            clf_executable_destroy(&exe);
            clf_graph_destroy(&g);
            clf_context_destroy(&ctx);
            _exit(rc);
        }
    }
    for (int i = 0; i < NPROC; i++) {
        int status = 0;
        ck_assert_int_eq(waitpid(pids[i], &status, 0), pids[i]);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child %d: status %d", i, status);
    }
    int entries, others;
    list_dir(dir, &entries, &others, NULL, 0);
    ck_assert_int_eq(entries, 1);
    ck_assert_int_eq(others, 0);
    ck_assert_int_eq(list_plans(dir, NULL, 0), 1);
    clf__program_counts warm = compile_seed(NULL);
    ck_assert_uint_eq(warm.disk_hits, 1);
    ck_assert_uint_eq(warm.source_builds, 0);
    ck_assert_uint_eq(warm.disk_discards, 0);
    ck_assert_uint_eq(warm.plan_hits, 1);
    ck_assert_uint_eq(warm.plans_built, 0);
    ck_assert_uint_eq(warm.plan_discards, 0);
}
END_TEST

/* ---- The plan and source cache -------------------------------------- */

/* Cold, the compile plans, generates and stores a plan entry; warm (a new
 * context), it plans nothing and builds nothing, and the executable is the
 * same: kernel names, sources, statistics. */
START_TEST(plan_cold_then_warm)
{
    const char *dir = fresh_cache_dir("");
    char log[8192];
    clf__program_counts cold = compile_seed_logged(log, sizeof log);
    ck_assert_uint_eq(cold.plans_built, 1);
    ck_assert_uint_eq(cold.plan_hits, 0);
    ck_assert_uint_eq(cold.plan_stores, 1);
    ck_assert_msg(strstr(log, "plan miss") && strstr(log, "plan store"), "%s", log);
    ck_assert_int_eq(list_plans(dir, NULL, 0), 1);
    clf__program_counts warm = compile_seed_logged(log, sizeof log);
    ck_assert_uint_eq(warm.plans_built, 0);
    ck_assert_uint_eq(warm.plan_hits, 1);
    ck_assert_uint_eq(warm.plan_stores, 0);
    ck_assert_uint_eq(warm.source_builds, 0);
    ck_assert_msg(strstr(log, "plan hit"), "%s", log);

    /* A graph with a reduction split in two launches, intermediates and a
     * tensor constant: the warm executable equals the cold one. */
    clf_graph *g = clf_graph_create();
    const int64_t shape[2] = {3, 40000}, cshape[1] = {40000};
    clf_tensor x = clf_input(g, "x", CLF_F32, 2, shape);
    float cdata[40000];
    for (int i = 0; i < 40000; i++)
        cdata[i] = (float)(i % 7) * 0.25f;
    clf_tensor c = clf_constant(g, CLF_F32, 1, cshape, cdata);
    clf_tensor t = clf_mul(g, clf_exp(g, clf_neg(g, clf_abs(g, x))), c);
    int axis = 1;
    clf_graph_output(g, "s", clf_reduce_sum(g, t, 1, &axis, false));
    clf_graph_output(g, "m", clf_softmax(g, t, 1));
    ck_assert_int_eq(clf_graph_status(g, NULL), CLF_OK);
    clf_context *ctx[2];
    clf_executable *exe[2];
    for (int r = 0; r < 2; r++) {
        ctx[r] = clf_test_context();
        ck_assert_int_eq(clf_compile(ctx[r], g, NULL, &exe[r]), CLF_OK);
        clf__program_counts pc;
        clf__program_cache_counts(ctx[r], &pc);
        /* Cold plans (twice on a GPU where a kernel's registers allow
         * smaller work-groups than planned: it lowers again within them);
         * warm plans nothing and reads what the cold compile stored. */
        if (r == 0) {
            ck_assert_uint_ge(pc.plans_built, 1);
            ck_assert_uint_eq(pc.plan_hits, 0);
        } else {
            ck_assert_uint_eq(pc.plans_built, 0);
            ck_assert_uint_ge(pc.plan_hits, 1);
        }
    }
    ck_assert_uint_eq(clf_executable_kernel_count(exe[0]), clf_executable_kernel_count(exe[1]));
    for (size_t k = 0; k < clf_executable_kernel_count(exe[0]); k++) {
        ck_assert_str_eq(clf_executable_kernel_name(exe[0], k), clf_executable_kernel_name(exe[1], k));
        ck_assert_str_eq(clf_executable_kernel_ops(exe[0], k), clf_executable_kernel_ops(exe[1], k));
        ck_assert_str_eq(clf_executable_kernel_source(exe[0], k), clf_executable_kernel_source(exe[1], k));
    }
    clf_plan_stats s0, s1;
    clf_executable_stats(exe[0], &s0);
    clf_executable_stats(exe[1], &s1);
    ck_assert_int_eq(memcmp(&s0, &s1, sizeof s0), 0);
    /* Both compute the reference's results. */
    float *xin = malloc(sizeof(float) * 3 * 40000), *got = malloc(sizeof(float) * 3 * 40000),
          *want = malloc(sizeof(float) * 3 * 40000), sg[3], sw[3];
    clf_test_fill_f32(xin, 3 * 40000, -2, 2);
    clf_host_binding in[1] = {{"x", xin}}, wout[2] = {{"s", sw}, {"m", want}};
    char msg[256];
    ck_assert_int_eq(clf_reference_run(g, 1, in, 2, wout, msg, sizeof msg), CLF_OK);
    for (int r = 0; r < 2; r++) {
        clf_host_binding out[2] = {{"s", sg}, {"m", got}};
        clf_status st = clf_run_host(exe[r], 1, in, 2, out);
        ck_assert_msg(st == CLF_OK, "run %d: %s: %s", r, clf_status_name(st), clf_context_last_error(ctx[r]));
        ck_assert_msg(clf_test_close(CLF_F32, sg, sw, 3, 1e-4, 1e-4, msg, sizeof msg), "run %d: s: %s", r, msg);
        ck_assert_msg(clf_test_close(CLF_F32, got, want, 3 * 40000, 1e-4, 1e-7, msg, sizeof msg), "run %d: m: %s", r,
                      msg);
        clf_executable_destroy(&exe[r]);
        clf_context_destroy(&ctx[r]);
    }
    free(xin);
    free(got);
    free(want);
    clf_graph_destroy(&g);
}
END_TEST

/* A plan entry damaged in each way is discarded with the reason in the log,
 * the compile plans again (and still builds nothing: the binaries are
 * fine), stores a good entry, and the next compile hits. */
static const struct corruption plan_corruptions[] = {
    {"flipped payload byte", "checksum mismatch"},
    {"flipped key byte", "checksum mismatch"},
    {"truncated to the header's middle", "truncated"},
    {"truncated in the payload", "truncated"},
    {"empty file", "truncated"},
    {"trailing garbage", "truncated or padded"},
    {"bad magic", "bad magic"},
    {"future format version", "format version"},
    {"payload that does not fit the graph, with a good checksum", "malformed payload"},
    {"payload cut short, with a good header", "malformed payload"},
};

START_TEST(plan_corrupt_entries)
{
    const struct corruption *c = &plan_corruptions[_i];
    const char *dir = fresh_cache_dir("");
    clf__program_counts cold = compile_seed(NULL);
    ck_assert_uint_eq(cold.plan_stores, 1);
    char entry[600];
    ck_assert_int_eq(list_plans(dir, entry, sizeof entry), 1);
    size_t len;
    unsigned char *p = read_file(entry, &len);
    ck_assert_uint_gt(len, HEADER);
    size_t klen = (size_t)get64(p + KLEN_AT), plen = (size_t)get64(p + BLEN_AT);
    ck_assert_uint_eq(HEADER + klen + plen, len);
    unsigned char *pay = p + HEADER + klen;
    switch (_i) {
    case 0: pay[plen / 2] ^= 0x40; break;
    case 1: p[HEADER + klen / 2] ^= 0x01; break;
    case 2: len = HEADER / 2; break;
    case 3: len = HEADER + klen + plen / 2; break;
    case 4: len = 0; break;
    case 5: {
        unsigned char *q = realloc(p, len + 100);
        ck_assert_ptr_nonnull(q);
        p = q;
        memset(p + len, 0x5a, 100);
        len += 100;
        break;
    }
    case 6: p[MAGIC_AT] = 'X'; break;
    case 7: p[VERSION_AT] = 99; break;
    case 8:
        /* The input count (the payload's first u32) no longer matches the
         * graph's: only the parser can tell. */
        pay[0] = 7;
        put64(p + SUM_AT, clf__hash_bytes(clf__hash_bytes(CLF__HASH_SEED, p + HEADER, klen), pay, plen));
        break;
    case 9:
        /* Half the payload, with the lengths and checksum made to agree. */
        plen /= 2;
        len = HEADER + klen + plen;
        put64(p + BLEN_AT, plen);
        put64(p + SUM_AT, clf__hash_bytes(clf__hash_bytes(CLF__HASH_SEED, p + HEADER, klen), pay, plen));
        break;
    }
    write_file(entry, p, len);
    free(p);

    char log[8192];
    clf__program_counts again = compile_seed_logged(log, sizeof log);
    ck_assert_msg(again.plan_discards == 1, "%s: %llu discards; log:\n%s", c->name,
                  (unsigned long long)again.plan_discards, log);
    ck_assert_uint_eq(again.plan_hits, 0);
    ck_assert_uint_eq(again.plans_built, 1);
    ck_assert_uint_eq(again.plan_stores, 1);
    ck_assert_uint_eq(again.source_builds, 0);
    ck_assert_msg(strstr(log, c->why), "%s: the log should say \"%s\":\n%s", c->name, c->why, log);
    ck_assert_int_eq(list_plans(dir, NULL, 0), 1);
    int entries, others;
    list_dir(dir, &entries, &others, NULL, 0);
    ck_assert_int_eq(others, 0);
    clf__program_counts warm = compile_seed(NULL);
    ck_assert_uint_eq(warm.plan_hits, 1);
    ck_assert_uint_eq(warm.plans_built, 0);
}
END_TEST

/* The graph of plan_changed_key_field, in variants that each differ from
 * variant 0 in one field of the key: y = clip(x * k + c0, lo, hi) with a
 * tensor constant k, summed over the last axis as s. */
static clf_graph *variant_graph(int v)
{
    clf_graph *g = clf_graph_create();
    const int64_t shape[2] = {4, v == 1 ? 33 : 32}, kshape[1] = {shape[1]};
    clf_tensor x = clf_input(g, v == 2 ? "X" : "x", CLF_F32, 2, shape);
    float kd[33];
    for (int i = 0; i < 33; i++)
        kd[i] = 0.5f + (float)i;
    if (v == 3)
        kd[5] = 0.75f; /* one constant byte differs */
    clf_tensor k = clf_constant(g, CLF_F32, 1, kshape, kd);
    clf_tensor t = clf_add(g, clf_mul(g, x, k), clf_scalar(g, CLF_F32, v == 4 ? 2.0 : 1.0));
    t = clf_clip(g, t, v == 5 ? -3.0 : -4.0, 40.0);
    int axis = 1;
    clf_graph_output(g, v == 6 ? "Y" : "y", t);
    clf_graph_output(g, "s", v == 7 ? clf_reduce_max(g, t, 1, &axis, false) : clf_reduce_sum(g, t, 1, &axis, false));
    ck_assert_int_eq(clf_graph_status(g, NULL), CLF_OK);
    return g;
}

/* Compiles g with params on a fresh context, checks every output against
 * the reference, and returns the cache counts. */
static clf__program_counts compile_checked(clf_graph *g, const clf_compile_params *params, char **key)
{
    clf_context *ctx = clf_test_context();
    clf_executable *exe = NULL;
    clf_status st = clf_compile(ctx, g, params, &exe);
    ck_assert_msg(st == CLF_OK, "%s", clf_context_last_error(ctx));
    const char *xname, *yname;
    int rank;
    int64_t shape[CLF_MAX_RANK];
    ck_assert_int_eq(clf_executable_input(exe, 0, &xname, NULL, &rank, shape), CLF_OK);
    size_t n = (size_t)(shape[0] * shape[1]);
    ck_assert_int_eq(clf_executable_output(exe, 0, &yname, NULL, NULL, NULL), CLF_OK);
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y), *yw = malloc(n * sizeof *yw), s[8], sw[8];
    clf_test_fill_f32(x, n, -5, 5);
    clf_host_binding in[1] = {{xname, x}}, out[2] = {{yname, y}, {"s", s}}, want[2] = {{yname, yw}, {"s", sw}};
    char msg[256];
    ck_assert_int_eq(clf_reference_run(g, 1, in, 2, want, msg, sizeof msg), CLF_OK);
    st = clf_run_host(exe, 1, in, 2, out);
    ck_assert_msg(st == CLF_OK, "%s", clf_context_last_error(ctx));
    ck_assert_msg(clf_test_close(CLF_F32, y, yw, n, 1e-5, 1e-5, msg, sizeof msg), "y: %s", msg);
    ck_assert_msg(clf_test_close(CLF_F32, s, sw, (size_t)shape[0], 1e-4, 1e-4, msg, sizeof msg), "s: %s", msg);
    clf__program_counts pc;
    clf__program_cache_counts(ctx, &pc);
    if (key) {
        clf__codegen_target target;
        clf__compile_target(ctx, params, &target);
        *key = clf__plan_cache_key(ctx, g, params, &target);
        ck_assert_ptr_nonnull(*key);
    }
    free(x);
    free(y);
    free(yw);
    clf_executable_destroy(&exe);
    clf_context_destroy(&ctx);
    return pc;
}

/* Every field of the key matters: a graph that differs in one shape, input
 * name, constant byte, scalar, attribute, output name or op, and the same
 * graph with other compile params, each miss the plan cache (plan again and
 * store a second entry) and compute their own results; the unchanged graph
 * hits. A plan entry copied under another key's name (a collision) is a
 * miss, not a wrong plan. */
START_TEST(plan_changed_key_field)
{
    const char *dir = fresh_cache_dir("");
    clf_graph *g0 = variant_graph(0);
    char *key0 = NULL;
    clf__program_counts c = compile_checked(g0, NULL, &key0);
    ck_assert_uint_eq(c.plans_built, 1);
    for (const char *f = "source-hash \0target-cpu \0base-align \0disable-fusion \0kernel-style \0graph \0"
                         "driver-version \0codegen-version \0templates-hash \0";
         *f; f += strlen(f) + 1)
        ck_assert_msg(strstr(key0, f), "the plan key lacks %s", f);
    int plans = 1;
    for (int v = 1; v <= 7; v++) {
        clf_graph *g = variant_graph(v);
        char *key = NULL;
        c = compile_checked(g, NULL, &key);
        ck_assert_msg(c.plans_built == 1 && c.plan_hits == 0, "variant %d hit the plan cache", v);
        ck_assert_str_ne(key, key0);
        ck_assert_int_eq(list_plans(dir, NULL, 0), ++plans);
        clf__free(key);
        clf_graph_destroy(&g);
    }
    const clf_compile_params *params[] = {clf_compile_params(.disable_fusion = true),
                                          clf_compile_params(.kernel_style = CLF_KERNEL_STYLE_GPU)};
    for (size_t i = 0; i < 2; i++) {
        c = compile_checked(g0, params[i], NULL);
        /* More than one plan built where a kernel did not fit the device's
         * work-group limit (the GPU style on a CPU device of small limits,
         * rusticl's llvmpipe): lowered again, stored once, under the key
         * the next compile looks up, which then hits at once. */
        ck_assert_msg(c.plans_built >= 1 && c.plan_hits == 0, "params %zu: %llu plans built, %llu plan cache hits", i,
                      (unsigned long long)c.plans_built, (unsigned long long)c.plan_hits);
        ck_assert_int_eq(list_plans(dir, NULL, 0), ++plans);
        c = compile_checked(g0, params[i], NULL);
        ck_assert_msg(c.plans_built == 0 && c.plan_hits == 1, "params %zu again: %llu plans built, %llu hits", i,
                      (unsigned long long)c.plans_built, (unsigned long long)c.plan_hits);
    }
    /* Params spelled out at their defaults are the same key: a hit. */
    c = compile_checked(g0, clf_compile_params(.kernel_style = CLF_KERNEL_STYLE_AUTO), NULL);
    ck_assert_uint_eq(c.plan_hits, 1);
    ck_assert_uint_eq(c.plans_built, 0);

    /* A collision: variant 3's entry under variant 0's name. */
    clf_graph *g3 = variant_graph(3);
    clf_context *ctx = clf_test_context();
    clf__codegen_target target;
    clf__compile_target(ctx, NULL, &target);
    char *key3 = clf__plan_cache_key(ctx, g3, NULL, &target);
    char *path0 = clf__plan_cache_path(ctx, key0), *path3 = clf__plan_cache_path(ctx, key3);
    ck_assert_str_ne(path0, path3);
    ck_assert_int_eq(rename(path3, path0), 0);
    clf_context_destroy(&ctx);
    c = compile_checked(g0, NULL, NULL);
    ck_assert_uint_eq(c.plan_hits, 0);
    ck_assert_uint_eq(c.plan_discards, 0);
    ck_assert_uint_eq(c.plans_built, 1);
    ck_assert_uint_eq(c.plan_stores, 1);
    c = compile_checked(g0, NULL, NULL);
    ck_assert_uint_eq(c.plan_hits, 1);
    clf__free(key0);
    clf__free(key3);
    clf__free(path0);
    clf__free(path3);
    clf_graph_destroy(&g3);
    clf_graph_destroy(&g0);
}
END_TEST

enum { LR = 8, LD = 16, LMAX = 4 };

/* Layers that compute the same thing on other tensors, as a model's do:
 * rms norm, relu(h @ w + b), a row softmax, l times over x [LR, LD]; each
 * layer's inputs are s<l>, w<l>, b<l>. */
static clf_graph *layers_graph(int l_count)
{
    const int64_t xs[2] = {LR, LD}, ws[2] = {LD, LD}, bs[1] = {LD};
    clf_graph *g = clf_graph_create();
    clf_tensor h = clf_input(g, "x", CLF_F32, 2, xs);
    for (int l = 0; l < l_count; l++) {
        char sn[8], wn[8], bn[8];
        snprintf(sn, sizeof sn, "s%d", l);
        snprintf(wn, sizeof wn, "w%d", l);
        snprintf(bn, sizeof bn, "b%d", l);
        clf_tensor s = clf_input(g, sn, CLF_F32, 1, bs), w = clf_input(g, wn, CLF_F32, 2, ws),
                   b = clf_input(g, bn, CLF_F32, 1, bs);
        h = clf_rms_norm(g, h, -1, 1e-5, s);
        h = clf_softmax(g, clf_relu(g, clf_add(g, clf_matmul(g, h, w), b)), -1);
    }
    clf_graph_output(g, "y", h);
    ck_assert_int_eq(clf_graph_status(g, NULL), CLF_OK);
    return g;
}

/* Runs exe (of layers_graph(l_count)) on fresh inputs and checks y against
 * a float64 reference. */
static void check_layers(clf_context *ctx, clf_executable *exe, int l_count)
{
    static char names[LMAX][3][8];
    static float x[LR * LD], sc[LMAX][LD], w[LMAX][LD * LD], bias[LMAX][LD], y[LR * LD];
    ck_assert_int_le(l_count, LMAX);
    clf_test_fill_f32(x, LR * LD, -1, 1);
    clf_host_binding in[1 + 3 * LMAX], out[1] = {{"y", y}};
    in[0] = (clf_host_binding){"x", x};
    for (int l = 0; l < l_count; l++) {
        snprintf(names[l][0], sizeof names[l][0], "s%d", l);
        snprintf(names[l][1], sizeof names[l][1], "w%d", l);
        snprintf(names[l][2], sizeof names[l][2], "b%d", l);
        in[1 + 3 * l] = (clf_host_binding){names[l][0], sc[l]};
        in[2 + 3 * l] = (clf_host_binding){names[l][1], w[l]};
        in[3 + 3 * l] = (clf_host_binding){names[l][2], bias[l]};
        clf_test_fill_f32(sc[l], LD, 0.5, 1.5);
        clf_test_fill_f32(w[l], LD * LD, -1, 1);
        clf_test_fill_f32(bias[l], LD, -1, 1);
    }
    memset(y, 0xff, sizeof y);
    clf_status st = clf_run_host(exe, 1 + 3 * (size_t)l_count, in, 1, out);
    ck_assert_msg(st == CLF_OK, "%s: %s", clf_status_name(st), clf_context_last_error(ctx));
    double cur[LR * LD];
    for (int i = 0; i < LR * LD; i++)
        cur[i] = x[i];
    for (int l = 0; l < l_count; l++) {
        for (int r = 0; r < LR; r++) {
            double ss = 0, hn[LD], t[LD], mx = -INFINITY, sum = 0;
            for (int c = 0; c < LD; c++)
                ss += cur[r * LD + c] * cur[r * LD + c];
            const double inv = 1.0 / sqrt(ss / LD + 1e-5);
            for (int c = 0; c < LD; c++)
                hn[c] = cur[r * LD + c] * inv * sc[l][c];
            for (int c = 0; c < LD; c++) {
                double acc = bias[l][c];
                for (int k = 0; k < LD; k++)
                    acc += hn[k] * w[l][k * LD + c];
                t[c] = acc > 0 ? acc : 0;
                mx = t[c] > mx ? t[c] : mx;
            }
            for (int c = 0; c < LD; c++)
                sum += exp(t[c] - mx);
            for (int c = 0; c < LD; c++)
                cur[r * LD + c] = exp(t[c] - mx) / sum;
        }
    }
    for (int i = 0; i < LR * LD; i++) {
        const float want = (float)cur[i];
        ck_assert_msg(fabsf(y[i] - want) <= 1e-5f + 1e-4f * fabsf(want), "y[%d] = %g, want %g", i, (double)y[i],
                      (double)want);
    }
}

/* Kernels of layers_graph whose source no earlier kernel has. */
static size_t distinct_sources(const clf_executable *exe)
{
    size_t distinct = 0;
    for (size_t k = 0; k < exe->nkernels; k++) {
        size_t first = k;
        for (size_t j = 0; j < k && first == k; j++)
            if (!strcmp(exe->kernels[j].source, exe->kernels[k].source))
                first = j;
        distinct += first == k;
    }
    return distinct;
}

/* Layers that compute the same thing on other tensors (the planner fuses
 * across layer boundaries, so the middle layers repeat) get one source per
 * kernel kind: each distinct source is built once (codegen's kernel-local
 * names, canonical_names.c), kernels of one source keep their own names,
 * and the result is right. */
START_TEST(repeated_layers_share_programs)
{
    fresh_cache_dir("");
    setenv("CLFUSE_ONE_PROGRAM", "0", 1); /* a program per source (one_program_per_graph has the other) */
    clf_graph *g = layers_graph(LMAX);
    clf_context *ctx = NULL;
    ck_assert_int_eq(clf_context_create(NULL, &ctx), CLF_OK);
    clf_executable *exe = NULL;
    clf_status st = clf_compile(ctx, g, NULL, &exe);
    ck_assert_msg(st == CLF_OK, "%s: %s", clf_status_name(st), clf_context_last_error(ctx));
    const size_t nk = clf_executable_kernel_count(exe);
    for (size_t k = 0; k < nk; k++) {
        const clf__exe_kernel *a = &exe->kernels[k];
        ck_assert_ptr_nonnull(strstr(a->name, a->entry));
        for (size_t j = 0; j < k; j++)
            if (!strcmp(exe->kernels[j].source, a->source)) {
                ck_assert_str_eq(exe->kernels[j].entry, a->entry);
                ck_assert_str_ne(exe->kernels[j].name, a->name);
            }
    }
    const size_t distinct = distinct_sources(exe);
    /* Each middle layer's kernel is that of the layer before: the product,
     * computing the softmax before it and its norm's statistics in its
     * loads (planner.c's row statistics). */
    ck_assert_msg(nk == LMAX + 1, "%zu kernels", nk);
    ck_assert_msg(distinct + (LMAX - 2) <= nk, "%zu distinct sources of %zu kernels", distinct, nk);
    clf__program_counts counts;
    clf__program_cache_counts(ctx, &counts);
    ck_assert_uint_eq(counts.source_builds, distinct);
    check_layers(ctx, exe, LMAX);
    clf_executable_destroy(&exe);
    clf_context_destroy(&ctx);
    clf_graph_destroy(&g);
}
END_TEST

/* The sorted names of dir's entries (*.clbin and *.clplan), one a line. */
static void entry_names(const char *dir, char *out, size_t cap)
{
    struct dirent **list = NULL;
    const int n = scandir(dir, &list, NULL, alphasort);
    ck_assert_int_ge(n, 0);
    size_t used = 0;
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        const char *name = list[i]->d_name;
        if (name[0] != '.') {
            const int w = snprintf(out + used, cap - used, "%s\n", name);
            ck_assert(w > 0 && (size_t)w < cap - used);
            used += (size_t)w;
        }
        free(list[i]);
    }
    free(list);
}

/* Compiles layers_graph(l_count) with CLFUSE_BUILD_THREADS=threads, the
 * cache log in log; checks the result and returns what the caches did and
 * how many distinct sources it had. */
static clf__program_counts compile_layers(int l_count, const char *threads, char *log, size_t cap, size_t *distinct)
{
    clf_test_log lc = clf_test_log_begin("cache");
    setenv("CLFUSE_BUILD_THREADS", threads, 1);
    setenv("CLFUSE_ONE_PROGRAM", "0", 1); /* threads build a program per source */
    clf_graph *g = layers_graph(l_count);
    clf_context *ctx = NULL;
    ck_assert_int_eq(clf_context_create(NULL, &ctx), CLF_OK);
    clf_executable *exe = NULL;
    clf_status st = clf_compile(ctx, g, NULL, &exe);
    unsetenv("CLFUSE_BUILD_THREADS");
    unsetenv("CLFUSE_ONE_PROGRAM");
    clf_test_log_end(&lc, log, cap);
    ck_assert_msg(st == CLF_OK, "%s: %s", clf_status_name(st), clf_context_last_error(ctx));
    *distinct = distinct_sources(exe);
    check_layers(ctx, exe, l_count);
    clf__program_counts counts;
    clf__program_cache_counts(ctx, &counts);
    clf_executable_destroy(&exe);
    clf_context_destroy(&ctx);
    clf_graph_destroy(&g);
    return counts;
}

/* A cold compile builds its distinct sources in threads
 * (CLFUSE_BUILD_THREADS): each once, with the same cache entries, byte
 * for byte, as a serial compile writes, and a right result; a warm compile
 * after it builds nothing. A value that is not a thread count is refused,
 * naming it. */
START_TEST(parallel_builds_match_serial)
{
    static char log[1 << 16], serial_names[4096], parallel_names[4096];
    enum { L = 3 };
    const char *serial_dir = fresh_cache_dir("");
    char serial[512];
    snprintf(serial, sizeof serial, "%s", serial_dir);
    size_t distinct_serial, distinct;
    clf__program_counts s = compile_layers(L, "1", log, sizeof log, &distinct_serial);
    ck_assert_msg(!strstr(log, "programs in"), "%s", log);
    const char *parallel = fresh_cache_dir("");
    clf__program_counts p = compile_layers(L, "4", log, sizeof log, &distinct);
    ck_assert_uint_ge(distinct, 3);
    ck_assert_uint_eq(distinct, distinct_serial);
    char want[64];
    snprintf(want, sizeof want, "getting %zu programs in %zu threads", distinct, distinct < 4 ? distinct : 4);
    ck_assert_msg(strstr(log, want), "no \"%s\" in:\n%s", want, log);
    ck_assert_msg(strstr(log, "): built in "), "%s", log);
    ck_assert_uint_eq(s.source_builds, distinct);
    ck_assert_uint_eq(p.source_builds, distinct);
    ck_assert_uint_eq(p.disk_stores, s.disk_stores);
    entry_names(serial, serial_names, sizeof serial_names);
    entry_names(parallel, parallel_names, sizeof parallel_names);
    ck_assert_str_eq(parallel_names, serial_names);
    /* Each program entry holds its key and the driver's binary: the same
     * keys, and binaries the driver takes (the warm compile below loads
     * every one). The binaries' bytes are not compared: PoCL's embed the
     * name of a temporary file, so two serial builds differ too. Plan
     * entries (sources, schedules, buffers) are the same byte for byte. */
    for (char *line = serial_names, *nl; (nl = strchr(line, '\n')); line = nl + 1) {
        *nl = '\0';
        char a[1024], b[1024];
        ck_assert_int_lt(snprintf(a, sizeof a, "%s/%s", serial, line), (int)sizeof a);
        ck_assert_int_lt(snprintf(b, sizeof b, "%s/%s", parallel, line), (int)sizeof b);
        size_t la, lb;
        unsigned char *pa = read_file(a, &la), *pb = read_file(b, &lb);
        if (strstr(line, ".clbin")) {
            ck_assert_uint_ge(la, HEADER);
            ck_assert_uint_ge(lb, HEADER);
            const uint64_t klen = get64(pa + KLEN_AT);
            ck_assert_uint_eq(get64(pb + KLEN_AT), klen);
            ck_assert_uint_le(HEADER + klen, la);
            ck_assert_uint_le(HEADER + klen, lb);
            ck_assert_msg(memcmp(pa, pb, BLEN_AT) == 0 && memcmp(pa + HEADER, pb + HEADER, klen) == 0,
                          "%s: the keys differ between serial and parallel builds", line);
        } else
            ck_assert_msg(la == lb && memcmp(pa, pb, la) == 0, "%s differs between serial and parallel builds", line);
        free(pa);
        free(pb);
    }
    /* Warm: from the disk, in threads too. */
    clf__program_counts w = compile_layers(L, "4", log, sizeof log, &distinct);
    ck_assert_uint_eq(w.source_builds, 0);
    ck_assert_uint_eq(w.disk_hits, distinct);

    setenv("CLFUSE_BUILD_THREADS", "many", 1);
    clf_graph *g = layers_graph(1);
    clf_context *ctx = NULL;
    ck_assert_int_eq(clf_context_create(NULL, &ctx), CLF_OK);
    clf_executable *exe = NULL;
    ck_assert_int_eq(clf_compile(ctx, g, NULL, &exe), CLF_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_null(exe);
    ck_assert_msg(strstr(clf_context_last_error(ctx), "CLFUSE_BUILD_THREADS=\"many\""), "%s",
                  clf_context_last_error(ctx));
    setenv("CLFUSE_BUILD_THREADS", "0", 1);
    ck_assert_int_eq(clf_compile(ctx, g, NULL, &exe), CLF_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(clf_context_last_error(ctx), "CLFUSE_BUILD_THREADS=\"0\""), "%s",
                  clf_context_last_error(ctx));
    unsetenv("CLFUSE_BUILD_THREADS");
    clf_context_destroy(&ctx);
    clf_graph_destroy(&g);
}
END_TEST

/* CLFUSE_ONE_PROGRAM=1 (PoCL's default): a graph's distinct sources are
 * one program, built once and stored once; its kernels keep their names
 * and compute what they did apart; a warm compile loads that one entry. */
START_TEST(one_program_per_graph)
{
    static char log[1 << 16];
    const char *dir = fresh_cache_dir("");
    setenv("CLFUSE_ONE_PROGRAM", "1", 1);
    for (int pass = 0; pass < 2; pass++) {
        clf_test_log lc = clf_test_log_begin("cache");
        clf_graph *g = layers_graph(3);
        clf_context *ctx = NULL;
        ck_assert_int_eq(clf_context_create(NULL, &ctx), CLF_OK);
        clf_executable *exe = NULL;
        clf_status st = clf_compile(ctx, g, NULL, &exe);
        clf_test_log_end(&lc, log, sizeof log);
        ck_assert_msg(st == CLF_OK, "%s: %s", clf_status_name(st), clf_context_last_error(ctx));
        const size_t distinct = distinct_sources(exe);
        ck_assert_uint_ge(distinct, 3);
        char want[96];
        snprintf(want, sizeof want, "one program for %zu sources of %zu kernels: %s in", distinct, exe->nkernels,
                 pass ? "cached" : "built");
        ck_assert_msg(strstr(log, want), "no \"%s\" in:\n%s", want, log);
        /* Progress: said before the build, then each kernel's place in it. */
        const char *before = strstr(log, "kernels: loading or building it");
        ck_assert_msg(before && before < strstr(log, want), "%s", log);
        snprintf(want, sizeof want, "kernel %zu of %zu (", exe->nkernels, exe->nkernels);
        const char *last = strstr(log, want);
        ck_assert_msg(last && strstr(last, "): in the graph's one program"), "%s", log);
        for (size_t k = 0; k < exe->nkernels; k++)
            ck_assert_ptr_nonnull(strstr(clf_executable_kernel_name(exe, k), exe->kernels[k].entry));
        clf__program_counts c;
        clf__program_cache_counts(ctx, &c);
        ck_assert_uint_eq(c.source_builds, pass ? 0 : 1);
        ck_assert_uint_eq(c.disk_hits, pass ? 1 : 0);
        check_layers(ctx, exe, 3);
        clf_executable_destroy(&exe);
        clf_context_destroy(&ctx);
        clf_graph_destroy(&g);
    }
    int entries, others;
    list_dir(dir, &entries, &others, NULL, 0);
    ck_assert_int_eq(entries, 1);
    unsetenv("CLFUSE_ONE_PROGRAM");
}
END_TEST

/* The merged text itself (no device): each source's clf_ names get its
 * own prefix, pasted names included, and its macros are undefined after
 * it, so that the next source's defaults apply. */
START_TEST(merged_source_text)
{
    const char *a = "#define TK 8\n#ifndef TN\n#define TN 4\n#endif\n"
                    "typedef struct { float s; } clf_acc0;\n#define ACC(k) clf_acc##k\n"
                    "static inline float clf_f(float x) { return x * TK; }\n"
                    "__kernel void clf_k(__global float *b0) { ACC(0) a; a.s = clf_f(b0[0]); b0[0] = a.s; }\n";
    const char *srcs[2] = {a, a};
    char *m = clf__merge_sources(srcs, 2);
    ck_assert_ptr_nonnull(m);
    ck_assert_ptr_null(strstr(m, " clf_"));
    ck_assert_ptr_nonnull(strstr(m, "} clfk0_acc0;"));
    ck_assert_ptr_nonnull(strstr(m, "#define ACC(k) clfk1_acc##k"));
    ck_assert_ptr_nonnull(strstr(m, "__kernel void clfk1_k("));
    const char *second = strstr(m, "source 2 of 2");
    ck_assert_ptr_nonnull(second);
    const char *undefs[] = {"#undef TK\n", "#undef TN\n", "#undef ACC\n"};
    for (size_t i = 0; i < 3; i++) {
        const char *u = strstr(m, undefs[i]);
        ck_assert_msg(u && u < second && strstr(second, undefs[i]), "%s", undefs[i]);
    }
    char *name = clf__merged_name("clf_red_fused_exp", 3);
    ck_assert_str_eq(name, "clfk3_red_fused_exp");
    clf__free(name);
    clf__free(m);
}
END_TEST

static void add(Suite *s, const char *name, const TTest *t)
{
    TCase *tc = tcase_create(name);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, t);
    suite_add_tcase(s, tc);
}

/* The driver quirk table's binary test (driver_quirks.h), without the
 * driver: rusticl's format is taken, garbage and a wrong length are not,
 * and PoCL has no such quirk. The driver's own behaviour is test_quirks'. */
START_TEST(quirk_binary_format)
{
    ck_assert_uint_eq(clf__driver_quirks("Portable Computing Language", "pthread-x"), 0);
    /* Rows for every rusticl device, one for llvmpipe alone. */
    ck_assert_uint_eq(clf__driver_quirks("rusticl", "radeonsi (gfx1100)"),
                      CLF__QUIRK_ABORTS_ON_FOREIGN_BINARY | CLF__QUIRK_ZERO_PLUS_X_FOLDED);
    ck_assert_uint_eq(clf__driver_quirks("rusticl", "llvmpipe (LLVM 15.0.6, 256 bits)"),
                      CLF__QUIRK_ABORTS_ON_FOREIGN_BINARY | CLF__QUIRK_LOOP_TRIPS_65535 | CLF__QUIRK_ZERO_PLUS_X_FOLDED |
                          CLF__QUIRK_SLOW_INLINED_CODE);
    const clf__driver_quirk *q = clf__driver_quirk_row("rusticl", "llvmpipe", CLF__QUIRK_ABORTS_ON_FOREIGN_BINARY);
    ck_assert_ptr_nonnull(q);
    ck_assert_ptr_null(clf__driver_quirk_row("Portable Computing Language", "pthread", CLF__QUIRK_ABORTS_ON_FOREIGN_BINARY));
    unsigned char bin[12 + 64] = {1, 0, 0, 0, 64, 0, 0, 0, 4, 0, 0, 0, 0x03, 0x02, 0x23, 0x07};
    ck_assert(q->binary_is_own(bin, sizeof bin));
    ck_assert(!q->binary_is_own(bin, sizeof bin - 4)); /* the length field disagrees */
    ck_assert(!q->binary_is_own(bin, 8));
    bin[12] = 0x5a; /* no SPIR-V magic */
    ck_assert(!q->binary_is_own(bin, sizeof bin));
    bin[12] = 0x03;
    bin[0] = 2; /* another format version */
    ck_assert(!q->binary_is_own(bin, sizeof bin));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cache");
    add(s, "cold_then_warm", cold_then_warm);
    add(s, "repeated_layers_share_programs", repeated_layers_share_programs);
    add(s, "parallel_builds_match_serial", parallel_builds_match_serial);
    add(s, "one_program_per_graph", one_program_per_graph);
    add(s, "merged_source_text", merged_source_text);
    add(s, "quirk_binary_format", quirk_binary_format);
    TCase *tc = tcase_create("corrupt_entries");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, corrupt_entries, 0, (int)(sizeof corruptions / sizeof corruptions[0]));
    suite_add_tcase(s, tc);
    add(s, "changed_key_field", changed_key_field);
    add(s, "switches_off", switches_off);
    add(s, "unusable_dir", unusable_dir);
    add(s, "several_processes", several_processes);
    add(s, "plan_cold_then_warm", plan_cold_then_warm);
    tc = tcase_create("plan_corrupt_entries");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, plan_corrupt_entries, 0, (int)(sizeof plan_corruptions / sizeof plan_corruptions[0]));
    suite_add_tcase(s, tc);
    add(s, "plan_changed_key_field", plan_changed_key_field);
    return clf_test_run_suite(s);
}
