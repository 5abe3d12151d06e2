// The program's side of training: LibTorch lives in libdynamiccl-train.so, loaded on first use, so
// the commands that do not train start without LibTorch's few hundred shared libraries.
#include <dlfcn.h>

#include <filesystem>

#include "offline/platforms/platforms.h"
#include "offline/train/torch_module.h"
#include "learned/learned.h"

namespace dynamiccl::train {
namespace {

// Where the module may be: DYNAMICCL_TRAIN_MODULE, next to the program (the build tree), the
// installed <prefix>/<libdir>/dynamiccl, then the build tree this program came from (tests).
std::vector<std::string> candidates() {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  if (const char* p = std::getenv("DYNAMICCL_TRAIN_MODULE"); p && *p) return {p};
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) out.push_back((exe.parent_path() / kTorchModuleFile).string());
  if (const std::string lib = platforms::dataRoot().libDir; !lib.empty())
    out.push_back((fs::path(lib) / "dynamiccl" / kTorchModuleFile).string());
  out.push_back(DYNAMICCL_TRAIN_MODULE_PATH);
  return out;
}

Expected<const TorchModuleApi*> open() {
  if (!DYNAMICCL_HAVE_TORCH)
    return makeError("this dynamiccl was built with no LibTorch (install libtorch-dev; DYNAMICCL_WITH_TORCH=ON)");
  std::string tried;
  for (const std::string& path : candidates()) {
    if (!std::filesystem::exists(path)) {
      tried += (tried.empty() ? "" : ", ") + path;
      continue;
    }
    // Never closed: LibTorch's static state outlives any point where unloading would be safe.
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) return makeError(std::string("cannot load the training module: ") + dlerror());
    using Entry = const TorchModuleApi* (*)();
    auto entry = reinterpret_cast<Entry>(dlsym(handle, kTorchModuleEntry));
    const TorchModuleApi* api = entry ? entry() : nullptr;
    if (!api || api->abi != kTorchModuleAbi || api->sampleSize != sizeof(Sample) ||
        api->optionsSize != sizeof(TrainOptions) || api->weightsSize != sizeof(learned::PolicyWeights))
      return makeError(path + " is a training module of another dynamiccl build");
    return api;
  }
  return makeError(std::string("training needs ") + kTorchModuleFile + ", not found (" + tried +
                   "): build it (cmake --build build --target dynamiccl_train_torch) or install the dynamiccl-train "
                   "package");
}

const Expected<const TorchModuleApi*>& module() {
  static const Expected<const TorchModuleApi*> loaded = open();
  return loaded;
}

}  // namespace

Status loadTorchModule() {
  if (!module()) return makeError(module().error());
  return Ok{};
}


Expected<learned::PolicyWeights> trainPolicyNetwork(const std::vector<Sample>& trainRows,
                                                   const std::vector<Sample>& validationRows,
                                                   const std::vector<Sample>& heldOutRows, const TrainOptions& options,
                                                   const std::function<void(const EpochStats&)>& onEpoch) {
  if (!module()) return makeError(module().error());
  return (*module())->train(trainRows, validationRows, heldOutRows, options, onEpoch);
}

Expected<std::vector<float>> torchPredictLogLatency_us(const learned::PolicyWeights& weights, const float* rows, int n,
                                                       const float* window) {
  if (!module()) return makeError(module().error());
  return (*module())->predict(weights, rows, n, window);
}

Expected<learned::PolicyWeights> torchInitialWeights(const TrainOptions& options) {
  if (!module()) return makeError(module().error());
  return (*module())->initialWeights(options);
}

}  // namespace dynamiccl::train
