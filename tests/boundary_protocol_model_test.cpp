// A model of how ranks settle one epoch boundary through the store (docs/ONLINE.md, "When the leader
// is late, dead or the backend slow"), checked over every interleaving of three ranks' steps with the
// store stalling, losing its data, and ranks cut off from it at every step: no two ranks adopt
// different records for the boundary while the store keeps its data, and the cases the guarantee's
// table leaves open (the store losing its data) are found by the search.
//
// The model's rules, each the code's: the leader publishes its table write-once; a rank that reads a
// record holds it and adopts what it holds (never anything else: a rank that cannot read waits); a
// rank that finds the store lacks the record it holds re-publishes it in the same poll
// (record_cache.cpp); a rank votes "none", in a set of the store, only after the store answered "none"
// over a whole timeout (boundary_wait.cpp), modelled as: two "none" answers in a row with no failure
// between, and every rank that reaches the store having polled since it last came back or lost its data
// (the timeout, 60 s, is many polls of 1 s); a rank claims FROZEN, write-once, only once every rank's
// vote is in the set; the leader never publishes a boundary it voted "none" at. The votes go with the
// store's data: a rank that holds nothing votes again.
#include <gtest/gtest.h>

#include <array>
#include <set>
#include <tuple>

namespace dynamiccl {
namespace {

constexpr int kRanks = 3;  // rank 0 is the leader
enum Rec : uint8_t { None, Table, Frozen };

struct Faults {
  bool stall = false;  // the whole store stops answering and comes back (SIGSTOP, killed, no quorum)
  bool wipe = false;   // the store loses its data (restarted empty)
  bool cutOff = false; // one rank cannot reach the store for a while
  int budget = 2;      // fault events per trace
};

struct State {
  Rec store = None;
  uint8_t votes = 0;  // the ranks whose "none" vote the store holds (a bit each)
  std::array<bool, kRanks> votedNone{};
  bool up = true;
  std::array<bool, kRanks> reach{true, true, true};
  std::array<Rec, kRanks> held{};
  std::array<Rec, kRanks> adopted{};
  std::array<uint8_t, kRanks> noneAnswers{};   // "none" in a row, no failure between (capped at 2)
  std::array<bool, kRanks> polledSinceBack{};  // since the store last came back or lost its data
  uint8_t faultsLeft = 0;
  bool published = false;
  auto key() const {
    return std::tuple(store, votes, votedNone, up, reach, held, adopted, noneAnswers, polledSinceBack, faultsLeft,
                      published);
  }
  bool operator<(const State& o) const { return key() < o.key(); }
};

bool reaches(const State& s, int r) { return s.up && s.reach[r]; }

bool split(const State& s) {
  Rec seen = None;
  for (Rec a : s.adopted) {
    if (a == None) continue;
    if (seen != None && a != seen) return true;
    seen = a;
  }
  return false;
}

// Every state one step leads to.
std::vector<State> next(const State& s, const Faults& f, bool votes = true) {
  std::vector<State> out;
  for (int r = 0; r < kRanks; ++r) {
    if (r == 0 && !s.published && (!votes || !s.votedNone[0]) && reaches(s, 0)) {  // the leader's publish, write-once
      State t = s;
      t.published = true;
      if (t.store == None) t.store = Table;
      out.push_back(t);
    }
    {  // a poll: read, hold, re-publish what the store lost
      State t = s;
      if (!reaches(t, r)) {
        t.noneAnswers[r] = 0;
      } else {
        t.polledSinceBack[r] = true;
        if (t.store != None && t.held[r] == None) t.held[r] = t.store;
        if (t.store == None && t.held[r] != None) t.store = t.held[r];
        if (t.store == None) t.noneAnswers[r] = static_cast<uint8_t>(std::min(2, t.noneAnswers[r] + 1));
      }
      out.push_back(t);
    }
    if (s.held[r] != None && s.adopted[r] == None) {  // adopt what it holds
      State t = s;
      t.adopted[r] = t.held[r];
      out.push_back(t);
    }
    bool everyonePolled = true;
    for (int o = 0; o < kRanks; ++o) everyonePolled &= !reaches(s, o) || s.polledSinceBack[o];
    const uint8_t bit = static_cast<uint8_t>(1u << r), all = (1u << kRanks) - 1;
    if (reaches(s, r) && s.noneAnswers[r] >= 2 && s.held[r] == None && everyonePolled && !(s.votes & bit)) {
      State t = s;  // vote "none"
      t.votes |= bit;
      t.votedNone[r] = true;
      out.push_back(t);
    }
    if (reaches(s, r) && s.held[r] == None && (votes ? s.votes == all : (s.votes & bit) != 0)) {  // claim FROZEN
      State t = s;
      if (t.store == None) t.store = Frozen;
      t.held[r] = t.store;
      out.push_back(t);
    }
  }
  if (s.faultsLeft == 0) return out;
  const auto fault = [&](auto change) {
    State t = s;
    --t.faultsLeft;
    change(t);
    out.push_back(t);
  };
  if (f.stall) fault([](State& t) {
    t.up = !t.up;
    if (t.up) t.polledSinceBack.fill(false);
  });
  if (f.wipe) fault([](State& t) {
    t.store = None;
    t.votes = 0;
    t.polledSinceBack.fill(false);
  });
  if (f.cutOff)
    for (int r = 0; r < kRanks; ++r) fault([r](State& t) { t.reach[r] = !t.reach[r]; });
  return out;
}

// Explores every state reachable from the start; true when some state splits the ranks.
// votes: FROZEN needs every rank's vote (false: the rule before, a rank's own timeout is enough).
bool anyInterleavingSplits(const Faults& f, size_t* explored = nullptr, bool votes = true) {
  State start;
  start.faultsLeft = static_cast<uint8_t>(f.budget);
  std::set<State> seen{start};
  std::vector<State> todo{start};
  bool found = false;
  while (!todo.empty()) {
    const State s = todo.back();
    todo.pop_back();
    if (split(s)) found = true;
    for (const State& t : next(s, f, votes))
      if (seen.insert(t).second) todo.push_back(t);
  }
  if (explored) *explored = seen.size();
  return found;
}

TEST(BoundaryProtocolModel, NoInterleavingSplitsTheRanksWhenTheStoreStallsOrRanksAreCutOff) {
  size_t explored = 0;
  EXPECT_FALSE(anyInterleavingSplits({.stall = true, .wipe = false, .cutOff = true, .budget = 4}, &explored));
  EXPECT_GT(explored, 1000u);  // the search is not vacuous
}

TEST(BoundaryProtocolModel, NoInterleavingSplitsTheRanksWhenTheStoreLosesItsData) {
  // Before the votes, two ways split the ranks: the rank holding the record cut off while the others
  // claimed FROZEN in the emptied store; or a rank claimed FROZEN for a late leader, the store lost
  // it, and the leader's table landed before the claimant's re-publish. FROZEN now needs every rank's
  // vote, and a leader that voted never publishes.
  size_t explored = 0;
  EXPECT_FALSE(anyInterleavingSplits({.stall = false, .wipe = true, .cutOff = true, .budget = 3}, &explored));
  EXPECT_GT(explored, 1000u);
  EXPECT_FALSE(anyInterleavingSplits({.stall = true, .wipe = true, .cutOff = true, .budget = 4}));
}

// Without the votes (a rank claiming FROZEN on its own timeout, as before), the search finds both splits.
TEST(BoundaryProtocolModel, FrozenClaimedWithoutEveryRanksVoteSplitsWhenTheStoreLosesItsData) {
  EXPECT_TRUE(anyInterleavingSplits({.stall = false, .wipe = true, .cutOff = true, .budget = 2}, nullptr, false));
  EXPECT_TRUE(anyInterleavingSplits({.stall = false, .wipe = true, .cutOff = false, .budget = 1}, nullptr, false));
}

// A rank that could not reach the store for a whole bound keeps its version on its own (the code's
// rule again since the waits are bounded, boundary_wait.cpp's keepVersion): the model with that rule
// splits on a stall alone: the stall fell after the leader's publish and before every rank read it, or
// ended before a late leader published (the model has no claim of FROZEN on the store's return, which
// the code adds). Those windows are what bounded waits cost (docs/ONLINE.md, "The guarantee and its
// cost"); this model leaves time out, so it finds the windows, not their length.
TEST(BoundaryProtocolModel, FreezingAloneOnASilentStoreWouldSplitTheRanks) {
  State start;
  start.faultsLeft = 2;
  std::set<State> seen{start};
  std::vector<State> todo{start};
  bool found = false;
  const Faults f{.stall = true, .wipe = false, .cutOff = false, .budget = 2};
  while (!todo.empty() && !found) {
    const State s = todo.back();
    todo.pop_back();
    found = split(s);
    std::vector<State> ts = next(s, f);
    for (int r = 0; r < kRanks; ++r)
      if (!reaches(s, r) && s.held[r] == None && s.adopted[r] == None) {  // gave up waiting: its own version
        State t = s;
        t.adopted[r] = Frozen;
        ts.push_back(t);
      }
    for (const State& t : ts)
      if (seen.insert(t).second) todo.push_back(t);
  }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace dynamiccl
