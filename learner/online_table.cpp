#include "learner/online_table.h"

#include <cstring>

namespace dynamiccl::learner {
namespace {

constexpr uint32_t kMagic = 0x544f4344;  // "DCOT"
constexpr uint32_t kFormat = 4;  // 4: a key's own share measured; 3: the share of calls measured; 2: entries may explore with no exploit

class Writer {
 public:
  template <typename T>
  void put(T v) {
    char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    out.append(b, sizeof(T));
  }
  void candidates(const Candidates& c) {
    put<uint8_t>(c.count);
    for (int i = 0; i < c.count; ++i) {
      const Decision& d = c.decisions[i];
      put<int8_t>(static_cast<int8_t>(d.algo));
      put<int8_t>(static_cast<int8_t>(d.proto));
      put<int16_t>(static_cast<int16_t>(d.nChannels));
      put<uint64_t>(d.chunkBytes);
    }
  }
  std::string out;
};

class Reader {
 public:
  explicit Reader(const std::string& s) : s_(s) {}
  template <typename T>
  bool get(T& v) {
    if (s_.size() - pos_ < sizeof(T)) return false;
    std::memcpy(&v, s_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool candidates(Candidates& c) {
    uint8_t n = 0;
    if (!get(n) || n > Candidates::kMax) return false;
    c.count = n;
    for (int i = 0; i < n; ++i) {
      int8_t a, p;
      int16_t ch;
      uint64_t chunk;
      if (!get(a) || !get(p) || !get(ch) || !get(chunk)) return false;
      if (a < -1 || a >= kNumAlgos || p < -1 || p >= kNumProtos || ch < 0 || ch > kMaxChannels ||
          chunk > kMaxChunkBytes)
        return false;
      c.decisions[i] = Decision{static_cast<Algo>(a), static_cast<Proto>(p), ch, chunk};
    }
    return true;
  }
  bool done() const { return pos_ == s_.size(); }

 private:
  const std::string& s_;
  size_t pos_ = 0;
};

}  // namespace

std::string OnlineTable::serialize() const {
  Writer w;
  w.put(kMagic);
  w.put(kFormat);
  w.put(version_);
  w.put(measureThreshold_);
  uint32_t n = 0;
  for (const OnlineEntry& e : entries_) n += e.exploit.count || e.nArms ? 1 : 0;
  w.put(n);
  for (uint32_t key = 0; key < kOnlineKeys; ++key) {
    const OnlineEntry& e = entries_[key];
    if (!e.exploit.count && !e.nArms) continue;
    w.put<uint16_t>(static_cast<uint16_t>(key));
    w.candidates(e.exploit);
    w.put<uint8_t>(e.nArms);
    w.put<uint8_t>(e.ownMeasureThreshold ? 1 : 0);
    w.put(e.measureThreshold);
    for (int i = 0; i < e.nArms; ++i) {
      w.put(e.cumulativeThreshold[i]);
      w.candidates(e.arms[i]);
    }
  }
  return std::move(w.out);
}

Expected<std::unique_ptr<OnlineTable>> OnlineTable::deserialize(const std::string& bytes) {
  if (bytes.size() > kOnlineMaxRecordBytes) return makeError("online table record too large");
  Reader r(bytes);
  uint32_t magic = 0, format = 0, n = 0;
  auto t = std::make_unique<OnlineTable>();
  if (!r.get(magic) || magic != kMagic || !r.get(format) || format != kFormat || !r.get(t->version_) || !r.get(t->measureThreshold_) || !r.get(n) ||
      n > kOnlineKeys)
    return makeError("online table record: bad header");
  for (uint32_t i = 0; i < n; ++i) {
    uint16_t key = 0;
    if (!r.get(key) || key >= kOnlineKeys) return makeError("online table record: bad key");
    OnlineEntry& e = t->entries_[key];
    uint8_t own = 0;
    if (!r.candidates(e.exploit) || !r.get(e.nArms) || e.nArms > kOnlineMaxArms || (e.exploit.count == 0 && e.nArms == 0) ||
        !r.get(own) || own > 1 || !r.get(e.measureThreshold))
      return makeError("online table record: bad entry");
    e.ownMeasureThreshold = own == 1;
    uint32_t previous = 0;
    for (int a = 0; a < e.nArms; ++a) {
      if (!r.get(e.cumulativeThreshold[a]) || e.cumulativeThreshold[a] < previous || !r.candidates(e.arms[a]) ||
          e.arms[a].count == 0)
        return makeError("online table record: bad arm");
      previous = e.cumulativeThreshold[a];
    }
  }
  if (!r.done()) return makeError("online table record: trailing bytes");
  return t;
}

}  // namespace dynamiccl::learner
