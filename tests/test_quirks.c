/* The driver quirk table's reproducers (src/runtime/driver_quirks.h): for
 * every row whose platform has a device here, its case shows the driver
 * still does what the row says, so the table stays true. A row that no
 * longer reproduces fails, naming the row: the driver was fixed, and the
 * workaround and the README line may go. Exits 77 (skip) when no row's
 * platform has a device (rusticl needs RUSTICL_ENABLE=llvmpipe or a GPU).
 *
 * Each reproducer runs in a child process, which makes its own OpenCL
 * context (PoCL hangs on a context made before fork()). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CL/cl.h>

#include "runtime/driver_quirks.h"

/* The first device of the platform named name, or NULL. */
static cl_device_id device_of(const char *name, cl_platform_id *plat)
{
    cl_platform_id ps[16];
    cl_uint np = 0;
    if (clGetPlatformIDs(16, ps, &np) != CL_SUCCESS)
        return NULL;
    for (cl_uint i = 0; i < np && i < 16; i++) {
        char pn[256] = "";
        cl_device_id d = NULL;
        cl_uint nd = 0;
        clGetPlatformInfo(ps[i], CL_PLATFORM_NAME, sizeof pn - 1, pn, NULL);
        if (strcmp(pn, name) == 0 && clGetDeviceIDs(ps[i], CL_DEVICE_TYPE_ALL, 1, &d, &nd) == CL_SUCCESS && nd) {
            *plat = ps[i];
            return d;
        }
    }
    return NULL;
}

/* CLF__QUIRK_ABORTS_ON_FOREIGN_BINARY: a binary of garbage (with the right
 * header length, so that only its content is foreign) handed to
 * clCreateProgramWithBinary and clBuildProgram. Returns the child's status. */
static void foreign_binary(const char *platform)
{
    cl_platform_id plat;
    cl_device_id dev = device_of(platform, &plat);
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    unsigned char bin[256];
    for (size_t i = 0; i < sizeof bin; i++)
        bin[i] = (unsigned char)(i * 37 + 11);
    const unsigned char *b = bin;
    size_t len = sizeof bin;
    cl_int st = CL_SUCCESS;
    cl_program p = clCreateProgramWithBinary(ctx, 1, &dev, &len, &b, &st, &err);
    if (p)
        err = clBuildProgram(p, 1, &dev, "", NULL, NULL);
    /* Reaching here means the driver refused (or took) it without dying. */
    printf("    the driver returned: clCreateProgramWithBinary %d, binary status %d, clBuildProgram %d\n",
           p ? CL_SUCCESS : err, st, p ? err : 0);
    exit(0);
}

int main(void)
{
    int ran = 0, failed = 0;
    for (size_t i = 0; i < clf__driver_quirk_count; i++) {
        const clf__driver_quirk *q = &clf__driver_quirk_table[i];
        cl_platform_id plat;
        if (!device_of(q->platform, &plat)) {
            printf("SKIP %s: no %s device here\n", q->reproducer, q->platform);
            continue;
        }
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            if (q->quirk == CLF__QUIRK_ABORTS_ON_FOREIGN_BINARY)
                foreign_binary(q->platform);
            exit(2);
        }
        int status = 0;
        waitpid(pid, &status, 0);
        bool reproduced = false;
        if (q->quirk == CLF__QUIRK_ABORTS_ON_FOREIGN_BINARY)
            reproduced = WIFSIGNALED(status);
        ran++;
        if (reproduced) {
            printf("PASS %s: %s %s (signal %d)\n", q->reproducer, q->platform, q->what,
                   WIFSIGNALED(status) ? WTERMSIG(status) : 0);
        } else {
            failed++;
            printf("FAIL %s: %s no longer %s (exit status %d): the row in src/runtime/driver_quirks.c, its "
                   "workaround and its README line may go\n",
                   q->reproducer, q->platform, q->what, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        }
    }
    printf("%d reproduced, %d did not, %zu rows\n", ran - failed, failed, clf__driver_quirk_count);
    if (!ran)
        return 77;
    return failed ? 1 : 0;
}
