// The settings in force as one line, for the log and for tests of which default stood: the printer
// walks the same list of variables as the reader (settings_table.h).
#include <cstdio>
#include <sstream>

#include "plugin/guard.h"
#include "plugin/settings/settings.h"
#include "plugin/settings/settings_table.h"

namespace dynamiccl::plugin {
namespace {

constexpr const char* kUnset = "(unset)";

class Dump {
 public:
  template <typename T>
  void integer(const char* name, const T& v, long long, long long) {
    put(name, v);
  }
  void flag(const char* name, bool v) { put(name, int(v)); }
  // Paths are logged where they are used (profile loaded from ..., store unavailable ...), not here.
  void path(const char* name, const std::string& v, const char*) { put(name, v.empty() ? kUnset : "(set)"); }
  template <typename Codec, typename T>
  void coded(const char* name, const T& v) {
    const std::string text = Codec::show(v);
    put(name, text.empty() ? std::string(kUnset) : text);
  }
  void nccl(const char*, const std::string&) {}  // NCCL logs its own variables
  std::string str() const { return out_.str(); }

 private:
  template <typename T>
  void put(const char* name, const T& v) {
    out_ << (first_ ? "" : " ") << name << '=' << v;
    first_ = false;
  }
  std::ostringstream out_;
  bool first_ = true;
};

}  // namespace

namespace settings_table {

std::string TrustCodec::show(policy::Trust t) { return t == policy::Trust::All ? "all" : "verified"; }

std::string NcclVersionCodec::show(int code) {
  if (code <= 0) return "";
  return std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." + std::to_string(code % 100);
}

std::string HostCodec::show(const std::optional<abi::Host>& host) {
  return host ? (*host == abi::Host::Rccl ? "rccl" : "nccl") : "";
}

std::string InputsTimeoutCodec::show(int64_t ms) { return ms > 0 ? std::to_string(ms) : "auto"; }

std::string DbMaxCodec::show(int64_t bytes) {
  return bytes > 0 ? numberText(static_cast<double>(bytes) / (1024 * 1024)) : "";
}

std::string OnlineCodec::show(OnlineSwitch s) {
  return s == OnlineSwitch::On ? "1" : s == OnlineSwitch::Off ? "0" : "";
}

std::string VerifyCodec::show(VerifySwitch s) {
  return s == VerifySwitch::On ? "1" : s == VerifySwitch::Off ? "0" : "auto";
}

std::string EtcdCodec::show(const std::vector<std::string>& endpoints) {
  std::string out;
  for (const std::string& e : endpoints) out += (out.empty() ? "" : ",") + e;
  return out;
}

std::string WorkloadCodec::show(const WorkloadContext& w) {
  if (w.empty()) return "";
  std::ostringstream o;
  if (w.intensity) o << "intensity=" << *w.intensity;
  if (w.batch) o << (w.intensity ? "," : "") << "batch=" << *w.batch;
  return o.str();
}

}  // namespace settings_table

std::string settingsDump(const Settings& s) {
  Dump d;
  settings_table::eachVariable(d, s);
  return d.str();
}

}  // namespace dynamiccl::plugin
