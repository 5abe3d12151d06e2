// SHA-256, HMAC-SHA-256 and base64 from OpenSSL's libcrypto, loaded with dlopen the first time one is
// needed (as libcurl is): every machine NCCL runs on carries it, and the plugin links no crypto
// library and implements none. Coordination seals its records with it; learned weights are base64.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "features/expected.h"

namespace dynamiccl {

using Digest = std::array<uint8_t, 32>;

// The functions of one libcrypto. load() names why a library is unusable in one line.
class Crypto {
 public:
  static Expected<std::shared_ptr<const Crypto>> load(const char* library);
  virtual ~Crypto() = default;
  virtual Digest sha256(std::string_view data) const = 0;
  virtual Digest hmacSha256(std::string_view key, std::string_view message) const = 0;
  virtual std::string base64(std::string_view bytes) const = 0;
  virtual std::optional<std::string> unbase64(std::string_view text) const = 0;  // nullopt: not base64
};

// The process's libcrypto (libcrypto.so.3, else .so.1.1), loaded once; the error says why none could be.
Expected<std::shared_ptr<const Crypto>> systemCrypto();

// Through systemCrypto(). Without it the digests are all zeros and the texts empty or nullopt: no
// record opens then (coord's openSealed refuses every one), and the backends refuse to open before that.
Digest sha256(std::string_view data);
Digest hmacSha256(std::string_view key, std::string_view message);
std::string base64(std::string_view bytes);
std::optional<std::string> unbase64(std::string_view text);

}  // namespace dynamiccl
