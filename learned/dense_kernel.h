// One dense layer over a block of rows, for the network's hidden and output layers at rule generation.
// Every output element is computed in one fixed order (products summed for i ascending, then the
// bias, no fused multiply-add), so the AVX path and the baseline path give the same bits on every
// CPU: the rules a communicator gets must be identical on all of its ranks.
#pragma once

namespace dynamiccl::learned {

// y[r][o] = sum_i x[r][i] * wT[i][o] + b[o], then max(., 0) when relu. Row-major x (rows x in),
// wT (in x out: the torch weight transposed) and y (rows x out).
void denseLayer(const float* x, int rows, int in, const float* wT, const float* b, int out, bool relu, float* y);
// The path CPUs without AVX take; tests hold denseLayer to it bit for bit.
void denseLayerBaseline(const float* x, int rows, int in, const float* wT, const float* b, int out, bool relu,
                        float* y);

}  // namespace dynamiccl::learned
