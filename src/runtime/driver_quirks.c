/* The driver quirk table (driver_quirks.h). */
#include "runtime/driver_quirks.h"

#include <string.h>

static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* rusticl's program binary (Mesa 22.3): a 12-byte header (a format
 * version, the SPIR-V's length in bytes, the binary's kind), then that much
 * SPIR-V, which starts with SPIR-V's magic number. A later format that
 * differs fails this test and costs a build from source, never a crash. */
static bool rusticl_binary_is_own(const unsigned char *bin, size_t len)
{
    if (len < 16 || le32(bin) != 1)
        return false;
    const uint32_t spirv = le32(bin + 4);
    return spirv % 4 == 0 && (size_t)spirv == len - 12 && le32(bin + 12) == 0x07230203u;
}

const clf__driver_quirk clf__driver_quirk_table[] = {
    {.platform = "rusticl",
     .seen_on = "Mesa 22.3.6 (Debian 12), llvmpipe",
     .quirk = CLF__QUIRK_ABORTS_ON_FOREIGN_BINARY,
     .what = "clBuildProgram on a program binary it did not write aborts the process",
     .workaround = "a cached binary reaches the driver only in rusticl's own format; others are rebuilt from source",
     .reproducer = "rusticl_foreign_binary_aborts",
     .binary_is_own = rusticl_binary_is_own},
    {.platform = "rusticl",
     .device = "llvmpipe",
     .seen_on = "Mesa 22.3.6 (Debian 12)",
     .quirk = CLF__QUIRK_LOOP_TRIPS_65535,
     .what = "ends every loop of a kernel after 65535 iterations, without an error",
     .workaround = "reductions split rows so that no loop runs longer; a kernel that cannot is refused",
     .reproducer = "llvmpipe_loops_end_at_65535"},
    {.platform = "rusticl",
     .seen_on = "Mesa 22.3.6 (Debian 12), llvmpipe",
     .quirk = CLF__QUIRK_ZERO_PLUS_X_FOLDED,
     .what = "folds 0.0f + x to x, so 0 + (-0) gives -0 (IEEE 754: +0)",
     .workaround = "none: the sign of such a zero is the compiler's; tests accept -0 there",
     .reproducer = "rusticl_zero_plus_minus_zero_is_minus_zero"},
    {.platform = "rusticl",
     .device = "llvmpipe",
     .seen_on = "Mesa 22.3.6 (Debian 12)",
     .quirk = CLF__QUIRK_SLOW_INLINED_CODE,
     .what = "inlines every call and builds slower than the code grows (libclc's sin above all)",
     .workaround = "pointwise kernels take one element a work-item and fused chains are cut at 8 ops",
     .reproducer = "llvmpipe_builds_unrolled_sin_slowly"},
    {.platform = "NVIDIA CUDA",
     .seen_on = "580.159.04, H200",
     .quirk = CLF__QUIRK_OVERLAPPING_SUB_BUFFERS,
     .what = "crashes releasing a sub-buffer, used by a kernel, that overlaps a live one of other extent used after it",
     .workaround = "no sub-buffers of scratch memory: kernels get the scratch buffer and each region's offset "
                   "(a caller's bindings at offsets remain sub-buffers)",
     .reproducer = "nvidia_overlapping_sub_buffers_crash"},
};
const size_t clf__driver_quirk_count = sizeof clf__driver_quirk_table / sizeof clf__driver_quirk_table[0];

static bool row_applies(const clf__driver_quirk *r, const char *platform_name, const char *device_name)
{
    return platform_name && strcmp(r->platform, platform_name) == 0 &&
           (!r->device || (device_name && strncmp(device_name, r->device, strlen(r->device)) == 0));
}

uint32_t clf__driver_quirks(const char *platform_name, const char *device_name)
{
    uint32_t q = 0;
    for (size_t i = 0; i < clf__driver_quirk_count; i++)
        if (row_applies(&clf__driver_quirk_table[i], platform_name, device_name))
            q |= clf__driver_quirk_table[i].quirk;
    return q;
}

const clf__driver_quirk *clf__driver_quirk_row(const char *platform_name, const char *device_name, uint32_t q)
{
    for (size_t i = 0; i < clf__driver_quirk_count; i++)
        if (row_applies(&clf__driver_quirk_table[i], platform_name, device_name) &&
            (clf__driver_quirk_table[i].quirk & q))
            return &clf__driver_quirk_table[i];
    return NULL;
}
