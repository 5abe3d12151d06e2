#include "plugin/tuner/user_fixed.h"

#include <atomic>
#include <string>

#include "plugin/log.h"

namespace dynamiccl::plugin {
namespace {

std::atomic<unsigned> gLastFixedLogged{0};

}  // namespace

UserFixed userFixed(const Settings& s, const NcclRules& rules) {
  UserFixed u;
  const abi::HostRules& host = rules.hostRules();
  u.limits.uniqueZero = host.uniqueZero;
  u.limits.keepChannels = !s.ncclMinChannels.empty() || !s.ncclMaxChannels.empty();
  if (host.overridesAfterTuner) {
    u.keepAlgo = !s.rcclOverrideAlgo.empty();
    u.limits.keepProto = !s.rcclOverrideProto.empty();
  }
  const unsigned key = 1u | (u.limits.keepChannels ? 2u : 0u) | (u.keepAlgo ? 4u : 0u) | (u.limits.keepProto ? 8u : 0u);
  if (key != 1u && gLastFixedLogged.exchange(key, std::memory_order_relaxed) != key) {
    std::string what;
    auto add = [&what](const std::string& part) { what += (what.empty() ? "" : "; ") + part; };
    if (!s.ncclMinChannels.empty()) add("NCCL_MIN_NCHANNELS=" + s.ncclMinChannels);
    if (!s.ncclMaxChannels.empty()) add("NCCL_MAX_NCHANNELS=" + s.ncclMaxChannels);
    if (u.keepAlgo) add("RCCL_OVERRIDE_ALGO=" + s.rcclOverrideAlgo);
    if (u.limits.keepProto) add("RCCL_OVERRIDE_PROTO=" + s.rcclOverrideProto);
    logInfo("the user fixed %s: the plugin leaves %s to %s", what.c_str(),
            u.keepAlgo ? "every choice" : u.limits.keepChannels && u.limits.keepProto ? "channel counts and protocols"
                                          : u.limits.keepChannels ? "channel counts" : "protocols",
            host.name);
  } else if (key == 1u) {
    gLastFixedLogged.store(1u, std::memory_order_relaxed);
  }
  return u;
}

}  // namespace dynamiccl::plugin
