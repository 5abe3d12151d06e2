// The dense layer: one body, compiled for AVX and for the baseline ISA, picked once by CPU. Built
// with -ffp-contract=off (policy/CMakeLists.txt): a contracted multiply-add would round differently.
#include "learned/dense_kernel.h"

#include <cstring>

namespace dynamiccl::learned {
namespace {

using Vec8 = float __attribute__((vector_size(32)));  // 8 lanes: 8 outputs of one row, or one output of 8 rows
constexpr int kLanes = 8;

// By reference: a Vec8 passed by value would take another calling convention with and without AVX.
[[gnu::always_inline]] inline void load(Vec8& v, const float* p) { std::memcpy(&v, p, sizeof v); }

// Rows x (Vecs x 8) outputs starting at o0; each loaded weight vector serves every row of the tile,
// and Rows x Vecs independent accumulators keep both vector units busy. Fully unrolled so the
// accumulators live in registers.
template <int Rows, int Vecs>
[[gnu::always_inline]] inline void tile(const float* x, int in, const float* wT, const float* b, int out, int o0,
                                        bool relu, float* y) {
  Vec8 acc[Rows][Vecs] = {};
  for (int i = 0; i < in; ++i) {
    Vec8 w[Vecs];
#pragma GCC unroll 4
    for (int v = 0; v < Vecs; ++v) load(w[v], wT + i * out + o0 + v * kLanes);
#pragma GCC unroll 4
    for (int r = 0; r < Rows; ++r) {
      const float xi = x[r * in + i];
#pragma GCC unroll 4
      for (int v = 0; v < Vecs; ++v) acc[r][v] += xi * w[v];
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < Rows; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < Vecs; ++v) {
      Vec8 o;
      load(o, b + o0 + v * kLanes);
      o = acc[r][v] + o;
      if (relu) o = o > 0.0f ? o : Vec8{};
      std::memcpy(y + r * out + o0 + v * kLanes, &o, sizeof o);
    }
}

// One row's outputs from o0 on, one at a time (rows left over by narrow).
[[gnu::always_inline]] inline void tail(const float* x, int in, const float* wT, const float* b, int out, int o0,
                                        bool relu, float* y) {
  for (int o = o0; o < out; ++o) {
    float acc = 0.0f;
    for (int i = 0; i < in; ++i) acc += x[i] * wT[i * out + o];
    float v = acc + b[o];
    if (relu) v = v > 0.0f ? v : 0.0f;
    y[o] = v;
  }
}

// Tiles of 4 rows x 16 outputs, then narrower ones for what is left; every element is summed in
// the same order whichever tile computes it.
template <int Rows>
[[gnu::always_inline]] inline void rowBlock(const float* x, int in, const float* wT, const float* b, int out, bool relu,
                                            float* y) {
  int o = 0;
  for (; o + 2 * kLanes <= out; o += 2 * kLanes) tile<Rows, 2>(x, in, wT, b, out, o, relu, y);
  for (; o + kLanes <= out; o += kLanes) tile<Rows, 1>(x, in, wT, b, out, o, relu, y);
}

// Outputs past the last full group of 8 (the output layer has one output): 8 rows per vector instead.
[[gnu::always_inline]] inline void narrow(const float* x, int rows, int in, const float* wT, const float* b, int out,
                                          int o0, bool relu, float* y) {
  int r = 0;
  for (; r + kLanes <= rows; r += kLanes)
    for (int o = o0; o < out; ++o) {
      Vec8 acc = {};
      for (int i = 0; i < in; ++i) {
        Vec8 xi;
#pragma GCC unroll 8
        for (int l = 0; l < kLanes; ++l) xi[l] = x[(r + l) * in + i];
        acc += xi * wT[i * out + o];
      }
#pragma GCC unroll 8
      for (int l = 0; l < kLanes; ++l) {
        float v = acc[l] + b[o];
        if (relu) v = v > 0.0f ? v : 0.0f;
        y[(r + l) * out + o] = v;
      }
    }
  for (; r < rows; ++r) tail(x + r * in, in, wT, b, out, o0, relu, y + r * out);
}

[[gnu::always_inline]] inline void body(const float* x, int rows, int in, const float* wT, const float* b, int out,
                                        bool relu, float* y) {
  int r = 0;
  for (; r + 4 <= rows; r += 4) rowBlock<4>(x + r * in, in, wT, b, out, relu, y + r * out);
  for (; r < rows; ++r) rowBlock<1>(x + r * in, in, wT, b, out, relu, y + r * out);
  const int fullOut = out - out % kLanes;
  if (fullOut < out) narrow(x, rows, in, wT, b, out, fullOut, relu, y);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
[[gnu::target("avx")]] void denseAvx(const float* x, int rows, int in, const float* wT, const float* b, int out,
                                     bool relu, float* y) {
  body(x, rows, in, wT, b, out, relu, y);
}
bool cpuHasAvx() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx");
}
#endif

}  // namespace

void denseLayerBaseline(const float* x, int rows, int in, const float* wT, const float* b, int out, bool relu,
                        float* y) {
  body(x, rows, in, wT, b, out, relu, y);
}

void denseLayer(const float* x, int rows, int in, const float* wT, const float* b, int out, bool relu, float* y) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  static const bool avx = cpuHasAvx();
  if (avx) return denseAvx(x, rows, in, wT, b, out, relu, y);
#endif
  denseLayerBaseline(x, rows, in, wT, b, out, relu, y);
}

}  // namespace dynamiccl::learned
