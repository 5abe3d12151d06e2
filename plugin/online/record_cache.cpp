// The records a rank holds: read ahead of its own position as they appear, adopted from here without
// the store, and re-published write-once into a store that lost them (restarted empty), so that a
// rank epochs behind adopts what the others adopted rather than claiming FROZEN in an empty store.
#include <mutex>
#include <vector>

#include "plugin/log.h"
#include "plugin/online/epoch_agent.h"

namespace dynamiccl::plugin {
namespace {

constexpr size_t kReadPerPoll = 2;  // boundaries past the newest held, asked with it in one request
constexpr size_t kHeldKept = 2 * kReadAheadEpochs + kReadPerPoll;  // then the oldest go first

// Publishes every held record, oldest first (what a straggler needs next); false while the store fails.
bool republish(OnlineComm& c) {
  std::map<uint64_t, std::string> held;
  {
    std::lock_guard lock(c.mutex);
    held = c.held;
  }
  for (const auto& [boundary, bytes] : held) {
    const coord::PublishResult r = c.store->publish(c.commId, boundary, bytes);
    if (r == coord::PublishResult::Failed) return false;
    if (r == coord::PublishResult::Won) continue;
    auto there = c.store->read(c.commId, boundary);  // ours, or one a rank claimed in the emptied store
    if (!there.ok()) return false;
    if (there->has_value() && **there != bytes && c.otherRecords.fetch_add(1, std::memory_order_relaxed) == 0)
      logWarn("online: %s holds another record than this rank adopted at boundary %llu of communicator %016llx "
              "(written after it lost its records): ranks may differ from there",
              c.store->describe().c_str(), static_cast<unsigned long long>(boundary),
              static_cast<unsigned long long>(c.commId));
  }
  return true;
}

}  // namespace

std::optional<std::string> heldRecord(OnlineComm& c, uint64_t boundary) {
  std::lock_guard lock(c.mutex);
  const auto it = c.held.find(boundary);
  if (it == c.held.end()) return std::nullopt;
  return it->second;
}

void holdRecord(OnlineComm& c, uint64_t boundary, const std::string& bytes) {
  std::lock_guard lock(c.mutex);
  c.held.emplace(boundary, bytes);  // write-once: what was read first stays
  while (c.held.size() > kHeldKept) c.held.erase(c.held.begin());
}

std::optional<std::string> followAhead(OnlineComm& c, uint64_t calls, uint64_t upcoming, bool staged) {
  if (staged) {
    readAhead(c, calls, 0);
    return std::nullopt;
  }
  if (auto rec = heldRecord(c, upcoming)) return rec;
  readAhead(c, calls, calls + c.epochCalls / 2 >= upcoming ? upcoming : 0);  // at the near pace once it is near
  return heldRecord(c, upcoming);
}

void readAhead(OnlineComm& c, uint64_t calls, uint64_t need) {
  const auto now = std::chrono::steady_clock::now();
  if (now < (need || c.catchingUp ? c.lastReadAhead + kNearBoundaryPoll : c.lastReadAhead + kReadAheadPoll)) return;
  c.lastReadAhead = now;
  const uint64_t E = c.epochCalls;
  uint64_t newest = 0;
  bool newestFrozen = false;
  {
    std::lock_guard lock(c.mutex);
    if (!c.held.empty()) {
      newest = c.held.rbegin()->first;
      newestFrozen = c.held.rbegin()->second == coord::kFrozenRecord;
    }
  }
  std::vector<uint64_t> ask;
  if (newest) ask.push_back(newest);             // still there? A store that lost it lost its data
  if (need && need < newest) ask.push_back(need);  // not held: missed while the store was away
  const size_t ahead = ask.size() + kReadPerPoll;
  if (!newestFrozen)  // no version follows a frozen record
    for (uint64_t b = newest + E; b <= calls + kReadAheadEpochs * E && ask.size() < ahead; b += E) ask.push_back(b);
  if (ask.empty()) return;
  auto recs = c.store->pollMany(c.commId, ask, newest ? 1 : 0);  // the newest: only whether it is still there
  if (!recs.ok()) return;
  size_t found = 0;
  for (size_t i = newest ? 1 : 0; i < ask.size(); ++i)
    if ((*recs)[i]) holdRecord(c, ask[i], *(*recs)[i]), ++found;
  // Every boundary asked was there: more may follow (a rank epochs behind catching up on what the others
  // adopted), so the next poll comes at the near pace, until one finds a boundary not there yet. A rank
  // k epochs behind holds what they adopted within k/2 near polls, not k/2 seconds.
  c.catchingUp = found == ask.size() - (newest ? 1 : 0) && found > 0;
  if (newest && !(*recs)[0] && !c.republishing) {
    c.republishing = true;
    logWarn("online: %s lost records of communicator %016llx (boundary %llu, read here before, is gone: restarted "
            "empty?); re-publishing those this rank holds, write-once, so every rank adopts what the others did",
            c.store->describe().c_str(), static_cast<unsigned long long>(c.commId),
            static_cast<unsigned long long>(newest));
  }
  if (c.republishing) c.republishing = !republish(c);
}

}  // namespace dynamiccl::plugin
