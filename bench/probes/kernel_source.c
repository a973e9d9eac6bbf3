/* Prints the OpenCL C that libclfuse generates in its GPU form for one of
 * the suite's row reductions, or for relu(x @ w + b), on the default
 * device (STYLE=cpu: in the CPU form), for bench/probes/case_variants.py or gemm_ablations.py to edit
 * and cl_kernel_info to time; DTYPE=f16|bf16 makes every tensor that dtype.
 *     kernel_source softmax|layernorm|rmsnorm|horizontal|chain|gemm ROWS COLS
 * (gemm: x is ROWS x COLS, w COLS x COLS; chain: relu(x * a + b), all
 * three ROWS x COLS) */
#include <clfuse/clfuse.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc != 4 || atol(argv[2]) <= 0 || atol(argv[3]) <= 0) {
        fprintf(stderr, "usage: kernel_source softmax|layernorm|rmsnorm|horizontal|chain|gemm ROWS COLS\n");
        return 2;
    }
    int64_t s[2] = {atol(argv[2]), atol(argv[3])}, w[1] = {s[1]};
    int last = -1;
    const char *dt_env = getenv("DTYPE");
    const clf_dtype dt = !dt_env ? CLF_F32 : strcmp(dt_env, "f16") == 0 ? CLF_F16 : strcmp(dt_env, "bf16") == 0 ? CLF_BF16 : CLF_F32;
    clf_graph *g = clf_graph_create();
    clf_tensor x = clf_input(g, "x", dt, 2, s);
    if (strcmp(argv[1], "layernorm") == 0) {
        clf_tensor wt = clf_input(g, "w", dt, 1, w), b = clf_input(g, "b", dt, 1, w);
        clf_graph_output(g, "y", clf_layer_norm(g, x, -1, 1e-5, wt, b));
    } else if (strcmp(argv[1], "rmsnorm") == 0) {
        clf_tensor wt = clf_input(g, "w", dt, 1, w);
        clf_graph_output(g, "y", clf_rms_norm(g, x, -1, 1e-5, wt));
    } else if (strcmp(argv[1], "chain") == 0) {
        clf_tensor a = clf_input(g, "a", dt, 2, s), b = clf_input(g, "b", dt, 2, s);
        clf_graph_output(g, "y", clf_relu(g, clf_add(g, clf_mul(g, x, a), b)));
    } else if (strcmp(argv[1], "gemm") == 0) {
        int64_t ws[2] = {s[1], s[1]};
        clf_tensor wt = clf_input(g, "w", dt, 2, ws), b = clf_input(g, "b", dt, 1, w);
        clf_graph_output(g, "y", clf_relu(g, clf_add(g, clf_matmul(g, x, wt), b)));
    } else if (strcmp(argv[1], "horizontal") == 0) {
        clf_graph_output(g, "m", clf_reduce_mean(g, x, 1, &last, false));
        clf_graph_output(g, "q", clf_reduce_mean(g, clf_mul(g, x, x), 1, &last, false));
    } else {
        clf_graph_output(g, "y", clf_softmax(g, x, -1));
    }
    clf_context *ctx = NULL;
    clf_executable *exe = NULL;
    const char *style_env = getenv("STYLE");
    clf_kernel_style style = style_env && strcmp(style_env, "cpu") == 0 ? CLF_KERNEL_STYLE_CPU : CLF_KERNEL_STYLE_GPU;
    clf_status st = clf_context_create(NULL, &ctx);
    if (st == CLF_OK)
        st = clf_compile(ctx, g, clf_compile_params(.kernel_style = style), &exe);
    if (st != CLF_OK) {
        fprintf(stderr, "kernel_source: %s: %s\n", clf_status_name(st), ctx ? clf_context_last_error(ctx) : "");
        return 1;
    }
    fputs(clf_executable_kernel_source(exe, 0), stdout);
    clf_executable_destroy(&exe);
    clf_context_destroy(&ctx);
    clf_graph_destroy(&g);
    return 0;
}
