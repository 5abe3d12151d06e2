// HTTP POSTs through libcurl, loaded with dlopen only when a backend needs it: the plugin has no hard
// dependency on libcurl and runs where it is absent. Internal to coord.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "features/features.h"

namespace dynamiccl::coord {

struct TlsFiles {
  std::string caFile, certFile, keyFile;  // empty: the system's CAs / no client certificate
};

struct HttpReply {
  long status = 0;
  std::string body;
};

class HttpClient {
 public:
  // libcurl.so.4 loaded and initialised once per process; an error names why it is unusable.
  static Expected<std::shared_ptr<HttpClient>> load(const char* library = "libcurl.so.4");
  virtual ~HttpClient() = default;
  // One POST with a hard total bound (connect included) and a low-speed cut-off, so an endpoint that
  // accepts and then trickles bytes cannot hold the caller. Thread-safe.
  virtual Expected<HttpReply> post(const std::string& url, const std::string& body,
                                   const std::vector<std::string>& headers, const TlsFiles& tls,
                                   int timeout_ms) = 0;
};

}  // namespace dynamiccl::coord
