/* Suite "cache": the on-disk program cache. Cold then warm (the warm compile
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
        } else {
            (*others)++;
        }
    }
    closedir(d);
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
    char path[] = "/tmp/clfuse-cache-log-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    fflush(stderr);
    int saved = dup(2);
    dup2(fd, 2);
    setenv("CLFUSE_LOGS", "cache", 1);
    clf__program_counts c = compile_seed(NULL);
    unsetenv("CLFUSE_LOGS");
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    ssize_t n = pread(fd, log, cap - 1, 0);
    log[n > 0 ? n : 0] = '\0';
    close(fd);
    unlink(path);
    return c;
}

START_TEST(cold_then_warm)
{
    const char *dir = fresh_cache_dir("/made/by/clfuse"); /* mkdir -p */
    clf__program_counts cold = compile_seed(NULL);
    ck_assert_uint_eq(cold.source_builds, 1);
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
    char log[8192];
    clf__program_counts warm = compile_seed_logged(log, sizeof log);
    ck_assert_uint_eq(warm.source_builds, 0);
    ck_assert_uint_eq(warm.disk_hits, 1);
    ck_assert_uint_eq(warm.disk_stores, 0);
    ck_assert_msg(strstr(log, "disk hit"), "%s", log);
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
    ck_assert_int_eq(clf__program_get(ctx, src, "", &prog), CLF_OK);
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
    ck_assert_int_eq(clf__program_get(ctx2, src, "", &prog), CLF_OK);
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
    ck_assert_int_eq(clf__program_get(ctx3, src, "", &prog), CLF_OK);
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
    clf__program_counts warm = compile_seed(NULL);
    ck_assert_uint_eq(warm.disk_hits, 1);
    ck_assert_uint_eq(warm.source_builds, 0);
    ck_assert_uint_eq(warm.disk_discards, 0);
}
END_TEST

static void add(Suite *s, const char *name, const TTest *t)
{
    TCase *tc = tcase_create(name);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, t);
    suite_add_tcase(s, tc);
}

int main(void)
{
    Suite *s = suite_create("cache");
    add(s, "cold_then_warm", cold_then_warm);
    TCase *tc = tcase_create("corrupt_entries");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, corrupt_entries, 0, (int)(sizeof corruptions / sizeof corruptions[0]));
    suite_add_tcase(s, tc);
    add(s, "changed_key_field", changed_key_field);
    add(s, "switches_off", switches_off);
    add(s, "unusable_dir", unusable_dir);
    add(s, "several_processes", several_processes);
    return clf_test_run_suite(s);
}
