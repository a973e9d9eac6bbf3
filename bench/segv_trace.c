/* LD_PRELOAD helper for debugging crashes on machines without gdb: on
 * SIGSEGV prints a backtrace resolved with addr2line. Not part of the
 * library or its tests. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static void on_segv(int sig)
{
    void *frames[64];
    int n = backtrace(frames, 64);
    fprintf(stderr, "segv_trace: signal %d, %d frames\n", sig, n);
    for (int i = 0; i < n; i++) {
        Dl_info info;
        if (dladdr(frames[i], &info) && info.dli_fname) {
            char cmd[1024];
            snprintf(cmd, sizeof cmd, "addr2line -f -C -e %s %p | tr '\\n' ' ' 1>&2; echo ' [%s]' 1>&2",
                     info.dli_fname, (void *)((char *)frames[i] - (char *)info.dli_fbase - 1), info.dli_fname);
            if (system(cmd) != 0)
                fprintf(stderr, "  %p\n", frames[i]);
        }
    }
    _exit(139);
}

__attribute__((constructor)) static void install(void)
{
    signal(SIGSEGV, on_segv);
}
