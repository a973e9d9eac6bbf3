__kernel void s16(__global const half *restrict a, __global float *restrict o, const uint n)
{
    const uint g = get_global_id(0), per = n / get_global_size(0) / 16;
    float16 acc = 0;
    __global const half *p = a + (size_t)g * per * 16;
    for (uint i = 0; i < per; ++i) acc += vload_half16(i, p);
    o[g] = acc.s0 + acc.s1 + acc.s2 + acc.s3 + acc.s4 + acc.s5 + acc.s6 + acc.s7 + acc.s8 + acc.s9 + acc.sa + acc.sb + acc.sc + acc.sd + acc.se + acc.sf;
}
