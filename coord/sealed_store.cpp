// A store whose records are sealed under the job's key on the way in and opened on the way out.
#include "coord/record_seal.h"
#include "coord/record_store.h"

namespace dynamiccl::coord {
namespace {

class SealedStore : public RecordStore {
 public:
  SealedStore(std::shared_ptr<RecordStore> inner, std::string key, std::function<void(uint64_t, uint64_t)> onForeign)
      : inner_(std::move(inner)), key_(std::move(key)), onForeign_(std::move(onForeign)) {}

  PublishResult publishBy(uint64_t commId, uint64_t boundary, const std::string& bytes, Deadline by) override {
    return inner_->publishBy(commId, boundary, sealRecord(key_, commId, boundary, bytes), by);
  }

  Expected<std::optional<std::string>> read(uint64_t commId, uint64_t boundary) override {
    auto rec = inner_->read(commId, boundary);
    if (!rec.ok()) return rec;
    return opened(commId, boundary, std::move(*rec));
  }

  Expected<std::vector<std::optional<std::string>>> readMany(uint64_t commId, const std::vector<uint64_t>& boundaries,
                                                             size_t presence, Deadline by = kNoDeadline) override {
    auto recs = inner_->readMany(commId, boundaries, presence, by);
    if (recs.ok()) openFrom(presence, commId, boundaries, *recs);
    return recs;
  }

  Expected<std::vector<std::optional<std::string>>> pollMany(uint64_t commId, const std::vector<uint64_t>& boundaries,
                                                             size_t presence, Deadline by = kNoDeadline) override {
    auto recs = inner_->pollMany(commId, boundaries, presence, by);
    if (recs.ok()) openFrom(presence, commId, boundaries, *recs);
    return recs;
  }

  Expected<RecordsAndCount> readAndCount(uint64_t commId, const std::vector<uint64_t>& boundaries,
                                         const std::string& set, const std::string& group) override {
    auto got = inner_->readAndCount(commId, boundaries, set, group);
    if (got.ok()) openFrom(0, commId, boundaries, got->records);
    return got;
  }

  // Set members are not sealed here: the input check seals its own (it knows whose key opens them).
  Expected<SetCount> joinSetBy(uint64_t commId, const std::string& set, const std::string& group,
                               const std::string& member, const std::string& bytes, Deadline by) override {
    return inner_->joinSetBy(commId, set, group, member, bytes, by);
  }
  Expected<std::optional<SetMember>> memberOutside(uint64_t commId, const std::string& set,
                                                   const std::string& group) override {
    return inner_->memberOutside(commId, set, group);
  }

  std::string describe() const override { return inner_->describe(); }

 private:
  // Opens records[from..] in place (each read for the boundary at the same place).
  void openFrom(size_t from, uint64_t commId, const std::vector<uint64_t>& boundaries,
                std::vector<std::optional<std::string>>& records) {
    for (size_t i = from; i < records.size() && i < boundaries.size(); ++i)
      records[i] = opened(commId, boundaries[i], std::move(records[i]));
  }

  std::optional<std::string> opened(uint64_t commId, uint64_t boundary, std::optional<std::string> rec) {
    if (!rec) return rec;
    if (auto bytes = openSealed(key_, commId, boundary, *rec)) return std::move(*bytes);
    if (onForeign_) onForeign_(commId, boundary);
    return std::string(kForeignRecord);
  }

  std::shared_ptr<RecordStore> inner_;
  std::string key_;
  std::function<void(uint64_t, uint64_t)> onForeign_;
};

}  // namespace

std::shared_ptr<RecordStore> sealedStore(std::shared_ptr<RecordStore> inner, std::string key,
                                         std::function<void(uint64_t, uint64_t)> onForeign) {
  return std::make_shared<SealedStore>(std::move(inner), std::move(key), std::move(onForeign));
}

}  // namespace dynamiccl::coord
