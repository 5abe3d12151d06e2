// The leader's published tables, read back from the job's coordination directory: what every rank
// adopted at each boundary (the records are write-once, so these are the bytes the ranks read).
#include <filesystem>

#include "coord/coord.h"
#include "offline/jobreplay/jobreplay.h"
#include "learner/learner.h"

namespace dynamiccl::jobreplay {

Expected<std::vector<PublishedTable>> publishedTables(const JobResult& result) {
  if (result.epochCalls == 0) return makeError("the result names no epoch");
  auto store = coord::openDirStore((std::filesystem::path(result.workDir) / "coord").string(), /*privateDir=*/false);
  if (!store) return makeError(store.error());
  std::vector<PublishedTable> tables;
  for (uint64_t boundary = result.epochCalls; boundary <= result.callsPerRank; boundary += result.epochCalls) {
    auto record = store.value()->read(result.commId, boundary);
    if (!record) return makeError(record.error());
    if (!record->has_value()) break;
    PublishedTable t;
    t.boundary = boundary;
    const std::string bytes(coord::sealedPayload(**record));  // the job's own records: its seal unchecked
    if (bytes == coord::kFrozenRecord) {
      t.frozen = true;
    } else {
      auto table = learner::OnlineTable::deserialize(bytes);
      if (!table) return makeError("the record of boundary " + std::to_string(boundary) + ": " + table.error());
      t.table = std::move(table.value());
    }
    tables.push_back(std::move(t));
  }
  return tables;
}

}  // namespace dynamiccl::jobreplay
