/* lift_corpus: the source lift's analysis (runtime/source_lift.h) over a
 * corpus of generated sources, timed, and what it decides, printed: every
 * source is noted in one lift table (lexed, its liftable literals found, its
 * skeleton grouped with the others'), then each source's generic form is
 * hashed (0: no literal of it is lifted). Run before and after a change of
 * the lexer, the two listings diffed show any source whose lifting changed;
 * the first line (on stderr) gives the time:
 *
 *   build/tools/codegen_corpus/codegen_corpus --dump /tmp/corpus MODELS... > /dev/null
 *   build/tools/codegen_corpus/lift_corpus /tmp/corpus/\*.cl > after.txt */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/source_lift.h"
#include "util/alloc.h"
#include "util/hash.h"

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *s = NULL;
    long n = -1;
    if (f && fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (s = malloc((size_t)n + 1)) != NULL && fread(s, 1, (size_t)n, f) == (size_t)n)
        s[n] = '\0';
    else {
        free(s);
        s = NULL;
    }
    if (f)
        fclose(f);
    return s;
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
    const int n = argc - 1;
    char **src = calloc((size_t)(n > 0 ? n : 1), sizeof *src);
    clf__lift_table *t = clf__lift_table_new();
    if (!src || !t)
        return 1;
    size_t bytes = 0;
    for (int i = 0; i < n; i++) {
        if (!(src[i] = slurp(argv[i + 1]))) {
            fprintf(stderr, "lift_corpus: cannot read %s\n", argv[i + 1]);
            return 1;
        }
        bytes += strlen(src[i]);
    }
    const double t0 = now_ms();
    for (int i = 0; i < n; i++)
        if (clf__lift_note(t, src[i], false) != CLF_OK) {
            fprintf(stderr, "lift_corpus: out of memory\n");
            return 1;
        }
    const double ms = now_ms() - t0;
    fprintf(stderr, "%d sources, %zu bytes: noted in %.1f ms (%.2f ns a byte)\n", n, bytes, ms,
            bytes ? ms * 1e6 / (double)bytes : 0.0);
    for (int i = 0; i < n; i++) {
        char *generic = clf__lift_generic_source(t, src[i]);
        printf("%s %016llx\n", argv[i + 1], generic ? (unsigned long long)clf__hash_str(CLF__HASH_SEED, generic) : 0ull);
        clf__free(generic);
        free(src[i]);
    }
    free(src);
    clf__lift_table_free(&t);
    return 0;
}
