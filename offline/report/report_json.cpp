// The report as JSON (`dynamiccl report --json`) and the CSVs its plots are drawn from.
#include <nlohmann/json.hpp>

#include <filesystem>

#include "offline/files/files.h"
#include "offline/report/report.h"

namespace dynamiccl::report {
namespace {

nlohmann::json number(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); }

nlohmann::json armJson(const Arm& a) {
  if (!a.known()) return nullptr;
  return {{"algo", a.algo}, {"proto", a.proto}, {"channels", a.channels}, {"chunk", a.chunk}, {"label", a.label()}};
}

nlohmann::json reachJson(const applied::KeyShare& s) {
  nlohmann::json causes = nlohmann::json::object(), unattributed = nlohmann::json::object();
  for (const auto& [c, n] : s.causes) causes[std::string(applied::causeText(c))] = n;
  for (const auto& [c, n] : s.unattributed) unattributed[std::string(applied::causeText(c))] = n;
  return {{"calls", s.calls},          {"chosen", s.chosen},     {"honoured", s.honoured},
          {"kept_nccl", s.keptNccl},   {"not_honoured", causes}, {"not_reaching_tuner", unattributed},
          {"honoured_share", number(s.share())}};
}

std::string sizeOf(const KeyReport& k) {
  return k.minBytes == k.maxBytes ? sizeText(k.minBytes) : sizeRangeText(k.minBytes, k.maxBytes);
}

}  // namespace

std::string reportJson(const Report& r) {
  nlohmann::json comms = nlohmann::json::array();
  for (const CommReport& c : r.comms) {
    nlohmann::json keys = nlohmann::json::array();
    for (const KeyReport& k : c.keys) {
      nlohmann::json gain = nullptr;
      if (k.hasGain)
        gain = {{"candidate", armJson(k.gain.candidate)}, {"baseline", armJson(k.gain.baseline)},
                {"state", k.gain.state},                   {"gain", number(k.gain.gain)},
                {"low", number(k.gain.low)},               {"high", number(k.gain.high)},
                {"samples", k.gain.samples},               {"base_samples", k.gain.baseSamples}};
      keys.push_back({{"collective", k.collective},
                      {"bucket", k.bucket},
                      {"min_bytes", k.minBytes},
                      {"max_bytes", k.maxBytes},
                      {"size", sizeOf(k)},
                      {"nccl", armJson(k.nccl)},
                      {"nccl_from", k.ncclFrom.empty() ? nlohmann::json() : nlohmann::json(k.ncclFrom)},
                      {"ran", armJson(k.ran)},
                      {"calls", k.calls},
                      {"share", k.share},
                      {"time_us", k.time_us},
                      {"verdict", gain},
                      {"runs", k.gain.runs},
                      {"saved_calls", k.savedCalls},
                      {"saved_us", number(k.saved_us)},
                      {"explore_calls", k.exploreCalls},
                      {"explore_us", k.explore_us},
                      {"measure_us", k.measure_us},
                      {"net_us", k.net_us()},
                      {"reach", reachJson(k.reach)}});
    }
    comms.push_back({{"store", c.store},
                     {"run", c.run},
                     {"comm_id", c.commId},
                     {"rank", c.rank},
                     {"n_ranks", c.nRanks},
                     {"n_nodes", c.nNodes},
                     {"nccl_version", c.ncclVersion},
                     {"measurement_price", c.price},
                     {"calls", c.calls},
                     {"time_us", c.time_us},
                     {"saved_calls", c.savedCalls},
                     {"saved_us", c.saved_us},
                     {"keys_without_gain", c.keysWithoutGain},
                     {"explore_calls", c.exploreCalls},
                     {"explore_us", c.explore_us},
                     {"measure_us", c.measure_us},
                     {"net_us", c.net_us()},
                     {"reach", reachJson(c.reach)},
                     {"keys", keys}});
  }
  nlohmann::json never = nlohmann::json::array();
  for (const UnappliedRule& u : r.neverApplied) never.push_back({{"profile", u.profile}, {"origin", u.origin}, {"rule", u.text}});
  nlohmann::json doc = {{"communicators", comms},
                        {"profiles", r.profiles},
                        {"rules_loaded", r.rulesLoaded},
                        {"rules_never_applied", r.profiles.empty() ? nlohmann::json() : never},
                        {"not_recorded", r.notRecorded}};
  return doc.dump(2) + "\n";
}

Status writePlotData(const Report& r, const std::string& outDir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(outDir, ec);
  if (ec) return makeError("cannot create " + outDir + ": " + ec.message());
  // One row per communicator and key; the decision map in plot_demo.py's layout, a row per communicator.
  std::string saved = "communicator,collective,bytes,size,saved_us,explore_us,measure_us,net_us\n";
  std::string map = "collective,bytes,config\n";
  std::string points = "profile,collective,bytes,config\n";
  for (size_t i = 0; i < r.comms.size(); ++i) {
    const CommReport& c = r.comms[i];
    const std::string comm = "c" + std::to_string(i + 1) + " " + std::to_string(c.nRanks) + "r";
    for (const KeyReport& k : c.keys) {
      const std::string row = comm + " " + k.collective;
      saved += comm + "," + k.collective + "," + std::to_string(k.minBytes) + "," + sizeOf(k) + "," +
               (std::isfinite(k.saved_us) ? std::to_string(k.saved_us) : "") + "," + std::to_string(k.explore_us) + "," +
               std::to_string(k.measure_us) + "," + std::to_string(k.net_us()) + "\n";
      map += row + "," + std::to_string(k.minBytes) + "," + k.ran.label() + "\n";
      if (k.nccl.known()) points += "NCCL default," + row + "," + std::to_string(k.minBytes) + "," + k.nccl.label() + "\n";
      points += "ran," + row + "," + std::to_string(k.minBytes) + "," + k.ran.label() + "\n";
    }
  }
  const fs::path out(outDir);
  if (auto s = files::writeFile((out / "time_saved.csv").string(), saved); !s) return s;
  if (auto s = files::writeFile((out / "decision_map.csv").string(), map); !s) return s;
  return files::writeFile((out / "report_points.csv").string(), points);
}

}  // namespace dynamiccl::report
