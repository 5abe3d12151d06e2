#include "learner/channel_arms.h"

#include <algorithm>

namespace dynamiccl::learner {

int findChannelSlot(const KeyState& k, int pair, int nChannels) {
  if (pair < 0 || nChannels <= 0) return -1;
  for (int i = 0; i < kChannelSlots; ++i)
    if (k.channelArms[i].pair == pair && k.channelArms[i].nChannels == nChannels) return kPairSlots + i;
  return -1;
}

int channelSlot(KeyState& k, int pair, int nChannels, bool create) {
  if (const int s = findChannelSlot(k, pair, nChannels); s >= 0 || !create || pair < 0 || nChannels <= 0 ||
                                                         nChannels > kMaxChannels)
    return s;
  for (int i = 0; i < kChannelSlots; ++i)
    if (k.channelArms[i].pair < 0) {
      k.channelArms[i] = ChannelArm{static_cast<int8_t>(pair), static_cast<int16_t>(nChannels), false};
      return kPairSlots + i;
    }
  return -1;
}

int armOfRun(KeyState& k, int pair, int ran, int asked) {
  if (asked == 0) {
    if (ran > 0 && ran <= kMaxChannels) k.ncclChannels[pair] = std::max<int16_t>(k.ncclChannels[pair], static_cast<int16_t>(ran));
    return pair;
  }
  const int askedSlot = asked > 0 ? findChannelSlot(k, pair, asked) : -1;
  if (ran <= 0) return askedSlot >= 0 ? askedSlot : pair;  // the host does not say: what was asked for
  if (askedSlot >= 0 && ran == asked) return askedSlot;
  // A count no channel arm asked for (a rule's own, or one asked elsewhere): the pair as its decision runs it.
  if (askedSlot < 0) {
    const int ranSlot = findChannelSlot(k, pair, ran);
    return ranSlot >= 0 ? ranSlot : pair;
  }
  ChannelArm& trimmed = k.channelArms[askedSlot - kPairSlots];
  trimmed.trimmed = true;
  trimmed.ranAs = static_cast<int16_t>(std::min(ran, kMaxChannels));
  return ran == k.ncclChannels[pair] ? pair : channelSlot(k, pair, ran, true);
}

}  // namespace dynamiccl::learner
