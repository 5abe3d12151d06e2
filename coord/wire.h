// The TCP coordinator's messages: one request and one response per connection, fixed header,
// bounded payload. Shared by the client (in the plugin) and the server (`dynamiccl coord`).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace dynamiccl::coord::wire {

inline constexpr uint32_t kMagic = 0x31434344;  // "DCC1"
inline constexpr size_t kTokenBytes = 64;       // the token, zero-padded
enum class Op : uint8_t { Publish = 1, Read = 2 };
enum class Status : uint8_t { Ok = 0, Lost = 1, NotFound = 2, Refused = 3, BadRequest = 4, Busy = 5 };

struct RequestHeader {
  uint32_t magic = kMagic;
  uint8_t op = 0;
  std::array<char, kTokenBytes> token{};
  uint64_t commId = 0;
  uint64_t boundary = 0;
  uint32_t length = 0;  // payload bytes that follow (Publish only)
};
inline constexpr size_t kRequestHeaderBytes = 4 + 1 + kTokenBytes + 8 + 8 + 4;
// magic and op, then the token: what a server checks, as soon as each arrives, before it reads
// (or waits for) anything else.
inline constexpr size_t kRequestStartBytes = 4 + 1;
inline constexpr size_t kRequestPrefixBytes = kRequestStartBytes + kTokenBytes;
inline constexpr size_t kResponseHeaderBytes = 1 + 4;

std::string encodeRequestHeader(const RequestHeader& h);
std::optional<RequestHeader> decodeRequestHeader(const char* bytes);  // kRequestHeaderBytes of them
// Whether a request's first kRequestStartBytes carry the magic and a known op.
bool validRequestStart(const char* bytes);
// The token of a request's first kRequestPrefixBytes; nullopt when magic or op are wrong.
std::optional<std::array<char, kTokenBytes>> decodeRequestPrefix(const char* bytes);
std::string encodeResponseHeader(Status status, uint32_t length);
std::array<char, kTokenBytes> padToken(const std::string& token);
// Constant-time comparison, so response timing says nothing about the token.
bool tokensEqual(const std::array<char, kTokenBytes>& a, const std::array<char, kTokenBytes>& b);

// Blocking helpers on a socket with SO_RCVTIMEO/SO_SNDTIMEO set: false on error, timeout or EOF.
bool sendAll(int fd, const char* data, size_t n);
bool recvAll(int fd, char* data, size_t n);
void setTimeouts(int fd, int timeout_ms);
// The same against one deadline for the whole exchange, giving up early once cancel is set
// (checked at least every 20 ms): a peer that trickles bytes cannot stretch it.
bool recvAllBy(int fd, char* data, size_t n, std::chrono::steady_clock::time_point deadline,
               const std::atomic<bool>& cancel);
bool sendAllBy(int fd, const char* data, size_t n, std::chrono::steady_clock::time_point deadline,
               const std::atomic<bool>& cancel);

}  // namespace dynamiccl::coord::wire
