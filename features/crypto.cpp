// libcrypto through dlopen: the five functions used are declared here (OpenSSL keeps them in its ABI
// from 1.1 to 3), so building needs no OpenSSL headers and loading the plugin no libcrypto.
#include "features/crypto.h"

#include <dlfcn.h>

#include <climits>
#include <mutex>

namespace dynamiccl {
namespace {

struct Api {
  const void* (*evpSha256)();  // EVP_sha256: the digest's method
  int (*evpDigest)(const void* data, size_t n, unsigned char* md, unsigned int* mdLen, const void* type, void* engine);
  unsigned char* (*hmac)(const void* type, const void* key, int keyLen, const unsigned char* data, size_t n,
                         unsigned char* md, unsigned int* mdLen);
  int (*encodeBlock)(unsigned char* out, const unsigned char* in, int n);  // EVP_EncodeBlock
  int (*decodeBlock)(unsigned char* out, const unsigned char* in, int n);  // EVP_DecodeBlock
};

// Lengths beyond int are never records (a record is at most 1 MiB): refused, as OpenSSL takes int.
constexpr size_t kLongest = INT_MAX / 4 * 3;

class LoadedCrypto final : public Crypto {
 public:
  explicit LoadedCrypto(const Api& api) : api_(api) {}

  Digest sha256(std::string_view data) const override {
    Digest out{};
    unsigned int n = 0;
    if (api_.evpDigest(data.data(), data.size(), out.data(), &n, api_.evpSha256(), nullptr) != 1 || n != out.size())
      out.fill(0);
    return out;
  }

  Digest hmacSha256(std::string_view key, std::string_view message) const override {
    Digest out{};
    unsigned int n = 0;
    if (key.size() > kLongest ||
        !api_.hmac(api_.evpSha256(), key.data(), static_cast<int>(key.size()),
                   reinterpret_cast<const unsigned char*>(message.data()), message.size(), out.data(), &n) ||
        n != out.size())
      out.fill(0);
    return out;
  }

  std::string base64(std::string_view bytes) const override {
    if (bytes.size() > kLongest) return {};
    std::string out((bytes.size() + 2) / 3 * 4 + 1, '\0');  // with the terminating NUL it writes
    const int n = api_.encodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                   reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
    out.resize(n > 0 ? static_cast<size_t>(n) : 0);
    return out;
  }

  std::optional<std::string> unbase64(std::string_view text) const override {
    if (text.size() % 4 != 0 || text.size() > kLongest) return std::nullopt;
    if (text.empty()) return std::string();
    std::string out(text.size() / 4 * 3, '\0');
    const int n = api_.decodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                   reinterpret_cast<const unsigned char*>(text.data()), static_cast<int>(text.size()));
    if (n < 0) return std::nullopt;
    // EVP_DecodeBlock counts the padding's bytes as zeros: the '='s say how many to drop.
    const size_t padding = text.ends_with("==") ? 2 : text.ends_with("=") ? 1 : 0;
    out.resize(static_cast<size_t>(n) - std::min<size_t>(padding, static_cast<size_t>(n)));
    return out;
  }

 private:
  Api api_;
};

template <typename F>
bool bind(void* lib, const char* name, F& out) {
  out = reinterpret_cast<F>(dlsym(lib, name));
  return out != nullptr;
}

const Crypto* loadedOrNull() {
  auto c = systemCrypto();
  return c.ok() ? c->get() : nullptr;
}

}  // namespace

Expected<std::shared_ptr<const Crypto>> Crypto::load(const char* library) {
  void* lib = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* why = dlerror();
    return makeError(std::string("cannot load ") + library + " (" + (why ? why : "?") + ")");
  }
  Api api{};
  if (!bind(lib, "EVP_sha256", api.evpSha256) || !bind(lib, "EVP_Digest", api.evpDigest) ||
      !bind(lib, "HMAC", api.hmac) || !bind(lib, "EVP_EncodeBlock", api.encodeBlock) ||
      !bind(lib, "EVP_DecodeBlock", api.decodeBlock)) {
    dlclose(lib);
    return makeError(std::string(library) + " lacks a libcrypto function (EVP_Digest, HMAC, EVP_EncodeBlock)");
  }
  return std::shared_ptr<const Crypto>(std::make_shared<LoadedCrypto>(api));  // stays loaded for the process
}

Expected<std::shared_ptr<const Crypto>> systemCrypto() {
  static std::once_flag once;
  static Expected<std::shared_ptr<const Crypto>> loaded = makeError("");
  std::call_once(once, [] {
    loaded = Crypto::load("libcrypto.so.3");
    if (loaded.ok()) return;
    const std::string first = loaded.error();
    loaded = Crypto::load("libcrypto.so.1.1");
    if (!loaded.ok())
      loaded = makeError("OpenSSL's libcrypto is needed to seal coordination records: " + first + "; " + loaded.error());
  });
  return loaded;
}

Digest sha256(std::string_view data) {
  const Crypto* c = loadedOrNull();
  return c ? c->sha256(data) : Digest{};
}
Digest hmacSha256(std::string_view key, std::string_view message) {
  const Crypto* c = loadedOrNull();
  return c ? c->hmacSha256(key, message) : Digest{};
}
std::string base64(std::string_view bytes) {
  const Crypto* c = loadedOrNull();
  return c ? c->base64(bytes) : std::string();
}
std::optional<std::string> unbase64(std::string_view text) {
  const Crypto* c = loadedOrNull();
  return c ? c->unbase64(text) : std::nullopt;
}

}  // namespace dynamiccl
