// The init-time exchange of input records through the coordination store. Every wait is bounded by
// the timeout; the verdict is write-once, so a rank that timed out and one that saw every record
// adopt the same one. Records are sealed under the inputs' key: a verdict this job's ranks did not
// write (planted, an earlier communicator's) is adopted by none of them, and "agree" is written only
// once every rank it judged has confirmed it (so an earlier communicator's input record never counts).
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
                       "(written by another job, or by a rank whose DYNAMICCL_COORD_TOKEN_FILE holds another token)", {}, {}};
  for (const std::string& r : stored) v.judged.push_back(coord::hex(coord::sha256(r)));
  return v;
}

// Beside the slots and the verdict (no communicator has 2^40 ranks).
constexpr uint64_t kProposalKey = coord::kInputsVerdictKey + (uint64_t{1} << 40);
constexpr uint64_t confirmationKey(uint64_t slot) { return kProposalKey + 1 + slot; }
constexpr const char* kConfirmationHeader = "DYNAMICCL-INPUTS-CONFIRMATION-1";

InputsVerdict refused(std::string why) { return {false, false, std::move(why), {}, {}}; }

// The check's second round: "agree" holds only once every rank it judged has confirmed it. The
// slots are write-once but not this communicator's alone: an earlier communicator with the same id
// and inputs may have left records (its ranks died before a verdict), sealed under the same key.
// Judges cannot tell those from this job's, so each judged record's writer confirms the judges'
// proposal, which an earlier communicator's ranks never do: its record holds a slot, one of this
// job's ranks found none and proposes "differ", and no "agree" can race that proposal.
class Confirmation {
 public:
  Confirmation(coord::RecordStore& store, uint64_t commId, uint64_t nRanks, uint64_t mySlot, const Judged& me)
      : store_(store), commId_(commId), n_(nRanks), mySlot_(mySlot), me_(me) {}

  // A judge: write-once; won or lost, the stored proposal is the one confirmed.
  void propose(const InputsVerdict& agreed) {
    store_.publish(commId_, kProposalKey, coord::sealRecord(me_.key, commId_, kProposalKey, encodeVerdict(agreed)));
  }

  // Reads the proposal and confirms it in this rank's slot; "differ" when it is not this job's or did
  // not judge this rank's record.
  std::optional<InputsVerdict> confirmOwn() {
    if (confirmed_) return std::nullopt;
    auto rec = store_.read(commId_, kProposalKey);
    if (!rec.ok() || !rec->has_value()) return std::nullopt;  // not proposed yet
    const auto opened = coord::openSealed(me_.key, commId_, kProposalKey, **rec);
    if (!opened)
      return refused("the proposal \"agree\" in the store (" + store_.describe() + ") is not sealed under this job's key: "
                     "planted, another job's, or judging inputs other than this rank's; not confirmed");
    InputsVerdict proposal = decodeVerdict(*opened);
    if (!proposal.agree || std::find(proposal.judged.begin(), proposal.judged.end(), me_.mine) == proposal.judged.end())
      return refused("the proposal \"agree\" in the store (" + store_.describe() + ") did not judge this rank's record: "
                     "an earlier communicator with the same id left it, or left input records that hold slots");
    const std::string digest = coord::hex(coord::sha256(**rec));
    const uint64_t place = confirmationKey(mySlot_);
    const std::string mine = coord::sealRecord(me_.key, commId_, place, std::string(kConfirmationHeader) + "\n" + digest);
    switch (store_.publish(commId_, place, mine)) {
      case coord::PublishResult::Failed: return std::nullopt;  // tried again at the next poll
      case coord::PublishResult::Lost: {                       // ours from a reply lost after the commit, or another's
        auto stored = store_.read(commId_, place);
        if (!stored.ok() || !stored->has_value()) return std::nullopt;
        if (**stored != mine)
          return refused("a confirmation in this rank's slot " + std::to_string(mySlot_) + " of the store (" +
                         store_.describe() + ") was not written by this rank: an earlier communicator's with the same id");
        break;
      }
      case coord::PublishResult::Won: break;
    }
    proposal_ = std::move(proposal);
    confirmation_ = std::string(kConfirmationHeader) + "\n" + digest;
    confirmed_ = true;
    return std::nullopt;
  }

  // The proposal once every slot confirmed it (a judge); "differ" on a confirmation not of this job's.
  std::optional<InputsVerdict> allConfirmed(Clock::time_point deadline) {
    if (!confirmed_) return std::nullopt;
    while (nextConfirmed_ < n_ && Clock::now() < deadline) {
      const uint64_t place = confirmationKey(nextConfirmed_);
      auto rec = store_.read(commId_, place);
      if (!rec.ok() || !rec->has_value()) return std::nullopt;  // not confirmed yet
      if (coord::openSealed(me_.key, commId_, place, **rec) != confirmation_)
        return refused("the confirmation of slot " + std::to_string(nextConfirmed_) + " in the store (" + store_.describe() +
                       ") does not confirm this job's proposal: an earlier communicator with the same id left its input "
                       "record there");
      ++nextConfirmed_;
    }
    if (nextConfirmed_ < n_) return std::nullopt;
    return proposal_;
  }

  uint64_t confirmedSoFar() const { return nextConfirmed_; }

  InputsVerdict unconfirmed(int64_t timeout_ms) const {
    return {false, true,
            "only " + std::to_string(nextConfirmed_) + " of " + std::to_string(n_) + " ranks confirmed the judged inputs "
            "within " + std::to_string(timeout_ms) + " ms (DYNAMICCL_INPUTS_TIMEOUT_MS): a rank stopped, or an input "
            "record an earlier communicator with the same id left holds a slot",
            {}, {}};
  }

 private:
  coord::RecordStore& store_;
  uint64_t commId_, n_, mySlot_;
  const Judged& me_;
  bool confirmed_ = false;
  InputsVerdict proposal_;
  std::string confirmation_;  // what each slot's confirmation says: this proposal's digest
  uint64_t nextConfirmed_ = 0;
};

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
  // No free slot: a record this communicator's ranks did not write holds one, so no verdict may say
  // "agree" (its judges would judge that record, not this rank's; see Confirmation).
  if (mySlot == n)
    return settle(store, commId,
                  {false, false, Clock::now() >= deadline ? "no input slot claimed within " + std::to_string(timeout_ms) + " ms"
                                                          : "more than " + std::to_string(n) + " input records for one "
                                                            "communicator (one an earlier communicator with the same "
                                                            "id left, or a foreign one, holds a slot)",
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
  Confirmation confirmation(store, commId, n, mySlot, me);
  // Polls back off to a pause that grows with the communicator: n ranks polling a shared store
  // (etcd, a parallel file system) stay near 20 requests per millisecond in all.
  constexpr auto kFirstPause = std::chrono::microseconds(50);
  auto pause = kFirstPause;
  const auto maxPause =
      std::chrono::microseconds(std::clamp<int64_t>(1000 + 50 * static_cast<int64_t>(n), 1000, 250'000));
  bool proposed = false;
  for (;;) {
    // A judge that just proposed, or saw confirmations arrive, polls again soon: the rest are on their
    // way (at most kJudges ranks poll this fast).
    bool judgeMoved = false;
    if (judge) readSlots();
    if (auto v = storedVerdict(store, commId, me)) return *v;  // settled: no need to propose (fewer writes)
    if (judge && next == n && !proposed) {
      const InputsVerdict v = judgeSealed(records, commId, key);
      if (!v.agree) return settle(store, commId, v, me, settleBy);
      confirmation.propose(v);
      proposed = judgeMoved = true;
    }
    if (!judge || proposed) {
      if (auto refused = confirmation.confirmOwn()) return settle(store, commId, *refused, me, settleBy);
    }
    if (judge && proposed) {
      const uint64_t before = confirmation.confirmedSoFar();
      if (auto v = confirmation.allConfirmed(deadline)) return settle(store, commId, *v, me, settleBy);
      judgeMoved |= confirmation.confirmedSoFar() > before;
    }
    if (Clock::now() >= deadline) {
      // Judges know how many arrived; the others never read the slots (no read storm at the timeout).
      if (judge && proposed)
        return settle(store, commId, confirmation.unconfirmed(timeout_ms), me, settleBy);
      const std::string arrived =
          judge ? "only " + std::to_string(std::count(have.begin(), have.end(), true)) + " of " + std::to_string(n)
                : "not all of " + std::to_string(n);
      return settle(store, commId,
                    {false, true, arrived + " ranks published their inputs within " + std::to_string(timeout_ms) +
                                  " ms (DYNAMICCL_INPUTS_TIMEOUT_MS): a rank without this plugin, with "
                                  "DYNAMICCL_INPUTS_CHECK=0, another store, or started late", {}, {}},
                    me, settleBy);
    }
    if (judgeMoved) pause = kFirstPause;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, maxPause);
  }
}

}  // namespace dynamiccl::plugin
