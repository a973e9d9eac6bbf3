/* OpenCL devices: listing them and choosing one from a selector. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime_internal.h"
#include "util/alloc.h"

typedef struct found_device {
    cl_platform_id platform;
    cl_device_id device;
} found_device;

/* Every device of every platform, in platform order. */
static clf_status enumerate(found_device **out, size_t *count, char *msg, size_t cap)
{
    cl_uint np = 0;
    *out = NULL;
    *count = 0;
    cl_int err = clGetPlatformIDs(0, NULL, &np);
    if (err != CL_SUCCESS || np == 0) {
        snprintf(msg, cap, "no OpenCL platform found (clGetPlatformIDs: %s); install an ICD such as pocl-opencl-icd",
                 clf__cl_error_name(err));
        return CLF_ERR_NOT_FOUND;
    }
    cl_platform_id *plats = clf__malloc(np * sizeof *plats);
    if (!plats) {
        snprintf(msg, cap, "listing OpenCL devices: out of memory");
        return CLF_ERR_OUT_OF_MEMORY;
    }
    clGetPlatformIDs(np, plats, NULL);
    size_t n = 0, capd = 0;
    found_device *list = NULL;
    for (cl_uint p = 0; p < np; p++) {
        cl_uint nd = 0;
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 0, NULL, &nd) != CL_SUCCESS || nd == 0)
            continue;
        cl_device_id *devs = clf__malloc(nd * sizeof *devs);
        if (!devs)
            goto oom;
        clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, nd, devs, NULL);
        for (cl_uint d = 0; d < nd; d++) {
            if (n == capd) {
                size_t c = capd ? capd * 2 : 8;
                found_device *q = clf__realloc(list, c * sizeof *q);
                if (!q) {
                    clf__free(devs);
                    goto oom;
                }
                list = q;
                capd = c;
            }
            list[n++] = (found_device){plats[p], devs[d]};
        }
        clf__free(devs);
    }
    clf__free(plats);
    if (n == 0) {
        clf__free(list);
        snprintf(msg, cap, "OpenCL platforms exist but none has a device");
        return CLF_ERR_NOT_FOUND;
    }
    *out = list;
    *count = n;
    return CLF_OK;
oom:
    /* A partial list would select another device: fail instead. */
    clf__free(plats);
    clf__free(list);
    snprintf(msg, cap, "listing OpenCL devices: out of memory");
    return CLF_ERR_OUT_OF_MEMORY;
}

void clf__device_describe(cl_platform_id platform, cl_device_id device, uint32_t index,
                          clf_device_desc *desc)
{
    memset(desc, 0, sizeof *desc);
    desc->index = index;
    clGetPlatformInfo(platform, CL_PLATFORM_NAME, sizeof desc->platform_name - 1, desc->platform_name, NULL);
    clGetDeviceInfo(device, CL_DEVICE_NAME, sizeof desc->device_name - 1, desc->device_name, NULL);
    clGetDeviceInfo(device, CL_DEVICE_VERSION, sizeof desc->device_version - 1, desc->device_version, NULL);
    cl_ulong u = 0;
    if (clGetDeviceInfo(device, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof u, &u, NULL) == CL_SUCCESS)
        desc->global_mem_bytes = u;
    if (clGetDeviceInfo(device, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof u, &u, NULL) == CL_SUCCESS)
        desc->max_alloc_bytes = u;
    cl_uint cu = 0;
    if (clGetDeviceInfo(device, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cu, &cu, NULL) == CL_SUCCESS)
        desc->compute_units = cu;
    cl_uint align_bits = 0;
    if (clGetDeviceInfo(device, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof align_bits, &align_bits, NULL) != CL_SUCCESS ||
        align_bits < 8)
        align_bits = 1024; /* the largest a full-profile device reports (long16) */
    desc->base_align = 1;
    while (desc->base_align < align_bits / 8) /* a power of two, as every device reports */
        desc->base_align *= 2;
    cl_device_type t = 0;
    clGetDeviceInfo(device, CL_DEVICE_TYPE, sizeof t, &t, NULL);
    desc->is_gpu = (t & CL_DEVICE_TYPE_GPU) != 0;
    desc->is_cpu = (t & CL_DEVICE_TYPE_CPU) != 0;
}

CLF_API clf_status clf_devices_list(clf_device_desc *out, size_t cap, size_t *count)
{
    if (!count || (cap && !out))
        return CLF_ERR_INVALID_ARGUMENT;
    found_device *list;
    size_t n;
    char msg[256];
    clf_status st = enumerate(&list, &n, msg, sizeof msg);
    *count = 0;
    if (st != CLF_OK)
        return st;
    for (size_t i = 0; i < n && i < cap; i++)
        clf__device_describe(list[i].platform, list[i].device, (uint32_t)i, &out[i]);
    *count = n;
    clf__free(list);
    return CLF_OK;
}

static bool contains_nocase(const char *hay, const char *needle)
{
    size_t nl = strlen(needle);
    for (const char *h = hay; *h; h++) {
        size_t i = 0;
        while (i < nl && h[i] && tolower((unsigned char)h[i]) == tolower((unsigned char)needle[i]))
            i++;
        if (i == nl)
            return true;
    }
    return nl == 0;
}

clf_status clf__device_select(const char *sel, cl_platform_id *platform, cl_device_id *device,
                              uint32_t *index, char *msg, size_t cap)
{
    found_device *list;
    size_t n;
    clf_status st = enumerate(&list, &n, msg, cap);
    if (st != CLF_OK)
        return st;
    long chosen = -1;
    if (!sel || !*sel) {
        for (size_t i = 0; i < n && chosen < 0; i++) {
            clf_device_desc d;
            clf__device_describe(list[i].platform, list[i].device, (uint32_t)i, &d);
            if (d.is_gpu)
                chosen = (long)i;
        }
        if (chosen < 0)
            chosen = 0;
    } else {
        char *end;
        long idx = strtol(sel, &end, 10);
        bool numeric = *end == '\0' && end != sel;
        bool want_gpu = strcmp(sel, "gpu") == 0, want_cpu = strcmp(sel, "cpu") == 0;
        for (size_t i = 0; i < n && chosen < 0; i++) {
            clf_device_desc d;
            clf__device_describe(list[i].platform, list[i].device, (uint32_t)i, &d);
            if (numeric ? idx == (long)i
                        : want_gpu   ? d.is_gpu
                        : want_cpu   ? d.is_cpu
                                     : (contains_nocase(d.device_name, sel) ||
                                        contains_nocase(d.platform_name, sel)))
                chosen = (long)i;
        }
        if (chosen < 0) {
            snprintf(msg, cap,
                     "no OpenCL device matches \"%s\" (%zu present; use an index, gpu, cpu or part of "
                     "a device or platform name; `clfuse devices` lists them)",
                     sel, n);
            clf__free(list);
            return CLF_ERR_NOT_FOUND;
        }
    }
    *platform = list[chosen].platform;
    *device = list[chosen].device;
    *index = (uint32_t)chosen;
    clf__free(list);
    return CLF_OK;
}
