/* Row statistics of a GEMM's first operand, GPU forms (gemm.cl,
 * gemm_rows.cl): the reductions over A's rows that its prologue applies (a
 * norm's mean and variance, planner.c's row statistics), computed by the
 * work-group for the rows it takes before its sweep, so that the norm
 * needs no kernel of its own. The CPU form computes them a row at a time
 * in one work-item (codegen's clf_row_stats, gemm_cpu.cl).
 *
 * clf_row_stats_group: the work-group's NT work-items compute statistics
 * 0 .. CLF_ROW_STATS - 1, in that order (each may read those before it),
 * for rows 0 .. rows - 1: row i is product bt0 + i / M, row i % M where
 * shared (gemm_rows.cl's B_SHARED), else product bt0, row m0 + i. L lanes
 * a row (NT / rows, a power of two, at least 1) each take every L-th
 * element along the row, four at a time (a tile of 16 work-items over 16
 * rows of 32 loaded one element at a time: each a wait on memory), then
 * meet in red (NT floats of local memory) in a tree; statistic j of row i lands in st[i * CLF_ROW_STATS + j]. Every
 * work-item calls it (it holds barriers) and returns after a barrier, red
 * free again.
 *
 * Codegen prepends CLF_ROW_STATS, K (the row's length), M, and
 * clf_row_stat_term(j, bt, m, r, st, ...) (statistic j's input at element
 * r of row (bt, m), st the row's statistics by value: clf_row_stat_values),
 * clf_row_stat_init(j),
 * clf_row_stat_combine(j, a, b) and clf_row_stat_finish(j, a). */
static void clf_row_stats_group(IDX_T bt0, IDX_T m0, int shared, int rows, int t, int nt, __local float *st,
                                __local float *red, CLF_PARAMS)
{
    int lanes = 1;
    while (lanes * 2 * rows <= nt)
        lanes *= 2;
    /* Statistic j's terms read those before it, passed on by value with
     * the later ones (zero until computed). */
    for (int e = t; e < rows * CLF_ROW_STATS; e += nt)
        st[e] = 0.0f;
    barrier(CLK_LOCAL_MEM_FENCE);
    const int per_pass = nt / lanes, lane = t % lanes;
    for (int j = 0; j < CLF_ROW_STATS; ++j) {
        for (int base = 0; base < rows; base += per_pass) {
            const int i = base + t / lanes;
            float a = clf_row_stat_init(j);
            if (t / lanes < per_pass && i < rows) {
                const IDX_T bt = shared ? (IDX_T)i / (IDX_T)(M) : bt0;
                const IDX_T m = shared ? (IDX_T)i % (IDX_T)(M) : m0 + (IDX_T)i;
                const clf_row_stat_values sr = *(__local const clf_row_stat_values *)(st + i * CLF_ROW_STATS);
                /* Four elements' loads in flight, four partial results. */
                float p1 = a, p2 = a, p3 = a;
                IDX_T r = (IDX_T)lane;
                for (; r + 3u * (IDX_T)lanes < (IDX_T)(K); r += 4u * (IDX_T)lanes) {
                    const float x0 = clf_row_stat_term(j, bt, m, r, sr, CLF_ARGS);
                    const float x1 = clf_row_stat_term(j, bt, m, r + (IDX_T)lanes, sr, CLF_ARGS);
                    const float x2 = clf_row_stat_term(j, bt, m, r + 2u * (IDX_T)lanes, sr, CLF_ARGS);
                    const float x3 = clf_row_stat_term(j, bt, m, r + 3u * (IDX_T)lanes, sr, CLF_ARGS);
                    a = clf_row_stat_combine(j, a, x0);
                    p1 = clf_row_stat_combine(j, p1, x1);
                    p2 = clf_row_stat_combine(j, p2, x2);
                    p3 = clf_row_stat_combine(j, p3, x3);
                }
                for (; r < (IDX_T)(K); r += (IDX_T)lanes)
                    a = clf_row_stat_combine(j, a, clf_row_stat_term(j, bt, m, r, sr, CLF_ARGS));
                a = clf_row_stat_combine(j, clf_row_stat_combine(j, a, p1), clf_row_stat_combine(j, p2, p3));
            }
            red[t] = a;
            barrier(CLK_LOCAL_MEM_FENCE);
            for (int s = lanes / 2; s > 0; s /= 2) {
                if (lane < s && t + s < nt)
                    red[t] = clf_row_stat_combine(j, red[t], red[t + s]);
                barrier(CLK_LOCAL_MEM_FENCE);
            }
            if (lane == 0 && t / lanes < per_pass && i < rows)
                st[i * CLF_ROW_STATS + j] = clf_row_stat_finish(j, red[t]);
            barrier(CLK_LOCAL_MEM_FENCE);
        }
    }
}
