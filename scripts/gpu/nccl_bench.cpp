// One rank of a small NCCL benchmark (CUDA runtime + NCCL): ranks meet through an ncclUniqueId that
// rank 0 writes to a shared file, then time allreduce/allgather/reducescatter over a size sweep.
// Rank 0 prints one line per (collective, size):  RESULT <coll> <bytes> <time_us> <algbw> <busbw>
// Sizes follow nccl-tests: the total buffer (allgather: output, reducescatter: input), float/sum.
#include <cuda_runtime.h>
#include <nccl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

#define CUDA_CHECK(x)                                                                          \
  do {                                                                                         \
    cudaError_t e_ = (x);                                                                      \
    if (e_ != cudaSuccess) {                                                                   \
      std::fprintf(stderr, "nccl_bench: %s failed: %s\n", #x, cudaGetErrorString(e_));        \
      std::exit(1);                                                                            \
    }                                                                                          \
  } while (0)
#define NCCL_CHECK(x)                                                                          \
  do {                                                                                         \
    ncclResult_t r_ = (x);                                                                     \
    if (r_ != ncclSuccess) {                                                                   \
      std::fprintf(stderr, "nccl_bench: %s failed: %s\n", #x, ncclGetErrorString(r_));        \
      std::exit(1);                                                                            \
    }                                                                                          \
  } while (0)

struct Options {
  int rank = -1, nranks = 0, device = 0, iters = 20, warmup = 5, timeoutSec = 120;
  uint64_t minBytes = 8, maxBytes = 64ull << 20, factor = 2;
  std::string idFile;
  std::vector<std::string> colls = {"allreduce", "allgather", "reducescatter"};
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "nccl_bench: %s\nusage: nccl_bench --rank R --nranks N --id-file PATH [--device D] [--min-bytes B]\n"
               "  [--max-bytes B] [--factor F] [--iters I] [--warmup W] [--colls allreduce,allgather,reducescatter]\n",
               why);
  std::exit(2);
}

uint64_t parseU64(const char* s, const char* what) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(s, &end, 10);
  uint64_t mult = 1;
  if (end && (*end == 'K' || *end == 'k')) mult = 1ull << 10, ++end;
  else if (end && (*end == 'M' || *end == 'm')) mult = 1ull << 20, ++end;
  else if (end && (*end == 'G' || *end == 'g')) mult = 1ull << 30, ++end;
  if (errno != 0 || end == s || *end != '\0' || s[0] == '-') usage(what);
  return v * mult;
}

Options parseArgs(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) usage(("missing value for " + a).c_str());
    const char* v = argv[++i];
    if (a == "--rank") o.rank = static_cast<int>(parseU64(v, "bad --rank"));
    else if (a == "--nranks") o.nranks = static_cast<int>(parseU64(v, "bad --nranks"));
    else if (a == "--device") o.device = static_cast<int>(parseU64(v, "bad --device"));
    else if (a == "--id-file") o.idFile = v;
    else if (a == "--min-bytes") o.minBytes = parseU64(v, "bad --min-bytes");
    else if (a == "--max-bytes") o.maxBytes = parseU64(v, "bad --max-bytes");
    else if (a == "--factor") o.factor = parseU64(v, "bad --factor");
    else if (a == "--iters") o.iters = static_cast<int>(parseU64(v, "bad --iters"));
    else if (a == "--warmup") o.warmup = static_cast<int>(parseU64(v, "bad --warmup"));
    else if (a == "--timeout") o.timeoutSec = static_cast<int>(parseU64(v, "bad --timeout"));
    else if (a == "--colls") {
      o.colls.clear();
      std::stringstream ss(v);
      for (std::string c; std::getline(ss, c, ',');)
        if (c == "allreduce" || c == "allgather" || c == "reducescatter") o.colls.push_back(c);
        else usage(("unknown collective " + c).c_str());
    } else usage(("unknown option " + a).c_str());
  }
  if (o.nranks < 1 || o.rank < 0 || o.rank >= o.nranks) usage("need 0 <= --rank < --nranks");
  if (o.idFile.empty()) usage("need --id-file");
  if (o.minBytes < 4 || o.maxBytes < o.minBytes || o.factor < 2 || o.iters < 1) usage("bad size sweep or iters");
  return o;
}

// Rank 0 writes the id under a temporary name and renames it, so readers never see half a file.
void shareUniqueId(const Options& o, ncclUniqueId& id) {
  if (o.rank == 0) {
    NCCL_CHECK(ncclGetUniqueId(&id));
    const std::string tmp = o.idFile + ".tmp." + std::to_string(getpid());
    std::ofstream(tmp, std::ios::binary).write(reinterpret_cast<const char*>(&id), sizeof id);
    if (std::rename(tmp.c_str(), o.idFile.c_str()) != 0) usage("cannot write --id-file");
    return;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(o.timeoutSec);
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream in(o.idFile, std::ios::binary);
    if (in.read(reinterpret_cast<char*>(&id), sizeof id) && in.gcount() == sizeof id) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  usage("timed out waiting for rank 0's --id-file");
}

double busBwFactor(const std::string& coll, int n) {
  return coll == "allreduce" ? 2.0 * (n - 1) / n : static_cast<double>(n - 1) / n;
}

void launch(const std::string& coll, uint64_t bytes, int n, float* send, float* recv, ncclComm_t comm,
            cudaStream_t s) {
  const size_t count = bytes / sizeof(float);
  if (coll == "allreduce") NCCL_CHECK(ncclAllReduce(send, recv, count, ncclFloat, ncclSum, comm, s));
  else if (coll == "allgather") NCCL_CHECK(ncclAllGather(send, recv, count / n, ncclFloat, comm, s));
  else NCCL_CHECK(ncclReduceScatter(send, recv, count / n, ncclFloat, ncclSum, comm, s));
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parseArgs(argc, argv);
  CUDA_CHECK(cudaSetDevice(o.device));
  ncclUniqueId id;
  shareUniqueId(o, id);
  ncclComm_t comm;
  NCCL_CHECK(ncclCommInitRank(&comm, o.nranks, id, o.rank));
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreate(&stream));
  float *send = nullptr, *recv = nullptr;
  CUDA_CHECK(cudaMalloc(&send, o.maxBytes));
  CUDA_CHECK(cudaMalloc(&recv, o.maxBytes));
  CUDA_CHECK(cudaMemset(send, 0, o.maxBytes));
  cudaEvent_t start, stop;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  if (o.rank == 0) std::printf("# nccl_bench nranks %d iters %d warmup %d\n# RESULT coll bytes time_us algbw_GBps busbw_GBps\n",
                               o.nranks, o.iters, o.warmup);
  for (const auto& coll : o.colls) {
    for (uint64_t bytes = o.minBytes; bytes <= o.maxBytes; bytes *= o.factor) {
      const uint64_t grain = sizeof(float) * (coll == "allreduce" ? 1 : o.nranks);
      if (bytes < grain || bytes % grain != 0) continue;  // nccl-tests skips sizes that do not split evenly
      for (int i = 0; i < o.warmup; ++i) launch(coll, bytes, o.nranks, send, recv, comm, stream);
      CUDA_CHECK(cudaEventRecord(start, stream));
      for (int i = 0; i < o.iters; ++i) launch(coll, bytes, o.nranks, send, recv, comm, stream);
      CUDA_CHECK(cudaEventRecord(stop, stream));
      CUDA_CHECK(cudaEventSynchronize(stop));
      float ms = 0;
      CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
      const double us = 1000.0 * ms / o.iters;
      const double algbw = static_cast<double>(bytes) / (us * 1000.0);  // GB/s
      if (o.rank == 0)
        std::printf("RESULT %s %llu %.2f %.3f %.3f\n", coll.c_str(), static_cast<unsigned long long>(bytes), us, algbw,
                    algbw * busBwFactor(coll, o.nranks));
      std::fflush(stdout);
    }
  }
  CUDA_CHECK(cudaFree(send));
  CUDA_CHECK(cudaFree(recv));
  NCCL_CHECK(ncclCommDestroy(comm));
  return 0;
}
