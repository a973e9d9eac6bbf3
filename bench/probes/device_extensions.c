/* Prints the probe device's name, driver version and OpenCL extensions, one
 * a line, then whether it offers what a recorded decode step would need:
 * command buffers (cl_khr_command_buffer, replayed without host work per
 * launch, as CUDA graphs are) and their mutable dispatch
 * (cl_khr_command_buffer_mutable_dispatch: a new length's arguments set
 * into a recorded step). */
#include "probe_cl.h"

int main(void)
{
    cl_device_id dev = probe_device();
    if (!dev) {
        fprintf(stderr, "device_extensions: no OpenCL device\n");
        return 1;
    }
    char name[256] = "", driver[256] = "";
    static char ext[1 << 16];
    clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof name, name, NULL);
    clGetDeviceInfo(dev, CL_DRIVER_VERSION, sizeof driver, driver, NULL);
    if (clGetDeviceInfo(dev, CL_DEVICE_EXTENSIONS, sizeof ext, ext, NULL) != CL_SUCCESS) {
        fprintf(stderr, "device_extensions: CL_DEVICE_EXTENSIONS failed\n");
        return 1;
    }
    printf("device: %s\ndriver: %s\n", name, driver);
    int buffers = 0, mutable = 0;
    for (char *tok = strtok(ext, " "); tok; tok = strtok(NULL, " ")) {
        printf("  %s\n", tok);
        buffers |= !strcmp(tok, "cl_khr_command_buffer");
        mutable |= !strcmp(tok, "cl_khr_command_buffer_mutable_dispatch");
    }
    printf("command buffers: %s; mutable dispatch: %s\n", buffers ? "yes" : "no", mutable ? "yes" : "no");
    return 0;
}
