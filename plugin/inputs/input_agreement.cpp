// The init-time exchange of input records through the coordination store, in requests per rank that
// do not grow with the communicator: ranks join a set and count it (etcd's count_only, a directory's
// link count) rather than read each other's records, and every record is of a fixed size. Every wait
// is bounded by the timeout; the agreement is write-once, so a rank that timed out and one that saw
// every record adopt the same one. "agree" is written only once every rank confirmed the one proposal
// (a fresh random name), so input records an earlier communicator with the same id left never count,
// and no agreement this job's ranks did not confirm (planted, an earlier communicator's) is adopted.
#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <thread>
#include <type_traits>
#include <utility>
#include <variant>

#include "plugin/log.h"
#include "plugin/inputs/inputs_check.h"

namespace dynamiccl::plugin {
namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kInputsSet = "inputs";
constexpr const char* kProposalHeader = "DYNAMICCL-INPUTS-PROPOSAL-2";
// Beside the agreement (no boundary reaches it): the proposal every rank confirms.
constexpr uint64_t kProposalKey = coord::kInputsAgreementKey + (uint64_t{1} << 40);
// A rank's first poll comes after the time its communicator's ranks take to reach the store (one store
// serves their joins in turn: here 0.3 ms a rank at 16 ranks), then the pause doubles, to 1 s; and no
// poll comes before the set it waits on (the ranks' records, then their confirmations) should be whole
// at the pace its members arrived (SetPace), which each poll counts in the same request. So a rank's
// polls grow at most with the log of its wait over the first pause: 1,024 threads on 2 cores arrive
// over 0.2-2 s (1-2 ms a rank), and pauses that stopped doubling at the first (256 ms) cost an early
// rank 4-5 polls there.
constexpr auto kPausePerRank = std::chrono::microseconds(250);
constexpr auto kMinPause = std::chrono::milliseconds(1);
constexpr auto kLongestPause = std::chrono::seconds(1);
constexpr double kLateMargin = 1.2;  // past the expected time: a poll a little late costs less than one early
// A pace seen over a short time (the first two members) says little about the rest: a rank waits at most
// twice that time before it counts again. Unbounded, one early rank of 256 slept a second on the
// pace of two members and every other rank waited for its confirmation.
constexpr double kFurthestAhead = 2;
// A count nobody's join saw whole (a lost reply, a stale listing) is rescued by the polls, which count
// the set too: a rank whose polls have seen it whole with no proposal for this long, or twice the
// longest request it made if longer (a loaded store: the proposer's write is slow too), proposes, each
// rank after a share of four times as long again of its own (a herd of proposals is a herd of writes: re-joins
// every second from half the check's time, each a write transaction, kept a loaded etcd from ever
// finishing 1,024 ranks' joins).
constexpr auto kWholeWithoutProposal = std::chrono::seconds(1);
// A re-join, at most this often, only where the set's count fell below what this rank saw (the store
// lost members: restarted empty), so that its record is there again.
constexpr auto kRejoinEvery = std::chrono::seconds(1);
// A store that failed this rank's first read is asked again only this long from the check's start.
constexpr auto kRetryUnanswered = std::chrono::seconds(1);

// The communicators this process checks at once: their ranks' joins share the store, so each
// arrives that many times slower (8 communicators of a job's process groups, checked together).
class ChecksInFlight {
 public:
  explicit ChecksInFlight(uint64_t commId) : commId_(commId) {
    std::lock_guard lock(mutex_);
    ++counts_[commId_];
  }
  ~ChecksInFlight() {
    std::lock_guard lock(mutex_);
    if (--counts_[commId_] == 0) counts_.erase(commId_);
  }
  static uint64_t communicators() {
    std::lock_guard lock(mutex_);
    return std::max<uint64_t>(counts_.size(), 1);
  }

 private:
  uint64_t commId_;
  static inline std::mutex mutex_;
  static inline std::map<uint64_t, int> counts_;
};

// How long until a set a rank waits on should be whole, from the counts it saw: at the pace its members
// arrived as the store timed them (a directory's birth and modification times), else as this rank's own
// counts saw the set grow, else at the pace the set before it filled or kPausePerRank a rank times the
// checks in flight, whichever is slower; none once whole.
class SetPace {
 public:
  explicit SetPace(uint64_t n) : n_(n) {}

  // The count this rank's own join or confirmation returned: the set's first sight. How long until whole.
  Clock::duration start(const coord::SetCount& count, Clock::time_point at, uint64_t perRankScale) {
    first_ = count.all;
    firstAt_ = at;
    return untilWhole(count, at, perRankScale);
  }
  Clock::duration untilWhole(const coord::SetCount& count, Clock::time_point at, uint64_t perRankScale) {
    if (count.all >= n_) return {};
    double seen_us = 1e9;  // how long the pace was seen over: no wait extrapolates past twice that
    if (count.filling_ns >= 0 && count.all >= 2) {
      seen_us = static_cast<double>(count.filling_ns) / 1e3;
      perRank_us_ = seen_us / static_cast<double>(count.all - 1);
    } else if (count.all > first_ && at > firstAt_) {
      seen_us = std::chrono::duration<double, std::micro>(at - firstAt_).count();
      perRank_us_ = seen_us / static_cast<double>(count.all - first_);
    } else {
      perRank_us_ = std::max(perRank_us_, static_cast<double>(kPausePerRank.count()) * static_cast<double>(perRankScale));
    }
    const double us = std::min(kLateMargin * static_cast<double>(n_ - count.all) * perRank_us_, kFurthestAhead * seen_us);
    return std::chrono::microseconds(static_cast<int64_t>(std::min(us, 1e9)));
  }

 private:
  const uint64_t n_;
  uint64_t first_ = 0;
  Clock::time_point firstAt_{};
  double perRank_us_ = 0;  // the pace last seen: the next set's, until it shows its own
};

struct Me {
  std::string key;        // the inputs' key: seals this rank's proposal and agreement, opens those of ranks like it
  std::string group;      // the inputs' name in the sets
  std::string member;     // this rank's name in the sets: random
  std::string confirmed;  // the proposal this rank confirmed, or tried to (a lost reply may have counted it); "" before
  bool counted = false;   // its confirmation is known to be in the proposal's set
};

InputsAgreement refused(std::string why) { return {false, false, std::move(why), {}, {}}; }

constexpr const char* kFinalized = "the communicator was finalized before its input check ended";
bool stopped(const std::atomic<bool>* stop) { return stop && stop->load(std::memory_order_relaxed); }

// The agreement for this rank, from the stored bytes: sealed under its key and, when it says "agree",
// naming the proposal this rank confirmed (so written by this job's ranks, after all of them confirmed).
InputsAgreement agreementFor(const std::string& stored, const Me& me, uint64_t commId, const std::string& where) {
  const auto opened = coord::openSealed(me.key, commId, coord::kInputsAgreementKey, stored);
  InputsAgreement v = decodeAgreement(opened ? *opened : std::string(coord::sealedPayload(stored)));
  if (!opened && v.agree)
    return refused("the agreement \"agree\" in the store (" + where + ") is not sealed under this job's key: planted, "
                   "another job's, or judging inputs other than this rank's; not adopted");
  // Any other agreement keeps NCCL's choices whoever wrote it: its reason is shown, for the odd rank
  // too (whose key, from its own inputs, is not the writer's).
  if (!opened) {
    v.why += " (a agreement not sealed under this job's key: not adopted)";
    return v;
  }
  if (v.agree && (me.confirmed.empty() || v.proposal != me.confirmed))
    return refused("the agreement \"agree\" in the store (" + where + ") names a proposal this rank did not confirm: "
                   "left by an earlier communicator with the same id, or planted; not adopted");
  v.recordDigest = coord::hex(sha256(stored));
  return v;
}

std::optional<InputsAgreement> storedAgreement(coord::RecordStore& store, uint64_t commId, const Me& me) {
  auto rec = store.read(commId, coord::kInputsAgreementKey);
  if (!rec.ok() || !rec->has_value()) return std::nullopt;
  return agreementFor(**rec, me, commId, store.describe());
}

// Proposes `proposal` and returns the agreement the store kept (ours or an earlier one). A write that
// failed may still have landed (a reply lost after the commit): the stored agreement is polled for until
// `deadline`. Then a rank that never confirmed gives up alone, safely: "agree" needs every rank's
// confirmation, so no rank tunes. One that confirmed may be counted in an "agree" the others adopt: it
// cannot know what they run, so it waits for the store, as long as it takes, saying so.
InputsAgreement settle(coord::RecordStore& store, uint64_t commId, InputsAgreement proposal, const Me& me,
                     Clock::time_point deadline, const std::atomic<bool>* stop) {
  const std::string sealed = coord::sealRecord(me.key, commId, coord::kInputsAgreementKey, encodeAgreement(proposal));
  const auto start = Clock::now();
  auto nextSay = deadline + std::chrono::seconds(1);
  coord::PublishResult published = coord::PublishResult::Failed;
  for (auto pause = std::chrono::milliseconds(1);; pause = std::min(pause * 2, std::chrono::milliseconds(100))) {
    // A write that failed is tried again: a store back from an outage may hold no agreement yet.
    if (published == coord::PublishResult::Failed) published = store.publish(commId, coord::kInputsAgreementKey, sealed);
    if (published == coord::PublishResult::Won) {
      proposal.recordDigest = coord::hex(sha256(sealed));
      return proposal;
    }
    if (auto v = storedAgreement(store, commId, me)) return *v;
    const auto now = Clock::now();
    if (now >= deadline && me.confirmed.empty()) break;
    if (stopped(stop)) return refused(kFinalized);
    if (now >= nextSay) {
      logWarn("communicator %016llx: still waiting after %lld s for the input check's agreement in %s, which does not "
              "answer: this rank confirmed the agreed inputs, so the others may tune, and it must do what they do",
              static_cast<unsigned long long>(commId),
              static_cast<long long>(std::chrono::duration_cast<std::chrono::seconds>(now - start).count()),
              store.describe().c_str());
      nextSay = now + std::min(2 * (now - start), std::chrono::duration_cast<Clock::duration>(std::chrono::minutes(1)));
    }
    std::this_thread::sleep_for(pause);
  }
  return refused("the store (" + store.describe() + ") failed this rank at the agreement; it keeps NCCL's choices, "
                 "as the others do (no \"agree\" is written without this rank's confirmation)");
}

std::string moreRecordsThanRanks(uint64_t n) {
  return "more than " + std::to_string(n) + " input records for one communicator (one an earlier communicator with "
         "the same id left, or a foreign one, is counted with this job's)";
}

// What the rank whose record made the count nRanks proposes: "agree" when its group holds them all,
// else the agreement "differ", saying how the records differ from one record of the other ranks'. The
// records are sealed under the job's members key: one that does not open is another job's or another token's.
std::variant<std::string, InputsAgreement> proposalOrVerdict(coord::RecordStore& store, uint64_t commId, uint64_t n,
                                                           const coord::SetCount& count, const std::string& mine,
                                                           const Me& me, const std::string& membersKey) {
  if (count.all > n) return refused(moreRecordsThanRanks(n));
  if (count.group >= n) return std::string(kProposalHeader) + "\n" + randomHex(4) + "\n" + me.group + "\n";
  // A record that does not open is compared all the same: a token file that could not be read shows
  // as its field.
  auto other = store.memberOutside(commId, kInputsSet, me.group);
  std::optional<std::string> record;
  bool opens = true;
  if (other.ok() && other->has_value()) {
    const auto opened = coord::openSealed(membersKey, commId, coord::kInputsRecordKey, (*other)->bytes);
    opens = opened.has_value();
    record = opened ? *opened : std::string(coord::sealedPayload((*other)->bytes));
  }
  return refused(whyInputsDiffer(mine, count.group, record, opens, n));
}

struct Proposal {
  std::string name, group;
};

// The stored proposal as this rank reads it: nullopt when not this job's, sealed under another key
// (its writer's inputs differ from this rank's) or unreadable.
std::optional<Proposal> openProposal(const std::string& stored, const Me& me, uint64_t commId) {
  const auto opened = coord::openSealed(me.key, commId, kProposalKey, stored);
  if (!opened) return std::nullopt;
  const std::string& t = *opened;
  const size_t a = t.find('\n'), b = a == std::string::npos ? a : t.find('\n', a + 1);
  if (b == std::string::npos || t.substr(0, a) != kProposalHeader) return std::nullopt;
  return Proposal{t.substr(a + 1, b - a - 1), t.substr(b + 1, t.find('\n', b + 1) - b - 1)};
}

// One rank's run of the protocol: join, poll for the proposal and confirm it, poll for the agreement.
class InputCheck {
 public:
  InputCheck(coord::RecordStore& store, uint64_t commId, int nRanks, const std::string& mine, int64_t timeout_ms,
            const std::string& key, const std::string& membersKey, const std::atomic<bool>* stop)
      : store_(store), commId_(commId), n_(static_cast<uint64_t>(std::max(nRanks, 1))), mine_(mine),
        membersKey_(membersKey), timeout_ms_(timeout_ms), stop_(stop), start_(Clock::now()),
        deadline_(start_ + std::chrono::milliseconds(timeout_ms)),
        // An agreement that failed to write is looked for a little longer (at most a second past the check's bound).
        settleBy_(deadline_ + std::chrono::milliseconds(std::min<int64_t>(timeout_ms, 1000))),
        me_{key, inputsGroup(key), randomHex(4), "", false},
        sealedMine_(coord::sealRecord(membersKey, commId, coord::kInputsRecordKey, mine)) {}

  InputsAgreement run() {
    if (stopped(stop_)) return refused(kFinalized);
    const ChecksInFlight inFlight(commId_);
    if (auto v = join()) return *v;
    wait_ = pace_.start(*joined_, Clock::now(), checksInFlight());
    pause_ = firstPause();
    for (;;) {
      std::this_thread::sleep_for(untilNextPoll());
      pause_ = std::min<Clock::duration>(2 * pause_, kLongestPause);  // the next one's, unless the poll starts them again
      if (stopped(stop_)) return refused(kFinalized);
      if (auto v = poll()) return *v;
      if (Clock::now() >= deadline_) return timedOut();
    }
  }

 private:
  // Joins the set of input records (write-once under this rank's name, so a failed join is tried
  // again): until the deadline where the store answered this rank's first read (a request timed out on
  // a loaded store: 71 of 1,024 threads' joins on one 2-core machine); where it did not, only within a
  // second of the check's start (a store that is down, refuses or answers garbage is not waited on:
  // without this rank's inputs no rank can agree, so it concludes then, and later communicators of the
  // process do not ask again for a while: input_gate.cpp). The others miss ours and settle on
  // "missing". An agreement settled before this rank joined is "missing" for it, never an "agree" (it
  // confirmed nothing).
  std::optional<InputsAgreement> join() {
    const auto settled = store_.read(commId_, coord::kInputsAgreementKey);
    if (settled.ok() && settled->has_value()) return agreementFor(**settled, me_, commId_, store_.describe());
    // A read that ran out of time is a store too slow for its bound (a thousand ranks at once), not one that
    // refused: it is waited on to the check's deadline, as one that answered is.
    const bool answered = settled.ok() || coord::timedOut(settled.error());
    const auto retryUntil = answered ? deadline_ : std::min(deadline_, start_ + kRetryUnanswered);
    // A slow store is not a failed one: the join may take all of that (1,024 ranks' joins on one 2-core
    // machine took 5 s; at etcd's 2 s bound each try timed out, its work lost to the store, and the retries
    // never drained: 0 of 1,024 agreed in 60 s). Retries after a fast failure pause, spread over the ranks.
    joined_ = timed([&] { return store_.joinSetBy(commId_, kInputsSet, me_.group, me_.member, sealedMine_, retryUntil); });
    const uint64_t spread = std::hash<std::string>{}(me_.member);
    for (auto pause = std::chrono::milliseconds(10); !joined_.ok(); pause *= 2) {
      const auto wait = pause / 2 + pause * static_cast<int64_t>(spread % 1024) / 1024;
      if (Clock::now() + wait >= retryUntil) break;
      std::this_thread::sleep_for(wait);
      joined_ = timed([&] { return store_.joinSetBy(commId_, kInputsSet, me_.group, me_.member, sealedMine_, retryUntil); });
    }
    if (!joined_.ok()) {
      InputsAgreement v = refused("the store (" + store_.describe() + ") refused this rank's inputs (" +
                                  joined_.error() + "); it keeps NCCL's choices");
      v.storeFailed = true;
      return v;
    }
    return afterJoin(*joined_);
  }

  // Each count is seen by one rank's join: the one that makes it nRanks proposes. A later join (more
  // records than ranks: an earlier communicator's with the same id) never confirms, so no "agree" follows.
  std::optional<InputsAgreement> afterJoin(const coord::SetCount& count) {
    if (count.all < n_) return std::nullopt;
    auto p = proposalOrVerdict(store_, commId_, n_, count, mine_, me_, membersKey_);
    if (auto* v = std::get_if<InputsAgreement>(&p)) return settle(store_, commId_, *v, me_, settleBy_, stop_);
    proposed_ = coord::sealRecord(me_.key, commId_, kProposalKey, std::get<std::string>(p));
    store_.publish(commId_, kProposalKey, proposed_);
    return std::nullopt;  // won or lost, the stored proposal is the one confirmed
  }

  // The communicators this process checks at once: their ranks' joins share the store, so each rank to
  // come takes that many times longer.
  static uint64_t checksInFlight() { return std::min<uint64_t>(ChecksInFlight::communicators(), 1024); }

  // The pause, or the time until the set should be whole if later: at most kLongestPause, and never past
  // the deadline or the moment this rank would propose for a count seen whole.
  Clock::duration untilNextPoll() const {
    Clock::time_point at = Clock::now() + std::min<Clock::duration>(std::max(pause_, wait_), kLongestPause);
    at = std::min(at, me_.counted || wholeSince_ == Clock::time_point{} ? deadline_ : std::min(deadline_, proposeAt()));
    return std::max<Clock::duration>(at - Clock::now(), {});
  }
  // When this rank proposes for a count its polls saw whole with no proposal: after kWholeWithoutProposal
  // and a share of four times it of its own, so that one or a few ranks write, not all.
  Clock::time_point proposeAt() const {
    const uint64_t spread = std::hash<std::string>{}(me_.member) % 1024;
    const Clock::duration grace = std::max<Clock::duration>(kWholeWithoutProposal, 2 * longestRequest_);
    return wholeSince_ + grace + 4 * grace * static_cast<int64_t>(spread) / 1024;
  }
  // A request of this rank's, timed: the store's pace as this rank sees it.
  template <typename F>
  std::invoke_result_t<F> timed(F&& request) {
    const auto t0 = Clock::now();
    auto r = request();
    longestRequest_ = std::max(longestRequest_, Clock::now() - t0);
    return r;
  }

  // A rank's first poll comes after the time its communicator's ranks take to reach the store (one store
  // serves their joins in turn), times the communicators this process checks at once.
  std::chrono::microseconds firstPause() const {
    const uint64_t arriving = std::min<uint64_t>(n_, 1u << 20) * checksInFlight();
    return std::clamp<std::chrono::microseconds>(kPausePerRank * static_cast<int64_t>(arriving), kMinPause, kLongestPause);
  }

  // One poll: one request reading the agreement (and, before this rank's confirmation counted, the
  // proposal) and counting the set it waits on; a confirmation when the proposal is there. While
  // neither is: the rank that proposed writes its proposal again (its write failed); a rank whose polls
  // see the count whole proposes from proposeAt() (a join whose reply was lost made it whole unseen); one
  // that sees the count fall (the store lost members) joins again.
  std::optional<InputsAgreement> poll() {
    const bool confirmed = me_.counted;
    const std::vector<uint64_t> keys = confirmed ? std::vector<uint64_t>{coord::kInputsAgreementKey}
                                                 : std::vector<uint64_t>{coord::kInputsAgreementKey, kProposalKey};
    auto got = timed([&] { return store_.readAndCount(commId_, keys, confirmed ? "confirm-" + me_.confirmed : kInputsSet, me_.group); });
    wait_ = {};
    if (!got.ok()) return std::nullopt;
    const auto& recs = got->records;
    if (recs.size() != keys.size()) return std::nullopt;
    if (recs[0]) return agreementFor(*recs[0], me_, commId_, store_.describe());
    if (!confirmed && recs[1]) return confirm(*recs[1]);
    wait_ = pace_.untilWhole(got->count, Clock::now(), checksInFlight());
    if (confirmed) return std::nullopt;
    if (!proposed_.empty()) {  // ours did not land (a failed write): again, write-once keeps the first
      store_.publish(commId_, kProposalKey, proposed_);
      return std::nullopt;
    }
    const auto now = Clock::now();
    if (got->count.all >= n_) {
      if (wholeSince_ == Clock::time_point{}) wholeSince_ = now;
      if (now >= proposeAt()) return afterJoin(got->count);
      return std::nullopt;
    }
    wholeSince_ = {};
    const uint64_t seen = joined_.ok() ? joined_->all : 0;
    if (got->count.all < seen && now >= rejoinAt_) {
      rejoinAt_ = now + kRejoinEvery;
      auto again = store_.joinSet(commId_, kInputsSet, me_.group, me_.member, sealedMine_);
      if (again.ok()) {
        joined_ = again;
        return afterJoin(*again);
      }
    }
    return std::nullopt;
  }

  std::optional<InputsAgreement> confirm(const std::string& stored) {
    if (me_.confirmed.empty()) {
      const auto proposal = openProposal(stored, me_, commId_);
      if (!proposal || proposal->group != me_.group)
        return settle(store_, commId_,
                      refused("the proposal \"agree\" in the store (" + store_.describe() + ") is not of this "
                              "rank's inputs: another rank's differ, or an earlier communicator with the same id left it"),
                      me_, settleBy_, stop_);
      me_.confirmed = proposal->name;  // before the join: a join whose reply is lost may still count
    }
    auto c = store_.joinSetBy(commId_, "confirm-" + me_.confirmed, me_.group, me_.member, "", deadline_);
    if (!c.ok()) return std::nullopt;
    me_.counted = true;
    confirmations_ = *c;
    if (c->all >= n_) return settle(store_, commId_, {true, false, "", me_.confirmed, {}}, me_, settleBy_, stop_);
    wait_ = pace_.start(*c, Clock::now(), checksInFlight());  // the confirmations' set, from here
    return std::nullopt;
  }

  InputsAgreement timedOut() {
    const std::string within = " within " + std::to_string(timeout_ms_) + " ms (DYNAMICCL_INPUTS_TIMEOUT_MS): ";
    if (!me_.confirmed.empty())
      return settle(store_, commId_,
                    {false, true,
                     "only " + std::to_string(confirmations_.all) + " of " + std::to_string(n_) + " ranks confirmed "
                     "the agreed inputs" + within + "a rank stopped, or an input record an earlier communicator "
                     "with the same id left is counted",
                     {}, {}},
                    me_, settleBy_, stop_);
    if (auto now = store_.joinSet(commId_, kInputsSet, me_.group, me_.member, sealedMine_); now.ok()) joined_ = now;
    return settle(store_, commId_,
                  {false, true,
                   "only " + std::to_string(joined_.ok() ? joined_->all : 0) + " of " + std::to_string(n_) +
                       " ranks published their inputs" + within + "a rank without this plugin, with "
                       "DYNAMICCL_INPUTS_CHECK=0, another store, or started late",
                   {}, {}},
                  me_, settleBy_, stop_);
  }

  coord::RecordStore& store_;
  const uint64_t commId_, n_;
  const std::string& mine_;
  const std::string& membersKey_;
  const int64_t timeout_ms_;
  const std::atomic<bool>* stop_;
  const Clock::time_point start_, deadline_, settleBy_;
  Me me_;
  const std::string sealedMine_;
  Expected<coord::SetCount> joined_ = makeError("not joined");
  std::string proposed_;  // the proposal this rank published, when its join made the count nRanks
  Clock::time_point rejoinAt_{};    // no re-join before (the count fell)
  Clock::time_point wholeSince_{};  // since when this rank's polls see the count whole with no proposal
  Clock::duration longestRequest_{};
  coord::SetCount confirmations_;
  SetPace pace_{n_};
  Clock::duration pause_{};  // doubling from the first pause to 1 s
  Clock::duration wait_{};  // until the set this rank waits on should be whole: no poll before
};

}  // namespace

InputsAgreement agreeOnInputs(coord::RecordStore& store, uint64_t commId, int nRanks, const std::string& mine,
                            int64_t timeout_ms, const std::string& key, const std::string& membersKey,
                            const std::atomic<bool>* stop) {
  return InputCheck(store, commId, nRanks, mine, timeout_ms, key, membersKey, stop).run();
}

}  // namespace dynamiccl::plugin
