/* A kernel's argument values as last set (see kernel_args.h). */
#include "runtime/kernel_args.h"

#include "util/alloc.h"

#include <stdatomic.h>
#include <string.h>

static atomic_uint_fast64_t next_owner = 1;

uint64_t clf__kernel_args_owner(void) { return (uint64_t)atomic_fetch_add(&next_owner, 1); }

/* The slot of index in m, grown to hold it (NULL when out of memory). */
static struct clf__arg_value *slot(clf__kernel_args *m, cl_uint index)
{
    if (index >= m->nargs) {
        cl_uint n = m->nargs ? m->nargs : 8;
        while (n <= index)
            n *= 2;
        struct clf__arg_value *v = clf__realloc(m->values, (size_t)n * sizeof *v);
        if (!v)
            return NULL;
        memset(v + m->nargs, 0, (size_t)(n - m->nargs) * sizeof *v);
        m->values = v;
        m->nargs = n;
    }
    return &m->values[index];
}

cl_int clf__kernel_arg(clf__kernel_args *m, uint64_t owner, cl_kernel kern, cl_uint index, size_t size,
                       const void *value)
{
    if (!m)
        return clSetKernelArg(kern, index, size, value);
    if (m->owner != owner) {
        clf__kernel_args_forget(m);
        m->owner = owner;
    }
    struct clf__arg_value *v = value && size <= sizeof v->bytes ? slot(m, index) : NULL;
    if (v && v->size == size && memcmp(v->bytes, value, size) == 0)
        return CL_SUCCESS;
    cl_int err = clSetKernelArg(kern, index, size, value);
    if (v) {
        v->size = err == CL_SUCCESS ? (uint8_t)size : 0;
        memcpy(v->bytes, value, size);
    } else if (index < m->nargs) {
        m->values[index].size = 0;
    }
    return err;
}

cl_int clf__kernel_arg_once(clf__kernel_args *m, cl_kernel kern, cl_uint index, size_t size, const void *value)
{
    if (m && index < m->nargs)
        m->values[index].size = 0;
    return clSetKernelArg(kern, index, size, value);
}

void clf__kernel_args_forget(clf__kernel_args *m)
{
    if (!m)
        return;
    for (cl_uint i = 0; i < m->nargs; i++)
        m->values[i].size = 0;
    m->owner = 0;
}

void clf__kernel_args_free(clf__kernel_args *m)
{
    clf__free(m->values);
    m->values = NULL;
    m->nargs = 0;
    m->owner = 0;
}
