// The init-time exchange of input records through the coordination store. Every wait is bounded by
// the timeout; the verdict is write-once, so a rank that timed out and one that saw every record
// adopt the same one. Records are sealed under the inputs' key: a verdict this job's ranks did not
// write (planted, an earlier communicator's) is adopted by none of them.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "plugin/online/inputs_check.h"
#include "policy/policy.h"

namespace dynamiccl::plugin {
namespace {

using Clock = std::chrono::steady_clock;
constexpr uint64_t kJudges = 4;  // ranks that read every record; more would only repeat their verdict

// What this rank checks a verdict against: the job's key and the digest of its own record as
// stored (empty before it holds a slot).
struct Judged {
  std::string key;
  std::string mine;
};

// Only the verdict for this rank: sealed under its key and, when it says "agree", having judged this
// rank's own record (so written by this job's ranks, after this rank published). Every rank reads
// the same bytes, and the only verdict that lets a rank tune is one every rank of this job checks
// alike: one "agree" that judged all of them, sealed under the key their common inputs give.
std::optional<InputsVerdict> storedVerdict(coord::RecordStore& store, uint64_t commId, const Judged& me) {
  auto rec = store.read(commId, coord::kInputsVerdictKey);
  if (!rec.ok() || !rec->has_value()) return std::nullopt;
  const auto opened = coord::openSealed(me.key, commId, coord::kInputsVerdictKey, **rec);
  InputsVerdict v = decodeVerdict(opened ? *opened : std::string(coord::sealedPayload(**rec)));
  if (!opened && v.agree)
    return InputsVerdict{false, false, "the verdict \"agree\" in the store (" + store.describe() + ") is not sealed "
                         "under this job's key: planted, another job's, or judging inputs other than this rank's; not "
                         "adopted", {}, {}};
  // Any other verdict keeps NCCL's choices whoever wrote it: its reason is shown, for the odd rank
  // too (whose key, from its own inputs, is not the judge's).
  if (!opened) {
    v.why += " (a verdict not sealed under this job's key: not adopted)";
    return v;
  }
  if (v.agree && (me.mine.empty() || std::find(v.judged.begin(), v.judged.end(), me.mine) == v.judged.end()))
    return InputsVerdict{false, false, "the verdict \"agree\" in the store (" + store.describe() + ") did not judge this "
                         "rank's record: left by an earlier communicator with the same id, or planted; not adopted",
                         {}, {}};
  v.recordDigest = coord::hex(coord::sha256(**rec));
  return v;
}

// Proposes `proposal` and returns the verdict the store kept (ours or an earlier one). A write that
// failed may still have landed (a reply lost after the commit): the stored verdict is polled for until
// `deadline` before this rank gives up alone.
InputsVerdict settle(coord::RecordStore& store, uint64_t commId, InputsVerdict proposal, const Judged& me,
                     Clock::time_point deadline) {
  const std::string sealed = coord::sealRecord(me.key, commId, coord::kInputsVerdictKey, encodeVerdict(proposal));
  const coord::PublishResult p = store.publish(commId, coord::kInputsVerdictKey, sealed);
  if (p == coord::PublishResult::Won) {
    proposal.recordDigest = coord::hex(coord::sha256(sealed));
    return proposal;
  }
  for (auto pause = std::chrono::milliseconds(1);; pause = std::min(pause * 2, std::chrono::milliseconds(100))) {
    if (auto v = storedVerdict(store, commId, me)) return *v;
    if (Clock::now() >= deadline) break;
    std::this_thread::sleep_for(pause);
  }
  return {false, false, "the store (" + store.describe() + ") failed this rank at the verdict; it keeps NCCL's "
                        "choices, other ranks may not: fix the store", {}, {}};
}

// The verdict on the slots' records as stored: their payloads judged, every record's digest named.
// A record not sealed under this key is another job's or differs in its inputs (the key is theirs):
// never "agree".
InputsVerdict judgeSealed(const std::vector<std::string>& stored, uint64_t commId, const std::string& key) {
  std::vector<std::string> payloads;
  size_t unsealed = stored.size();
  for (size_t slot = 0; slot < stored.size(); ++slot) {
    const auto opened = coord::openSealed(key, commId, coord::inputsSlotKey(slot), stored[slot]);
    if (!opened && unsealed == stored.size()) unsealed = slot;
    payloads.push_back(opened ? *opened : std::string(coord::sealedPayload(stored[slot])));
  }
  InputsVerdict v = judgeInputs(payloads);
  if (v.agree && unsealed < stored.size())
    v = {false, false, "the input record in slot " + std::to_string(unsealed) + " is not sealed under this job's key "
                       "(a record not written by this job)", {}, {}};
  for (const std::string& r : stored) v.judged.push_back(coord::hex(coord::sha256(r)));
  return v;
}

uint64_t textHash(const std::string& s) {
  uint64_t h = 0;
  for (unsigned char c : s) h = policy::mix64(h ^ c);
  return h;
}

}  // namespace

InputsVerdict agreeOnInputs(coord::RecordStore& store, uint64_t commId, int nRanks, const std::string& mine,
                            int64_t timeout_ms, const std::string& key) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  Judged me{key, ""};
  // Settled before this rank published: "missing" for a late rank; never an "agree" for this job.
  if (auto v = storedVerdict(store, commId, me)) return *v;
  const uint64_t n = static_cast<uint64_t>(std::max(nRanks, 1));
  // Claim a free slot, starting where this rank hashes to so that n ranks rarely try the same ones
  // (several ranks of one process share the text: a counter tells them apart).
  static std::atomic<uint64_t> claims{0};
  const uint64_t first = policy::mix64(textHash(mine) ^ claims.fetch_add(1)) % n;
  std::vector<std::string> records(n);
  std::vector<bool> have(n, false);
  uint64_t mySlot = n;
  const auto sealedFor = [&](uint64_t slot) { return coord::sealRecord(key, commId, coord::inputsSlotKey(slot), mine); };
  // A verdict that failed to write is looked for a little longer (at most a second past the check's bound).
  const auto settleBy = deadline + std::chrono::milliseconds(std::min<int64_t>(timeout_ms, 1000));
  for (uint64_t i = 0; i < n && mySlot == n && Clock::now() < deadline; ++i) {
    const uint64_t slot = (first + i) % n;
    const std::string sealed = sealedFor(slot);
    const coord::PublishResult p = store.publish(commId, coord::inputsSlotKey(slot), sealed);
    if (p == coord::PublishResult::Failed)  // the others will miss ours and settle on "missing"
      return {false, false, "the store (" + store.describe() + ") refused this rank's inputs; it keeps NCCL's choices",
              {}, {}};
    if (p == coord::PublishResult::Won) {
      records[slot] = sealed, have[slot] = true, mySlot = slot;
      me.mine = coord::hex(coord::sha256(sealed));
    }
  }
  if (mySlot == n)
    return settle(store, commId,
                  {false, false, Clock::now() >= deadline ? "no input slot claimed within " + std::to_string(timeout_ms) + " ms"
                                                          : "more than " + std::to_string(n) + " input records for one "
                                                            "communicator (a stale or foreign record in the store)",
                   {}, {}},
                  me, settleBy);
  // The ranks in the first slots judge (read every record); the others only wait for the verdict,
  // so a communicator of n ranks costs about kJudges x n reads, not n x n.
  const bool judge = mySlot < kJudges;
  uint64_t next = 0;  // a judge resumes at the first slot still missing
  auto readSlots = [&] {
    while (next < n && Clock::now() < deadline) {
      if (!have[next]) {
        auto rec = store.read(commId, coord::inputsSlotKey(next));
        if (!rec.ok() || !rec->has_value()) return;  // not there yet (or a transient error)
        records[next] = **rec;
        have[next] = true;
      }
      ++next;
    }
  };
  // Polls back off to a pause that grows with the communicator: n ranks polling a shared store
  // (etcd, a parallel file system) stay near 20 requests per millisecond in all.
  auto pause = std::chrono::microseconds(50);
  const auto maxPause =
      std::chrono::microseconds(std::clamp<int64_t>(1000 + 50 * static_cast<int64_t>(n), 1000, 250'000));
  for (;;) {
    if (judge) readSlots();
    if (auto v = storedVerdict(store, commId, me)) return *v;  // settled: no need to propose (fewer writes)
    if (next == n) return settle(store, commId, judgeSealed(records, commId, key), me, settleBy);
    if (Clock::now() >= deadline) {
      // Judges know how many arrived; the others never read the slots (no read storm at the timeout).
      const std::string arrived =
          judge ? "only " + std::to_string(std::count(have.begin(), have.end(), true)) + " of " + std::to_string(n)
                : "not all of " + std::to_string(n);
      return settle(store, commId,
                    {false, true, arrived + " ranks published their inputs within " + std::to_string(timeout_ms) +
                                  " ms (DYNAMICCL_INPUTS_TIMEOUT_MS): a rank without this plugin, with "
                                  "DYNAMICCL_INPUTS_CHECK=0, another store, or started late", {}, {}},
                    me, settleBy);
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, maxPause);
  }
}

}  // namespace dynamiccl::plugin
