/* Diagnostic logs switched on by CLFUSE_LOGS, a comma-separated list of
 * topics in the style of TORCH_LOGS: output_code, fusion, schedule, cache,
 * perf, or all. Messages go to stderr prefixed with "[clfuse:<topic>]". */
#ifndef CLFUSE_LOG_H
#define CLFUSE_LOG_H

#include <stdbool.h>

typedef enum clf__log_topic {
    CLF__LOG_OUTPUT_CODE,
    CLF__LOG_FUSION,
    CLF__LOG_SCHEDULE,
    CLF__LOG_CACHE,
    CLF__LOG_PERF,
    CLF__LOG_TOPIC_COUNT
} clf__log_topic;

/* Reads CLFUSE_LOGS on every call, so tests can change it. */
bool clf__log_enabled(clf__log_topic topic);
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
void clf__log(clf__log_topic topic, const char *fmt, ...);

#endif
