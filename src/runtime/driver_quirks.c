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
};
const size_t clf__driver_quirk_count = sizeof clf__driver_quirk_table / sizeof clf__driver_quirk_table[0];

uint32_t clf__driver_quirks(const char *platform_name)
{
    uint32_t q = 0;
    for (size_t i = 0; i < clf__driver_quirk_count; i++)
        if (platform_name && strcmp(clf__driver_quirk_table[i].platform, platform_name) == 0)
            q |= clf__driver_quirk_table[i].quirk;
    return q;
}

const clf__driver_quirk *clf__driver_quirk_row(const char *platform_name, uint32_t q)
{
    for (size_t i = 0; i < clf__driver_quirk_count; i++)
        if (platform_name && strcmp(clf__driver_quirk_table[i].platform, platform_name) == 0 &&
            (clf__driver_quirk_table[i].quirk & q))
            return &clf__driver_quirk_table[i];
    return NULL;
}
