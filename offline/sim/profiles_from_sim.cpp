#include "offline/sim/profiles_from_sim.h"

#include <bit>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

namespace dynamiccl::sim {

std::vector<ProfileRuleSpec> bucketRules(const measurements::ReplayData& data, const BucketChooser& choose) {
  // Size range measured per (shape, collective), in the order the data lists its shapes (not by
  // address, which differs from run to run).
  std::map<const measurements::Shape*, size_t> order;
  for (size_t i = 0; i < data.shapes.size(); ++i) order[data.shapes[i].get()] = i;
  std::map<std::tuple<size_t, int>, std::pair<uint64_t, uint64_t>> ranges;
  for (const measurements::ReplayPoint& p : data.points) {
    auto [it, fresh] = ranges.try_emplace({order.at(p.shape), int(p.coll)}, p.bytes, p.bytes);
    it->second.first = std::min(it->second.first, p.bytes);
    it->second.second = std::max(it->second.second, p.bytes);
  }
  std::vector<ProfileRuleSpec> rules;
  for (const auto& [key, range] : ranges) {
    const auto& [index, coll] = key;
    const measurements::Shape* shape = data.shapes[index].get();
    const int lo = std::bit_width(range.first) - 1, hi = std::bit_width(range.second) - 1;
    for (int k = lo; k <= hi; ++k) {
      const uint64_t b = uint64_t{1} << k;
      const Config c = choose(*shape, Collective(coll), b);
      if (c.algo == Algo::Default) continue;
      const uint64_t top = k == 63 ? UINT64_MAX : (uint64_t{1} << (k + 1)) - 1;
      ProfileRuleSpec r{Collective(coll), b, top, shape->nRanks, shape->nNodes, c.algo, c.proto, c.nChannels};
      if (!rules.empty()) {
        ProfileRuleSpec& last = rules.back();
        if (last.coll == r.coll && last.nRanks == r.nRanks && last.nNodes == r.nNodes && last.algo == r.algo &&
            last.proto == r.proto && last.channels == r.channels && last.maxBytes + 1 == r.minBytes) {
          last.maxBytes = r.maxBytes;
          continue;
        }
      }
      rules.push_back(r);
    }
  }
  return rules;
}

std::string profileJson(const std::string& name, const std::vector<ProfileRuleSpec>& rules) {
  nlohmann::ordered_json j;
  j["format"] = "dynamiccl-profile";
  j["version"] = 1;
  j["name"] = name;
  j["rules"] = nlohmann::ordered_json::array();
  for (const ProfileRuleSpec& r : rules) {
    nlohmann::ordered_json x;
    x["collective"] = std::string(collectiveName(r.coll));
    x["bytes"] = {r.minBytes, r.maxBytes};
    x["nodes"] = {r.nNodes, r.nNodes};
    x["ranks"] = {r.nRanks, r.nRanks};
    x["algo"] = std::string(algoName(r.algo));
    x["proto"] = std::string(protoName(r.proto));
    x["channels"] = r.channels;
    x["chunk"] = 0;
    j["rules"].push_back(x);
  }
  return j.dump(1) + "\n";
}

BucketChooser ncclDefaultChooser() {
  return [](const measurements::Shape& s, Collective coll, uint64_t bytes) {
    Config c = s.nccl->defaultConfig(coll, bytes);
    c.nChannels = 0;
    c.chunkBytes = 0;
    return c;
  };
}

BucketChooser simBestChooser(std::function<SimParams(const measurements::Shape&)> paramsFor) {
  return [paramsFor = std::move(paramsFor)](const measurements::Shape& s, Collective coll, uint64_t bytes) {
    const Simulator sim(s.topology, paramsFor(s));
    const model::CostTable table = s.nccl->costTable(coll, bytes);
    Config best{Algo::Default, Proto::Default, 0, 0};
    double bestT = 1e300;
    for (int a = 0; a < kNumAlgos; ++a)
      for (int p = 0; p < kNumProtos; ++p) {
        if (table[a][p] < 0) continue;  // the plugin must not pick what NCCL marked IGNORE
        const Config c = s.nccl->resolve(Config{Algo(a), Proto(p), 0, 0}, bytes);
        const double t = sim.time_us(coll, bytes, c);
        if (t > 0 && t < bestT) bestT = t, best = Config{Algo(a), Proto(p), 0, 0};
      }
    return best;
  };
}

}  // namespace dynamiccl::sim
