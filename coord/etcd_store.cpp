// etcd v3 backend through its JSON gateway: a record is published by a transaction that puts the key
// only if it was never created (first writer wins, as link(2) in a directory), read by a range request.
// Keys live under <prefix>/<commId>/ with a lease, so that old jobs' records expire.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <nlohmann/json.hpp>

#include "coord/http_client.h"
#include "coord/record_store.h"

namespace dynamiccl::coord {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

class EtcdStore : public RecordStore {
 public:
  EtcdStore(std::shared_ptr<HttpClient> http, EtcdOptions o)
      : http_(std::move(http)), o_(std::move(o)), tls_{o_.caFile, o_.certFile, o_.keyFile} {}

  // No exception leaves the store (JSON of odd credentials, allocation): a failure is a value.
  PublishResult publishBy(uint64_t commId, uint64_t boundary, const std::string& bytes, Deadline by) override {
    try {
      return publishOrThrow(commId, boundary, bytes, by);
    } catch (...) {
      return PublishResult::Failed;
    }
  }

  Expected<std::optional<std::string>> read(uint64_t commId, uint64_t boundary) override {
    try {
      return readOrThrow(commId, boundary);
    } catch (...) {
      return makeError("etcd: an unexpected error reading the record");
    }
  }

  Expected<std::vector<std::optional<std::string>>> readMany(uint64_t commId, const std::vector<uint64_t>& boundaries,
                                                             size_t presence, Deadline by = kNoDeadline) override {
    try {
      return readManyOrThrow(commId, boundaries, presence, by);
    } catch (...) {
      return makeError("etcd: an unexpected error reading records");
    }
  }

  Expected<bool> removeIf(uint64_t commId, uint64_t boundary, const std::string& expected, Deadline by) override {
    try {
      return removeIfOrThrow(commId, boundary, expected, by);
    } catch (...) {
      return makeError("etcd: an unexpected error removing a record");
    }
  }

  Expected<SetCount> joinSetBy(uint64_t commId, const std::string& set, const std::string& group,
                               const std::string& member, const std::string& bytes, Deadline by) override {
    try {
      return joinSetOrThrow(commId, set, group, member, bytes, std::max(deadlineFromNow(), by == kNoDeadline ? Clock::time_point{} : by));
    } catch (...) {
      return makeError("etcd: an unexpected error joining a set");
    }
  }

  Expected<RecordsAndCount> readAndCount(uint64_t commId, const std::vector<uint64_t>& boundaries,
                                         const std::string& set, const std::string& group) override {
    try {
      return readAndCountOrThrow(commId, boundaries, set, group);
    } catch (...) {
      return makeError("etcd: an unexpected error reading records and counting a set");
    }
  }

  Expected<std::optional<SetMember>> memberOutside(uint64_t commId, const std::string& set,
                                                   const std::string& group) override {
    try {
      return memberOutsideOrThrow(commId, set, group);
    } catch (...) {
      return makeError("etcd: an unexpected error reading a set");
    }
  }

  std::string describe() const override {
    constexpr size_t kShown = 3;  // a line stays one line with a hundred endpoints
    std::string out = "etcd ";
    for (size_t i = 0; i < o_.endpoints.size() && i < kShown; ++i) out += (i ? "," : "") + o_.endpoints[i];
    if (o_.endpoints.size() > kShown) out += " and " + std::to_string(o_.endpoints.size() - kShown) + " more";
    return out;
  }

 private:
  PublishResult publishOrThrow(uint64_t commId, uint64_t boundary, const std::string& bytes, Deadline by) {
    if (bytes.size() > kMaxRecordBytes) return PublishResult::Failed;
    const Clock::time_point deadline = std::min(deadlineFromNow(), by);  // the lease grant and the transaction share it
    const auto lease = currentLease(deadline);
    if (!lease.ok()) return PublishResult::Failed;
    const std::string key = base64(keyOf(commId, boundary));
    json put = {{"key", key}, {"value", base64(bytes)}};
    if (!lease->empty()) put["lease"] = *lease;
    const json txn = {
        {"compare", json::array({{{"key", key}, {"result", "EQUAL"}, {"target", "CREATE"}, {"create_revision", "0"}}})},
        {"success", json::array({{{"request_put", put}}})}};
    auto reply = call("/v3/kv/txn", txn, deadline);
    if (!reply.ok()) {
      if (reply.error().find("lease") != std::string::npos) {  // revoked or expired: grant anew next time
        std::lock_guard lock(mutex_);
        lease_.clear();
      }
      return PublishResult::Failed;
    }
    const auto it = reply->find("succeeded");  // proto3 JSON leaves a false out
    return it != reply->end() && it->is_boolean() && it->get<bool>() ? PublishResult::Won : PublishResult::Lost;
  }

  Expected<std::optional<std::string>> readOrThrow(uint64_t commId, uint64_t boundary) {
    auto reply = call("/v3/kv/range", json{{"key", base64(keyOf(commId, boundary))}}, deadlineFromNow());
    if (!reply.ok()) return makeError(reply.error());
    return valueOf(*reply);
  }

  // One read-only transaction of a range request per key: one round trip, one consistent revision;
  // keys_only for those asked only whether they exist (etcd leaves the value out: an empty record).
  Expected<std::vector<std::optional<std::string>>> readManyOrThrow(uint64_t commId, const std::vector<uint64_t>& boundaries,
                                                                    size_t presence, Deadline by) {
    json ranges = json::array();
    for (size_t i = 0; i < boundaries.size(); ++i) {
      json range = {{"key", base64(keyOf(commId, boundaries[i]))}};
      if (i < presence) range["keys_only"] = true;
      ranges.push_back({{"request_range", std::move(range)}});
    }
    auto reply = call("/v3/kv/txn", json{{"success", ranges}}, std::min(deadlineFromNow(), by));
    if (!reply.ok()) return makeError(reply.error());
    const auto responses = reply->find("responses");
    if (responses == reply->end() || !responses->is_array() || responses->size() != boundaries.size())
      return makeError("etcd answered a transaction without one response per key");
    return valuesOf(*responses, boundaries.size());
  }

  // The values of a transaction's first `n` range responses, in order (nullopt where no key).
  static Expected<std::vector<std::optional<std::string>>> valuesOf(const json& responses, size_t n) {
    std::vector<std::optional<std::string>> out;
    for (size_t i = 0; i < n; ++i) {
      const auto range = responses[i].find("response_range");
      if (range == responses[i].end() || !range->is_object()) return makeError("etcd answered a transaction without a range");
      auto value = valueOf(*range);
      if (!value.ok()) return makeError(value.error());
      out.push_back(std::move(*value));
    }
    return out;
  }

  // The delete only if the value is still the one read: one transaction, as the publish's compare.
  Expected<bool> removeIfOrThrow(uint64_t commId, uint64_t boundary, const std::string& expected, Deadline by) {
    const std::string key = base64(keyOf(commId, boundary));
    const json txn = {
        {"compare", json::array({{{"key", key}, {"result", "EQUAL"}, {"target", "VALUE"}, {"value", base64(expected)}}})},
        {"success", json::array({{{"request_delete_range", {{"key", key}}}}})}};
    auto reply = call("/v3/kv/txn", txn, std::min(deadlineFromNow(), by));
    if (!reply.ok()) return makeError(reply.error());
    const auto it = reply->find("succeeded");  // proto3 JSON leaves a false out
    return it != reply->end() && it->is_boolean() && it->get<bool>();
  }

  // The put (only if never created) and both counts in one transaction: one round trip, one
  // revision, and count_only answers carry a number, not the members, whatever their number.
  Expected<SetCount> joinSetOrThrow(uint64_t commId, const std::string& set, const std::string& group,
                                    const std::string& member, const std::string& bytes, Clock::time_point deadline) {
    if (bytes.size() > kMaxRecordBytes) return makeError("a set member over the record size limit");
    const auto lease = currentLease(deadline);
    if (!lease.ok()) return makeError(lease.error());
    const std::string setPrefix = setPrefixOf(commId, set), groupPrefix = setPrefix + group + "/";
    const std::string key = base64(groupPrefix + member);
    json put = {{"key", key}, {"value", base64(bytes)}};
    if (!lease->empty()) put["lease"] = *lease;
    const json countAll = countRange(setPrefix), countGroup = countRange(groupPrefix);
    const json txn = {
        {"compare", json::array({{{"key", key}, {"result", "EQUAL"}, {"target", "CREATE"}, {"create_revision", "0"}}})},
        {"success", json::array({{{"request_put", put}}, countAll, countGroup})},
        {"failure", json::array({countAll, countGroup})}};
    auto reply = call("/v3/kv/txn", txn, deadline);
    if (!reply.ok()) return makeError(reply.error());
    const auto responses = reply->find("responses");
    if (responses == reply->end() || !responses->is_array() || responses->size() < 2)
      return makeError("etcd answered a transaction without its counts");
    return countsAtEnd(*responses);
  }

  // The ranges and both counts in one read-only transaction: one round trip, one revision.
  Expected<RecordsAndCount> readAndCountOrThrow(uint64_t commId, const std::vector<uint64_t>& boundaries,
                                                const std::string& set, const std::string& group) {
    const std::string setPrefix = setPrefixOf(commId, set), groupPrefix = setPrefix + group + "/";
    json ops = json::array();
    for (uint64_t b : boundaries) ops.push_back({{"request_range", {{"key", base64(keyOf(commId, b))}}}});
    ops.push_back(countRange(setPrefix));
    ops.push_back(countRange(groupPrefix));
    auto reply = call("/v3/kv/txn", json{{"success", ops}}, deadlineFromNow());
    if (!reply.ok()) return makeError(reply.error());
    const auto responses = reply->find("responses");
    if (responses == reply->end() || !responses->is_array() || responses->size() != boundaries.size() + 2)
      return makeError("etcd answered a transaction without one response per key and its counts");
    auto records = valuesOf(*responses, boundaries.size());
    if (!records.ok()) return makeError(records.error());
    auto count = countsAtEnd(*responses);
    if (!count.ok()) return makeError(count.error());
    return RecordsAndCount{std::move(*records), *count};
  }

  // A count_only range over every key under `prefix`: etcd answers a number, whatever the keys' number.
  static json countRange(const std::string& prefix) {
    return {{"request_range", {{"key", base64(prefix)}, {"range_end", base64(prefixEnd(prefix))}, {"count_only", true}}}};
  }
  // The set's and the group's counts: a transaction's last two responses.
  static Expected<SetCount> countsAtEnd(const json& responses) {
    const size_t n = responses.size();
    auto all = countOf(responses[n - 2]);
    auto inGroup = countOf(responses[n - 1]);
    if (!all || !inGroup) return makeError("etcd answered a count that is not a number");
    return SetCount{*all, *inGroup};
  }

  // The first member before the group and the first after it, in one read-only transaction.
  Expected<std::optional<SetMember>> memberOutsideOrThrow(uint64_t commId, const std::string& set,
                                                          const std::string& group) {
    const std::string setPrefix = setPrefixOf(commId, set), groupPrefix = setPrefix + group + "/";
    const auto range = [](const std::string& from, const std::string& to) {
      return json{{"request_range", {{"key", base64(from)}, {"range_end", base64(to)}, {"limit", 1}}}};
    };
    const json txn = {{"success", json::array({range(setPrefix, groupPrefix),
                                               range(prefixEnd(groupPrefix), prefixEnd(setPrefix))})}};
    auto reply = call("/v3/kv/txn", txn, deadlineFromNow());
    if (!reply.ok()) return makeError(reply.error());
    const auto responses = reply->find("responses");
    if (responses == reply->end() || !responses->is_array()) return makeError("etcd answered a transaction without ranges");
    for (const json& r : *responses) {
      const auto rr = r.find("response_range");
      if (rr == r.end() || !rr->is_object()) continue;
      const auto kvs = rr->find("kvs");
      if (kvs == rr->end() || !kvs->is_array() || kvs->empty() || !kvs->front().is_object()) continue;
      const json& kv = kvs->front();
      const auto k = kv.find("key");
      auto name = k != kv.end() && k->is_string() ? unbase64(k->get<std::string>()) : std::nullopt;
      if (!name || name->rfind(setPrefix, 0) != 0) return makeError("etcd answered a key outside the set");
      const std::string rest = name->substr(setPrefix.size());
      auto value = valueOf(*rr);
      if (!value.ok()) return makeError(value.error());
      return std::optional<SetMember>{SetMember{rest.substr(0, rest.find('/')), value->value_or("")}};
    }
    return std::optional<SetMember>{};
  }

  // A count_only range response's count (proto3 JSON leaves a zero out; int64 comes as a string).
  static std::optional<uint64_t> countOf(const json& response) {
    const auto rr = response.find("response_range");
    if (rr == response.end() || !rr->is_object()) return std::nullopt;
    const auto c = rr->find("count");
    if (c == rr->end()) return uint64_t{0};
    if (c->is_number_unsigned() || c->is_number_integer()) return c->get<uint64_t>();
    if (!c->is_string()) return std::nullopt;
    const std::string text = c->get<std::string>();
    if (text.empty() || text.size() > 19 || text.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
    return std::stoull(text);
  }

  std::string setPrefixOf(uint64_t commId, const std::string& set) const {
    char b[64];
    std::snprintf(b, sizeof b, "/%016" PRIx64 "/s-", commId);
    return o_.prefix + b + set + "/";
  }
  // The first key past every key starting with `prefix` (which ends in '/': the next byte up).
  static std::string prefixEnd(std::string prefix) {
    prefix.back() = static_cast<char>(prefix.back() + 1);
    return prefix;
  }

  // A range response's one value; nullopt when it holds no key.
  static Expected<std::optional<std::string>> valueOf(const json& range) {
    const auto kvs = range.find("kvs");
    if (kvs == range.end() || !kvs->is_array() || kvs->empty()) return std::optional<std::string>{};
    const json& kv = kvs->front();
    // An empty value is left out of the reply: a record of no bytes.
    const auto value = kv.find("value");
    if (value == kv.end()) return std::optional<std::string>{std::string()};
    if (!value->is_string()) return makeError("etcd answered a value that is not a string");
    auto bytes = unbase64(value->get<std::string>());
    if (!bytes) return makeError("etcd answered a value that is not base64");
    return std::optional<std::string>{std::move(*bytes)};
  }

  std::string keyOf(uint64_t commId, uint64_t boundary) const {
    char b[64];
    std::snprintf(b, sizeof b, "/%016" PRIx64 "/b%" PRIu64, commId, boundary);
    return o_.prefix + b;
  }

  // The lease every key of this process is put under, granted again at half its TTL so a long job
  // never puts under an expired one; "" when leases are off (ttl 0).
  Expected<std::string> currentLease(Clock::time_point deadline) {
    if (o_.ttl_s <= 0) return std::string();
    {
      std::lock_guard lock(mutex_);
      if (!lease_.empty() && Clock::now() < leaseRenewAt_) return lease_;
    }
    auto reply = call("/v3/lease/grant", json{{"TTL", o_.ttl_s}}, deadline);
    if (!reply.ok()) return makeError(reply.error());
    const auto id = reply->find("ID");
    if (id == reply->end() || !(id->is_string() || id->is_number_integer())) return makeError("etcd granted no lease");
    std::lock_guard lock(mutex_);
    lease_ = id->is_string() ? id->get<std::string>() : std::to_string(id->get<int64_t>());
    leaseRenewAt_ = Clock::now() + std::chrono::seconds(o_.ttl_s / 2);
    return lease_;
  }

  Clock::time_point deadlineFromNow() const { return Clock::now() + std::chrono::milliseconds(o_.timeout_ms); }

  // What one endpoint may take of the time left: an even share of it among the endpoints not yet
  // tried, but at least a quarter of the timeout (or what is left), so that with many silent
  // endpoints a few get a fair try and the operation still ends by its deadline.
  int sliceMs(Clock::time_point deadline, size_t untried) const {
    const int64_t left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return 0;
    const int64_t share = left / static_cast<int64_t>(std::max<size_t>(untried, 1));
    return static_cast<int>(std::max(share, std::min<int64_t>(left, std::max(o_.timeout_ms / 4, 1))));
  }

  // One request, tried on each endpoint in turn from the last one that answered, all of it by
  // `deadline` (DYNAMICCL_ETCD_CLIENT timeout_ms bounds an operation, not each endpoint's try); with
  // credentials, authenticated first (and again when etcd says the token expired).
  Expected<json> call(const std::string& path, const json& request, Clock::time_point deadline) {
    const std::string body = request.dump();
    std::string lastError = "no endpoint";
    for (size_t attempt = 0; attempt < o_.endpoints.size(); ++attempt) {
      size_t at;
      {
        std::lock_guard lock(mutex_);
        at = (current_ + attempt) % o_.endpoints.size();
      }
      const int slice_ms = sliceMs(deadline, o_.endpoints.size() - attempt);
      if (slice_ms <= 0) {
        lastError += " (and " + std::string(kTimedOut) + ": no time left within " + std::to_string(o_.timeout_ms) +
                     " ms for the other endpoints)";
        break;
      }
      const Clock::time_point sliceEnd = std::min(deadline, Clock::now() + std::chrono::milliseconds(slice_ms));
      for (int authTry = 0; authTry < 2; ++authTry) {
        const int left_ms = static_cast<int>(
            std::chrono::duration_cast<std::chrono::milliseconds>(sliceEnd - Clock::now()).count());
        if (left_ms <= 0) break;
        std::vector<std::string> headers = {"Content-Type: application/json"};
        if (!o_.user.empty()) {
          bool unreachable = false;
          auto token = authToken(at, authTry > 0, unreachable, left_ms);
          if (!token.ok() && unreachable) {
            lastError = token.error();
            break;  // this endpoint is down: the next one may authenticate us
          }
          if (!token.ok()) return makeError(token.error());  // refused credentials: every member refuses
          headers.push_back("Authorization: " + *token);
        }
        const int request_ms = static_cast<int>(
            std::chrono::duration_cast<std::chrono::milliseconds>(sliceEnd - Clock::now()).count());
        if (request_ms <= 0) break;
        auto reply = http_->post(o_.endpoints[at] + path, body, headers, tls_, request_ms);
        if (!reply.ok()) {
          lastError = o_.endpoints[at] + ": " + reply.error();
          break;  // transport: the next endpoint
        }
        json parsed = json::parse(reply->body, nullptr, false);
        if (reply->status == 200 && parsed.is_object()) {
          std::lock_guard lock(mutex_);
          current_ = at;
          return parsed;
        }
        const std::string message = parsed.is_object() && parsed.contains("error") && parsed["error"].is_string()
                                        ? parsed["error"].get<std::string>()
                                        : "HTTP " + std::to_string(reply->status);
        lastError = o_.endpoints[at] + ": " + message;
        if (!o_.user.empty() && authTry == 0 && message.find("token") != std::string::npos) continue;
        if (reply->status >= 500) break;  // this member is unwell: the next endpoint
        return makeError(lastError);      // etcd refused the request itself
      }
    }
    return makeError(lastError);
  }

  // unreachable: set when the endpoint did not answer (as opposed to refusing the credentials).
  Expected<std::string> authToken(size_t endpoint, bool renew, bool& unreachable, int timeout_ms) {
    {
      std::lock_guard lock(mutex_);
      if (!renew && !token_.empty()) return token_;
    }
    auto reply = http_->post(o_.endpoints[endpoint] + "/v3/auth/authenticate",
                             json{{"name", o_.user}, {"password", o_.password}}.dump(),
                             {"Content-Type: application/json"}, tls_, timeout_ms);
    unreachable = !reply.ok() || reply->status >= 500;
    if (!reply.ok()) return makeError(o_.endpoints[endpoint] + ": " + reply.error());
    json parsed = json::parse(reply->body, nullptr, false);
    if (reply->status != 200 || !parsed.is_object() || !parsed.contains("token") || !parsed["token"].is_string())
      return makeError(o_.endpoints[endpoint] + " refused the credentials of user " + o_.user);
    std::lock_guard lock(mutex_);
    token_ = parsed["token"].get<std::string>();
    return token_;
  }

  std::shared_ptr<HttpClient> http_;
  EtcdOptions o_;
  TlsFiles tls_;
  std::mutex mutex_;
  size_t current_ = 0;
  std::string token_;
  std::string lease_;
  Clock::time_point leaseRenewAt_{};
};

}  // namespace

Expected<std::unique_ptr<RecordStore>> openEtcdStore(const EtcdOptions& options) {
  if (options.endpoints.empty()) return makeError("no etcd endpoint");
  if (auto crypto = systemCrypto(); !crypto.ok()) return makeError("etcd backend unavailable: " + crypto.error());
  auto http = HttpClient::load();
  if (!http.ok()) return makeError("etcd backend unavailable: " + http.error());
  return std::unique_ptr<RecordStore>(std::make_unique<EtcdStore>(std::move(http.value()), options));
}

Expected<EtcdCredentials> readEtcdCredentials(const std::string& path) {
  auto fd = openRegularFile(path, O_RDONLY);
  if (!fd) return makeError("etcd credentials file: " + fd.error());
  struct stat st {};
  std::string text;
  const bool statted = fstat(*fd, &st) == 0;
  if (statted && !(st.st_mode & 077) && st.st_size <= 4096) {
    text.resize(static_cast<size_t>(st.st_size));
    const ssize_t n = ::read(*fd, text.data(), text.size());
    text.resize(n > 0 ? static_cast<size_t>(n) : 0);
  }
  close(*fd);
  if (!statted) return makeError("cannot read etcd credentials file " + path);
  if (st.st_mode & 077) return makeError("etcd credentials file " + path + " is readable by others; chmod 600 it");
  if (st.st_size > 4096) return makeError("etcd credentials file " + path + " is too large");
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  const size_t colon = text.find(':');
  if (colon == std::string::npos || colon == 0 || text.find('\n') != std::string::npos)
    return makeError("etcd credentials file " + path + " must hold one line user:password");
  return EtcdCredentials{text.substr(0, colon), text.substr(colon + 1)};
}

}  // namespace dynamiccl::coord
