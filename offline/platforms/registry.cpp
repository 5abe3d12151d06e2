// The registry of platforms and the process's one instance.
#include "offline/platforms/registry.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <mutex>

#include "offline/platforms/data_root.h"

namespace dynamiccl::platforms {

namespace {

// A folder of platform files, not a data dump: more files than this is a mistake.
constexpr size_t kMaxPlatformFiles = 1024;

Expected<std::vector<std::string>> platformFilesIn(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::vector<std::string> files;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() != ".json" || !it->is_regular_file(ec)) continue;
    files.push_back(it->path().string());
    if (files.size() > kMaxPlatformFiles)
      return makeError("platform folder " + dir + ": more than " + std::to_string(kMaxPlatformFiles) + " files");
  }
  if (ec) return makeError("platform folder " + dir + ": " + ec.message());
  std::sort(files.begin(), files.end());
  return files;
}

struct ProcessRegistry {
  std::mutex mutex;
  std::shared_ptr<const Registry> current;  // null until loaded, or when the built-in folder failed
  std::string error;
};

ProcessRegistry& processRegistry() {
  static ProcessRegistry r;
  return r;
}

// The built-in folder, read on first use; the caller holds r.mutex.
Expected<std::shared_ptr<const Registry>> loadedLocked(ProcessRegistry& r) {
  if (!r.current && r.error.empty()) {
    auto loaded = Registry::load(builtinPlatformDir());
    if (loaded) r.current = std::make_shared<const Registry>(std::move(*loaded));
    else r.error = loaded.error();
  }
  if (!r.current) return makeError(r.error);
  return r.current;
}

}  // namespace

Expected<Registry> Registry::load(const std::string& dir, const std::vector<std::string>& files) {
  auto builtin = platformFilesIn(dir);
  if (!builtin) return makeError(builtin.error());
  std::vector<std::string> all = std::move(*builtin);
  all.insert(all.end(), files.begin(), files.end());
  Registry r;
  for (const std::string& f : all) {
    auto p = loadPlatformFile(f);
    if (!p) return makeError(p.error());
    if (auto added = r.add(std::move(*p)); !added) return makeError("platform file " + f + ": " + added.error());
  }
  return r;
}

Status Registry::add(Platform p) {
  for (const Platform& other : platforms_) {
    if (other.name == p.name) continue;  // replaced below
    for (const std::string& s : p.systems)
      if (std::find(other.systems.begin(), other.systems.end(), s) != other.systems.end())
        return makeError("system pattern \"" + s + "\" already belongs to platform " + other.name);
  }
  auto same = std::find_if(platforms_.begin(), platforms_.end(), [&](const Platform& o) { return o.name == p.name; });
  if (same != platforms_.end()) *same = std::move(p);
  else platforms_.push_back(std::move(p));
  return Ok{};
}

const Platform* Registry::find(std::string_view name) const {
  for (const Platform& p : platforms_)
    if (p.name == name) return &p;
  return nullptr;
}

const Platform* Registry::forSystem(std::string_view system) const {
  const Platform* best = nullptr;
  size_t bestLength = 0;
  for (const Platform& p : platforms_)
    for (const std::string& s : p.systems)
      if (s.size() > bestLength && system.find(s) != std::string_view::npos) best = &p, bestLength = s.size();
  return best;
}

std::vector<std::string> Registry::names() const {
  std::vector<std::string> out;
  for (const Platform& p : platforms_) out.push_back(p.name);
  return out;
}

std::string builtinPlatformDir() {
  if (const char* dir = std::getenv("DYNAMICCL_PLATFORM_DIR"); dir && *dir) return dir;
  return dataRoot().path + "/offline/platforms";
}

Expected<std::shared_ptr<const Registry>> registry() {
  ProcessRegistry& r = processRegistry();
  std::lock_guard lock(r.mutex);
  return loadedLocked(r);
}

Status addPlatformFiles(const std::vector<std::string>& files) {
  ProcessRegistry& r = processRegistry();
  std::lock_guard lock(r.mutex);
  auto current = loadedLocked(r);
  if (!current) return makeError(current.error());
  Registry next = **current;
  for (const std::string& f : files) {
    auto p = loadPlatformFile(f);
    if (!p) return makeError(p.error());
    if (auto added = next.add(std::move(*p)); !added) return makeError("platform file " + f + ": " + added.error());
  }
  r.current = std::make_shared<const Registry>(std::move(next));
  return Ok{};
}

}  // namespace dynamiccl::platforms
