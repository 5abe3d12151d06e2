// The settings a user rarely sets, each one variable of key=value fields (features' KeyValue): read
// whole or refused whole, and shown with every field in force.
#include <cstdio>
#include <string>

#include "plugin/guard.h"
#include "plugin/settings/settings.h"
#include "plugin/settings/settings_table.h"

namespace dynamiccl::plugin::settings_table {
namespace {

// Reads the fields of `text` into a copy of `out`, assigned only when every field was read.
template <typename G, typename Field>
std::optional<std::string> readGroup(const char* text, std::initializer_list<std::string_view> keys, G& out,
                                     Field&& field) {
  auto items = parseKeyValues(text, keys);
  if (!items) return items.error();
  G g = out;
  for (const KeyValue& kv : *items)
    if (std::optional<std::string> why = field(kv, g)) return why;
  out = g;
  return std::nullopt;
}

template <typename T>
std::optional<std::string> integer(const KeyValue& kv, int64_t lo, int64_t hi, T& out) {
  auto x = integerField(kv, lo, hi);
  if (!x) return x.error();
  out = static_cast<T>(*x);
  return std::nullopt;
}

std::optional<std::string> real(const KeyValue& kv, double lo, double hi, double& out) {
  auto x = realField(kv, lo, hi);
  if (!x) return x.error();
  out = *x;
  return std::nullopt;
}

std::optional<std::string> path(const KeyValue& kv, std::string& out) {
  out.assign(kv.value);
  return std::nullopt;
}

// "getCollInfo+stopEvent": entry points, '+'-separated inside a field.
std::optional<std::string> entries(const KeyValue& kv, uint32_t& out) {
  uint32_t mask = 0;
  std::string_view rest = kv.value;
  while (!rest.empty()) {
    const size_t plus = rest.find('+');
    const std::optional<Entry> e = entryFromName(rest.substr(0, plus));
    if (!e) return "throw: expected entry point names such as getCollInfo+stopEvent";
    mask |= 1u << static_cast<unsigned>(*e);
    rest = plus == std::string_view::npos ? std::string_view{} : rest.substr(plus + 1);
  }
  out = mask;
  return std::nullopt;
}

}  // namespace

std::optional<std::string> ProfilerCodec::parse(const char* v, ProfilerPools& out) {
  return readGroup(v, {"records", "queue", "grace_ms"}, out, [](const KeyValue& kv, ProfilerPools& p) {
    if (kv.key == "records") return integer(kv, 1, kMaxProfilerRecords, p.records);
    if (kv.key == "queue") return integer(kv, 2, kMaxProfilerQueue, p.queue);
    int64_t ms = 0;  // milliseconds in the environment
    if (auto why = integer(kv, 0, 3'600'000, ms)) return why;
    p.grace_ns = ms * 1'000'000;
    return std::optional<std::string>{};
  });
}

std::string ProfilerCodec::show(const ProfilerPools& p) {
  return "records=" + std::to_string(p.records) + ",queue=" + std::to_string(p.queue) +
         ",grace_ms=" + std::to_string(p.grace_ns / 1'000'000);
}

std::optional<std::string> BudgetCodec::parse(const char* v, Budget& out) {
  return readGroup(v, {"explore", "measure", "record"}, out, [](const KeyValue& kv, Budget& b) {
    if (kv.key == "explore") return real(kv, 0, 0.5, b.explore);
    return real(kv, 0, 1, kv.key == "measure" ? b.measure : b.record);
  });
}

std::string BudgetCodec::show(const Budget& b) {
  return "explore=" + numberText(b.explore) + ",measure=" + numberText(b.measure) + ",record=" + numberText(b.record);
}

std::optional<std::string> EtcdClientCodec::parse(const char* v, EtcdClient& out) {
  return readGroup(v, {"auth_file", "ca", "cert", "key", "timeout_ms", "ttl_s", "node_reads"}, out,
                   [](const KeyValue& kv, EtcdClient& c) {
                     if (kv.key == "timeout_ms") return integer(kv, 10, 60'000, c.timeout_ms);
                     if (kv.key == "ttl_s") return integer(kv, 60, 31'536'000, c.ttl_s);
                     if (kv.key == "node_reads") return integer(kv, 0, 1, c.nodeReads);
                     return path(kv, kv.key == "auth_file" ? c.authFile
                                     : kv.key == "ca"      ? c.ca
                                     : kv.key == "cert"    ? c.cert
                                                           : c.key);
                   });
}

// Paths are logged where they are used (credentials read from ..., TLS ...), not here.
std::string EtcdClientCodec::show(const EtcdClient& c) {
  std::string out = "timeout_ms=" + std::to_string(c.timeout_ms) + ",ttl_s=" + std::to_string(c.ttl_s) +
                    ",node_reads=" + (c.nodeReads ? "1" : "0");
  for (const auto& [key, file] : {std::pair{"auth_file", &c.authFile}, {"ca", &c.ca}, {"cert", &c.cert}, {"key", &c.key}})
    if (!file->empty()) out += std::string(",") + key + "=(set)";
  return out;
}

std::optional<std::string> TopoCodec::parse(const char* v, TopoOverrides& out) {
  auto o = parseTopoOverrides(v);
  if (!o) return o.error();
  out = *o;
  return std::nullopt;
}

std::string TopoCodec::show(const TopoOverrides& t) { return topoOverridesText(t); }

std::optional<std::string> TestCodec::parse(const char* v, TestHooks& out) {
  return readGroup(v, {"throw", "coord_delay_ms", "coord_publish_fails_ms"}, out, [](const KeyValue& kv, TestHooks& t) {
    if (kv.key == "throw") return entries(kv, t.throwMask);
    if (kv.key == "coord_publish_fails_ms") return integer(kv, 0, 60'000, t.publishFails_ms);
    return integer(kv, 0, 60'000, t.coordDelay_ms);
  });
}

std::string TestCodec::show(const TestHooks& t) {
  std::string out;
  for (unsigned i = 0; i < static_cast<unsigned>(Entry::kCount); ++i)
    if (t.throwMask & (1u << i)) out += (out.empty() ? "throw=" : "+") + std::string(entryName(static_cast<Entry>(i)));
  if (t.coordDelay_ms > 0) out += (out.empty() ? "" : ",") + std::string("coord_delay_ms=") + std::to_string(t.coordDelay_ms);
  if (t.publishFails_ms > 0)
    out += (out.empty() ? "" : ",") + std::string("coord_publish_fails_ms=") + std::to_string(t.publishFails_ms);
  return out;
}

}  // namespace dynamiccl::plugin::settings_table
