// Whether a communicator's ranks may tune: the input check run at tuner init, with its one log line.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <string>

#include "plugin/log.h"
#include "plugin/inputs/inputs_check.h"
#include "plugin/online_backend.h"
#include "plugin/online_contract.h"

namespace dynamiccl::plugin {
namespace {

std::atomic<bool> gSaidUnchecked{false};
std::atomic<bool> gSaidAgreed{false};
std::atomic<bool> gSaidToken{false};
// Once a communicator missed a rank's inputs, later ones likely miss the same rank (no plugin
// there): they wait this long, not the full timeout, so hundreds of communicators do not each wait
// it out. Safe: whichever agreement is written first holds for every rank.
std::atomic<bool> gSawMissing{false};
constexpr int64_t kAfterMissing_ms = 1000;
// Once the store failed to take this process's inputs, later communicators on the same backend
// within this window do not try again: each would pay the store's own timeouts to learn what the
// first one did, and without this rank's inputs no rank agrees anyway (the others settle on "missing").
constexpr auto kStoreFailedMemo = std::chrono::seconds(30);
std::mutex gStoreFailedMutex;
std::string gStoreFailedWhere;  // the backend, as it describes itself
std::chrono::steady_clock::time_point gStoreFailedAt{};

bool storeFailedRecently(const std::string& where) {
  std::lock_guard lock(gStoreFailedMutex);
  return where == gStoreFailedWhere && std::chrono::steady_clock::now() - gStoreFailedAt < kStoreFailedMemo;
}
void rememberStoreFailed(const std::string& where) {
  std::lock_guard lock(gStoreFailedMutex);
  gStoreFailedWhere = where;
  gStoreFailedAt = std::chrono::steady_clock::now();
}

// Who the record is from, with a random nonce: no two records of any job are alike, so an agreement
// names exactly the ranks it judged (not compared between ranks).
std::string whoAmI() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  return std::string("on host ") + (host[0] ? host : "?") + " (pid " + std::to_string(getpid()) + ", record " +
         randomHex(4) + ")";
}

// The job's token and what the inputs record says of it ("none", "read", or "unusable"): a token
// file that cannot be used gives a random secret no other rank holds, so this rank's records open
// for none and every rank of its communicators keeps NCCL's choices, said once per process.
struct JobToken {
  std::string secret;
  const char* state;
};
JobToken jobToken(const Settings& s) {
  if (s.coordTokenFile.empty()) return {"", "none"};
  auto token = coord::readJobToken(s.coordTokenFile);
  if (token.ok()) return {std::move(token.value()), "read"};
  if (firstTime(gSaidToken))
    logWarn("%s; this rank seals its coordination records under a key no other rank holds: every communicator the "
            "input check covers keeps NCCL's own choices on all its ranks",
            token.error().c_str());
  return {"unusable token " + randomHex(8), "unusable"};
}

}  // namespace

std::string coordToken(const Settings& s) { return jobToken(s).secret; }

bool inputsCheckedThroughStore(const Settings& s, const CommShape& shape) {
  return s.inputsCheck && shape.nRanks > 1 && shape.commId != 0 && hasOnlineBackend(s, shape);
}

InputsOutcome ranksAgreeOnInputs(const Settings& s, const std::string& profileDigest, const CommShape& shape,
                                 const NcclRules& rules, const std::atomic<bool>* stop) {
  if (!inputsCheckedThroughStore(s, shape)) {
    // Nothing to check, or nothing to check through: a multi-node communicator without a backend says so.
    if (s.inputsCheck && shape.nRanks > 1 && shape.commId != 0 && firstTime(gSaidUnchecked))
      logWarn("communicators across %d nodes: whether every rank has the same profile, settings and hardware is "
              "unchecked (no coordination backend: set DYNAMICCL_ETCD or DYNAMICCL_COORD_DIR); a rank that "
              "differs may choose differently and hang the job",
              shape.nNodes);
    return {true, ""};
  }
  const auto started = std::chrono::steady_clock::now();
  const unsigned long long id = shape.commId;
  auto store = openOnlineBackend(s, shape);
  if (!store.ok()) {  // the other ranks miss this rank's record and settle on NCCL's choices too
    logWarn("communicator %016llx: cannot check that every rank has the same inputs (%s); NCCL's own choices stand "
            "on this rank, and on every other rank once it misses this one's inputs",
            id, store.error().c_str());
    return {};
  }
  if (storeFailedRecently((*store)->describe())) {
    logWarn("communicator %016llx: inputs not known to be alike on all %d ranks (%s failed this process's inputs "
            "less than %lld s ago: not asked again); NCCL's own choices stand on every rank and online updates are off",
            id, shape.nRanks, (*store)->describe().c_str(),
            static_cast<long long>(std::chrono::duration_cast<std::chrono::seconds>(kStoreFailedMemo).count()));
    return {};
  }
  const JobToken token = jobToken(s);
  std::vector<InputField> fields = decisionInputs(s, profileDigest, shape, rules);
  fields.push_back({"DYNAMICCL_COORD_TOKEN_FILE", token.state});  // the token itself only in the key
  const std::string mine = inputsRecord(fields, whoAmI());
  const int64_t sized_ms = inputsCheckTimeout_ms(s, shape.nRanks);
  const int64_t timeout_ms = gSawMissing.load(std::memory_order_relaxed) ? std::min(sized_ms, kAfterMissing_ms) : sized_ms;
  const std::string key = inputsKey(shape.commId, mine, token.secret);
  const InputsAgreement v = agreeOnInputs(**store, shape.commId, shape.nRanks, mine, timeout_ms, key,
                                        membersKey(shape.commId, token.secret), stop);
  if (v.missing) gSawMissing.store(true, std::memory_order_relaxed);
  if (v.storeFailed) rememberStoreFailed((*store)->describe());
  if (!v.agree) {
    logWarn("communicator %016llx: inputs not known to be alike on all %d ranks (%s); NCCL's own choices stand on "
            "every rank and online updates are off",
            id, shape.nRanks, v.why.c_str());
    return {};
  }
  if (firstTime(gSaidAgreed))
    logInfo("communicator %016llx: its %d ranks have the same profile, settings and hardware (checked through %s in "
            "%.1f ms, off NCCL's init path; NCCL's choices until call %llu, on every rank)",
            id, shape.nRanks, (*store)->describe().c_str(),
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count(),
            static_cast<unsigned long long>(kCheckedFirstCall));
  return {true, epochKeyAfter(key, v)};
}

}  // namespace dynamiccl::plugin
