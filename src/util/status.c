/* Status names and descriptions, generated from CLF_STATUS_LIST, and the
 * library version. */
#include "clfuse/clfuse.h"

const char *clf_status_name(clf_status s)
{
    switch (s) {
#define CLF_STATUS_NAME_(name, value, desc)                                                             \
    case name:                                                                                          \
        return #name;
        CLF_STATUS_LIST(CLF_STATUS_NAME_)
#undef CLF_STATUS_NAME_
    }
    return "CLF_UNKNOWN_STATUS";
}

const char *clf_status_str(clf_status s)
{
    switch (s) {
#define CLF_STATUS_STR_(name, value, desc)                                                              \
    case name:                                                                                          \
        return desc;
        CLF_STATUS_LIST(CLF_STATUS_STR_)
#undef CLF_STATUS_STR_
    }
    return "unknown status";
}

#define STRINGIFY_(x) #x
#define STRINGIFY(x) STRINGIFY_(x)
#define VERSION_STRING                                                                                  \
    STRINGIFY(CLFUSE_VERSION_MAJOR) "." STRINGIFY(CLFUSE_VERSION_MINOR) "." STRINGIFY(CLFUSE_VERSION_PATCH)

/* Built from the header's version macros so that the two cannot disagree. */
const char *clf_version(void)
{
    return VERSION_STRING;
}
