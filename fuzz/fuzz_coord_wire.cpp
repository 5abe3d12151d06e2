// libFuzzer target: the TCP coordinator's request header, as the server decodes it from the network.
// Whatever it accepts must re-encode to the same bytes (no field is silently altered or dropped).
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "coord/wire.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace wire = dynamiccl::coord::wire;
  if (size < wire::kRequestHeaderBytes) return 0;  // the server reads exactly this many bytes first
  const char* bytes = reinterpret_cast<const char*>(data);
  auto header = wire::decodeRequestHeader(bytes);
  if (!header) return 0;
  const std::string again = wire::encodeRequestHeader(*header);
  if (again.size() != wire::kRequestHeaderBytes || std::memcmp(again.data(), bytes, again.size()) != 0) std::abort();
  (void)wire::tokensEqual(header->token, wire::padToken(std::string(bytes + size - wire::kRequestHeaderBytes / 2,
                                                                    wire::kRequestHeaderBytes / 2)));
  return 0;
}
