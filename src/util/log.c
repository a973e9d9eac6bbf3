#include "util/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const topic_names[] = {"output_code", "fusion", "schedule", "cache", "perf"};
_Static_assert(sizeof topic_names / sizeof topic_names[0] == CLF__LOG_TOPIC_COUNT,
               "one name per log topic");

bool clf__log_enabled(clf__log_topic topic)
{
    const char *env = getenv("CLFUSE_LOGS");
    if (!env || !*env)
        return false;
    const char *want = topic_names[topic];
    size_t wlen = strlen(want);
    for (const char *p = env; *p;) {
        while (*p == ',' || *p == ' ' || *p == '+')
            p++;
        size_t n = strcspn(p, ", +");
        if ((n == wlen && strncmp(p, want, n) == 0) || (n == 3 && strncmp(p, "all", 3) == 0))
            return true;
        p += n;
    }
    return false;
}

void clf__log(clf__log_topic topic, const char *fmt, ...)
{
    if (!clf__log_enabled(topic))
        return;
    va_list ap;
    va_start(ap, fmt);
    flockfile(stderr); /* one line whole among threads (build threads log at once) */
    fprintf(stderr, "[clfuse:%s] ", topic_names[topic]);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    funlockfile(stderr);
    va_end(ap);
}
