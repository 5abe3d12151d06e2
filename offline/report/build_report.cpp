// The report's figures from the stores' rows: observations joined with their decisions, and verdicts.
#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "abi/abi.h"
#include "learner/learner.h"
#include "offline/report/report.h"

namespace dynamiccl::report {
namespace {

constexpr size_t kLastCalls = 5;  // what ran at a key: the majority of its last measured calls

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

Arm armOf(const store::AppliedRow& r) { return {r.algo, r.proto, r.n_channels, r.chunk}; }

using ArmKey = std::pair<std::string, std::string>;
ArmKey keyOf(const Arm& a) { return {a.algo, a.proto}; }

// The plugin left NCCL's choice, or no tuner of this library was asked: what ran is NCCL's own.
bool ncclsOwn(const store::AppliedRow& r) {
  return (r.has_decision && r.source == "default") || (!r.has_decision && r.decision_join == "no_tuner");
}

// Of rows (in order), the arm most of them ran; ties go to the one that ran last. Its channels and
// chunk are those of its last row.
Arm majority(const std::vector<const store::AppliedRow*>& rows) {
  std::map<ArmKey, int> count;
  for (const store::AppliedRow* r : rows) ++count[{r->algo, r->proto}];
  Arm best;
  int most = 0;
  for (auto it = rows.rbegin(); it != rows.rend(); ++it)
    if (const int n = count[{(*it)->algo, (*it)->proto}]; n > most) most = n, best = armOf(**it);
  return best;
}

Expected<learner::MeasurementCost> priceFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return makeError("cannot read " + path);
  std::stringstream text;
  text << in.rdbuf();
  auto cost = learner::MeasurementCost::fromJson(text.str());
  if (!cost) return makeError(path + ": " + cost.error());
  return cost;
}

struct CommGroup {
  size_t store = 0;
  std::vector<store::AppliedRow> rows;
};
using CommId = std::tuple<size_t, int64_t, uint64_t, int>;  // store, run, commHash, rank
using ShapeKey = std::tuple<int, int, std::string, int>;      // ranks, nodes, collective, bucket

// The verdicts of every store: per (hardware, release, shape, key, candidate) the latest.
std::vector<store::VerdictRow> pooled(const std::vector<std::vector<store::VerdictRow>>& perStore) {
  std::map<std::tuple<std::string, std::string, int, int, std::string, uint64_t, std::string, std::string, int, int64_t>,
           store::VerdictRow>
      latest;
  for (const auto& rows : perStore)
    for (const store::VerdictRow& v : rows) {
      if (!v.problem.empty()) continue;  // a row this build never writes: not to be trusted
      auto& slot = latest[{v.fingerprint, v.nccl_version, v.n_ranks, v.n_nodes, v.collective, v.min_bytes, v.algo,
                           v.proto, v.n_channels, v.chunk}];
      if (slot.collective.empty() || v.ts_ns >= slot.ts_ns) slot = v;
    }
  std::vector<store::VerdictRow> out;
  for (auto& [key, v] : latest) out.push_back(v);
  return out;
}

KeyReport keyReport(const std::vector<const store::AppliedRow*>& rows, const applied::KeyShare& reach,
                    const std::vector<store::VerdictRow>& verdicts, const learner::MeasurementCost& price, int nRanks,
                    int nNodes) {
  KeyReport k;
  k.collective = rows.front()->collective;
  k.bucket = SizeBucket::of(rows.front()->bytes);
  k.minBytes = k.maxBytes = rows.front()->bytes;
  k.reach = reach;
  std::vector<const store::AppliedRow*> own;
  std::map<ArmKey, std::pair<double, int64_t>> timeOf;  // per arm: summed time, timed calls
  for (const store::AppliedRow* r : rows) {
    k.minBytes = std::min(k.minBytes, r->bytes);
    k.maxBytes = std::max(k.maxBytes, r->bytes);
    ++k.calls;
    if (ncclsOwn(*r)) own.push_back(r);
    if (std::isfinite(r->time_us)) {
      k.time_us += r->time_us;
      auto& t = timeOf[{r->algo, r->proto}];
      t.first += r->time_us, ++t.second;
      const double s = price.share(r->bytes);
      k.measure_us += r->time_us * s / (1 + s);  // the measured time includes what measuring added
    }
  }
  const auto coll = parseCollective(k.collective);
  const int at = coll ? decidingVerdict(verdicts, *coll, k.minBytes, nRanks, nNodes) : -1;
  if (!own.empty()) {
    k.nccl = majority(own);
    k.ncclFrom = "calls left to NCCL";
  } else if (at >= 0) {
    k.nccl = {verdicts[static_cast<size_t>(at)].base_algo, verdicts[static_cast<size_t>(at)].base_proto};
    k.ncclFrom = "the verdict's baseline";
  }
  // The verdicts at this key, and the one of an arm (latest first).
  std::vector<const store::VerdictRow*> here;
  for (const store::VerdictRow& v : verdicts)
    if (coll && parseCollective(v.collective) == coll && v.min_bytes <= k.minBytes && k.minBytes <= v.max_bytes &&
        v.n_ranks == nRanks && v.n_nodes == nNodes)
      here.push_back(&v);
  auto verdictOf = [&](const Arm& a) {
    const store::VerdictRow* found = nullptr;
    for (const store::VerdictRow* v : here)
      if (v->algo == a.algo && v->proto == a.proto && (!found || v->ts_ns > found->ts_ns)) found = v;
    return found;
  };
  // What ran: the majority of the last measured calls, of arms the job could settle on. The leader measures
  // trials more than settled calls, so an arm verified and not promoted (dropped, still testing) is a
  // trial, never what the key ran; where every last call was one, NCCL's own.
  std::vector<const store::AppliedRow*> settled;
  for (const store::AppliedRow* r : rows) {
    const store::VerdictRow* v = verdictOf(armOf(*r));
    if (!v || v->state == "promoted" || (k.nccl.known() && armOf(*r).sameArm(k.nccl))) settled.push_back(r);
  }
  const std::vector<const store::AppliedRow*> last(
      settled.end() - static_cast<std::ptrdiff_t>(std::min(kLastCalls, settled.size())), settled.end());
  k.ran = !last.empty() ? majority(last) : k.nccl.known() ? k.nccl : majority(rows);
  if (at >= 0) {
    const store::VerdictRow& v = verdicts[static_cast<size_t>(at)];
    k.hasGain = true;
    k.gain.candidate = {v.algo, v.proto, v.n_channels, v.chunk};
    k.gain.baseline = {v.base_algo, v.base_proto};
    k.gain.state = v.state;
    k.gain.gain = v.gain, k.gain.low = v.gain_low, k.gain.high = v.gain_high;
    k.gain.samples = v.n, k.gain.baseSamples = v.base_n;
  }
  auto mean = [&](const ArmKey& a) {
    const auto it = timeOf.find(a);
    return it == timeOf.end() || it->second.second == 0 ? NAN : it->second.first / static_cast<double>(it->second.second);
  };
  // Trials: calls of neither the key's configuration nor NCCL's, each costing its arm's mean excess. An
  // arm without timed calls here is timed by the verdicts' pooled samples (geometric mean).
  double ranMean = mean(keyOf(k.ran));
  for (const store::VerdictRow* v : here)
    if (!std::isfinite(ranMean) && v->base_algo == k.ran.algo && v->base_proto == k.ran.proto && v->base_n > 0)
      ranMean = std::exp(v->base_mean_log_us);
  for (const store::AppliedRow* r : rows) {
    const Arm a = armOf(*r);
    if (a.sameArm(k.ran) || (k.nccl.known() && a.sameArm(k.nccl))) continue;
    ++k.exploreCalls;
    const double m = mean(keyOf(a));
    if (std::isfinite(m) && std::isfinite(ranMean)) k.explore_us += std::max(0.0, m - ranMean);
  }
  // Saved: the measured calls of the configuration that ran, times the gain measured for it.
  const store::VerdictRow* forRan = verdictOf(k.ran);
  if (k.nccl.known() && k.ran.sameArm(k.nccl)) {
    k.saved_us = 0;
  } else if (forRan && std::isfinite(forRan->gain)) {
    for (const store::AppliedRow* r : rows)
      if (armOf(*r).sameArm(k.ran) && std::isfinite(r->time_us)) ++k.savedCalls, k.saved_us += r->time_us * forRan->gain;
  } else {
    k.saved_us = NAN;
  }
  return k;
}

CommReport commReport(const std::string& storePath, const std::vector<store::AppliedRow>& rows,
                      const std::vector<store::VerdictRow>& verdicts, const learner::MeasurementCost& price) {
  CommReport c;
  const store::AppliedRow& first = rows.front();
  c.store = storePath;
  c.run = first.run_id;
  c.commId = first.comm_id;
  c.rank = first.rank;
  c.nRanks = first.n_ranks;
  c.nNodes = first.n_nodes;
  c.ncclVersion = first.nccl_version;
  c.price = price.source();
  const applied::Report reach = applied::reportOf(rows);
  c.reach = reach.total;
  std::map<std::pair<std::string, int>, std::vector<const store::AppliedRow*>> byKey;
  for (const store::AppliedRow& r : rows) byKey[{r.collective, SizeBucket::of(r.bytes)}].push_back(&r);
  for (const auto& [key, keyRows] : byKey) {
    applied::KeyShare share;
    for (const applied::KeyShare& s : reach.keys)
      if (s.collective == key.first && s.bucket == key.second) share = s;
    KeyReport k = keyReport(keyRows, share, verdicts, price, c.nRanks, c.nNodes);
    c.calls += k.calls;
    c.time_us += k.time_us;
    c.exploreCalls += k.exploreCalls;
    c.explore_us += k.explore_us;
    c.measure_us += k.measure_us;
    c.savedCalls += k.savedCalls;
    if (std::isfinite(k.saved_us)) c.saved_us += k.saved_us;
    else ++c.keysWithoutGain;
    c.keys.push_back(std::move(k));
  }
  for (KeyReport& k : c.keys) k.share = c.calls ? static_cast<double>(k.calls) / static_cast<double>(c.calls) : 0;
  return c;
}

std::string ruleText(const policy::Rule& r) {
  std::string s = r.collective ? std::string(collectiveName(*r.collective)) : "any collective";
  s += " " + sizeRangeText(r.minBytes, r.maxBytes) + (r.sizeKey == policy::SizeKey::BytesPerRank ? " per rank" : "");
  if (r.minRanks > 1 || r.maxRanks < INT_MAX)
    s += ", ranks " + std::to_string(r.minRanks) + "-" + (r.maxRanks == INT_MAX ? "" : std::to_string(r.maxRanks));
  if (r.minNodes > 1 || r.maxNodes < INT_MAX)
    s += ", nodes " + std::to_string(r.minNodes) + "-" + (r.maxNodes == INT_MAX ? "" : std::to_string(r.maxNodes));
  return s + ": " + policy::decisionLabel(r.decision);
}

}  // namespace

std::string Arm::label() const {
  if (!known()) return "not recorded";
  return lower(algo) + "/" + lower(proto);
}

Expected<Report> buildReport(const ReportPlan& plan) {
  if (plan.stores.empty()) return makeError("no store to report on");
  std::optional<learner::MeasurementCost> fixedPrice;
  if (!plan.measurementCost.empty()) {
    auto p = priceFile(plan.measurementCost);
    if (!p) return makeError(p.error());
    fixedPrice = *p;
  }
  std::map<CommId, CommGroup> groups;
  std::vector<std::vector<store::VerdictRow>> verdictsPerStore;
  for (size_t i = 0; i < plan.stores.size(); ++i) {
    store::StoreOptions so;
    so.path = plan.stores[i];
    so.read_only = true;  // a mistyped path is an error, not a new empty store
    auto db = store::Store::open(so);
    if (!db) return makeError(plan.stores[i] + ": " + db.error());
    auto s = (*db)->forEachAppliedRow([&](const store::AppliedRow& r) {
      CommGroup& g = groups[{i, r.run_id, r.comm_id, r.rank}];
      g.store = i;
      g.rows.push_back(r);
    });
    if (!s) return makeError(plan.stores[i] + ": " + s.error());
    auto v = (*db)->latestVerdicts();
    if (!v) return makeError(plan.stores[i] + ": " + v.error());
    verdictsPerStore.push_back(std::move(*v));
  }
  const std::vector<store::VerdictRow> verdicts = pooled(verdictsPerStore);
  Report report;
  std::map<ShapeKey, std::set<std::pair<size_t, int64_t>>> runsAt;  // the runs with measured calls at a key
  for (const auto& [id, g] : groups) {
    const int code = abi::parseNcclVersion(g.rows.front().nccl_version).value_or(0);
    const learner::MeasurementCost price = fixedPrice ? *fixedPrice : learner::MeasurementCost::published(code);
    report.comms.push_back(commReport(plan.stores[g.store], g.rows, verdicts, price));
    for (const KeyReport& k : report.comms.back().keys)
      runsAt[{g.rows.front().n_ranks, g.rows.front().n_nodes, k.collective, k.bucket}].insert({g.store, std::get<1>(id)});
  }
  for (CommReport& c : report.comms)
    for (KeyReport& k : c.keys) k.gain.runs = static_cast<int>(runsAt[{c.nRanks, c.nNodes, k.collective, k.bucket}].size());

  // Rules loaded that never applied: none of the measured calls is answered by them.
  for (const std::string& path : plan.profiles) {
    auto profile = policy::loadProfileFile(path);
    if (!profile) return makeError(path + ": " + profile.error());
    report.profiles.push_back(path);
    report.rulesLoaded += profile->rules.size();
    std::set<const policy::Rule*> answered;
    for (const auto& [id, g] : groups) {
      std::set<std::pair<std::string, uint64_t>> calls;
      for (const store::AppliedRow& r : g.rows) calls.insert({r.collective, r.bytes});
      for (const auto& [collective, bytes] : calls)
        if (const auto coll = parseCollective(collective))
          if (const policy::Rule* r = ruleFor(*profile, *coll, bytes, g.rows.front().n_ranks, g.rows.front().n_nodes))
            answered.insert(r);
    }
    for (size_t i = 0; i < profile->rules.size(); ++i) {
      const policy::Rule& r = profile->rules[i];
      if (answered.count(&r)) continue;
      report.neverApplied.push_back({path, r.origin.empty() ? "rules[" + std::to_string(i) + "]" : r.origin, ruleText(r)});
    }
  }

  report.notRecorded.push_back(
      "calls NCCL ran unmeasured: the store holds the measured calls only, so calls, shares and times are of those "
      "(the job's whole collective time, and savings on unmeasured calls, are not recorded)");
  report.notRecorded.push_back(
      "which calls were trials: exploring is told apart as calls of neither the key's final configuration nor NCCL's");
  if (!fixedPrice)
    report.notRecorded.push_back(
        "the price the job paid per measured call (DYNAMICCL_MEASUREMENT_COST): priced at the published figures of the "
        "run's NCCL (--measurement-cost FILE: the job's calibration)");
  if (plan.profiles.empty())
    report.notRecorded.push_back(
        "the profile the job loaded (DYNAMICCL_PROFILE): pass --profile FILE to list its rules that applied to no call");
  return report;
}

}  // namespace dynamiccl::report
