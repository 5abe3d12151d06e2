// Channel arms of a key: which slot holds an (algo, proto) at a channel count, and which arm a timing
// counts for (the count that ran, not the one asked for). Internal to learner.
#pragma once

#include "learner/key_state.h"

namespace dynamiccl::learner {

// The channel slot of `pair` at `nChannels`; -1 none. create: take a free slot for it (-1 when full).
int channelSlot(KeyState& k, int pair, int nChannels, bool create);
int findChannelSlot(const KeyState& k, int pair, int nChannels);

// The arm a timing of `pair` counts for. ran: the channels NCCL reports it ran (0 unknown); asked: the
// count the call's decision asked for (0 none, < 0 unknown). A call that asked for none teaches NCCL's
// own count; a count the learner put on an arm and the host ran otherwise marks that arm trimmed and
// counts for the count that ran (the pair's when that is NCCL's own, else its own arm, taken if need
// be); -1: no arm's evidence (no slot free).
int armOfRun(KeyState& k, int pair, int ran, int asked);

}  // namespace dynamiccl::learner
