// Coordination backends: write-once records keyed by (communicator, epoch boundary). The first
// record written for a key wins and every reader sees that one: this is what makes ranks agree.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "features/features.h"

namespace dynamiccl::coord {

inline constexpr size_t kMaxRecordBytes = 1u << 20;
// What a backend reads where something that cannot be a record sits under a record's name (a FIFO, a
// directory, a symlink, a file over kMaxRecordBytes: a stale job's leftovers, or planted): the same
// bytes on every rank, at once, which open and parse as no record of this job's (a boundary freezes).
inline constexpr const char* kNotARecord = "DYNAMICCL-NOT-A-RECORD";
// The record a follower writes when the leader's did not come in time: "no more versions".
inline constexpr const char* kFrozenRecord = "DYNAMICCL-FROZEN-1";

// Records beside the epochs' (no boundary reaches 2^62 calls): the verdict on the ranks' inputs that
// every rank adopts, and the place each rank's input record (a set member) is sealed for.
inline constexpr uint64_t kInputsAgreementKey = 1ull << 62;
inline constexpr uint64_t kInputsRecordKey = kInputsAgreementKey + 1;

enum class PublishResult { Won, Lost, Failed };  // Lost: another record was there first

struct SetCount {
  uint64_t all = 0, group = 0;
  // How long the set took from its first member to its latest, in the store's own clock; -1 where the
  // store cannot tell. With `all`, the pace its members arrive at.
  int64_t filling_ns = -1;
};
struct SetMember {
  std::string group, bytes;
};
struct RecordsAndCount {
  std::vector<std::optional<std::string>> records;
  SetCount count;
};

// An operation that ran out of time (a slow or silent store, not one that refused): its error says so.
inline constexpr std::string_view kTimedOut = "timed out";
inline bool timedOut(std::string_view error) { return error.find(kTimedOut) != std::string_view::npos; }

using Deadline = std::chrono::steady_clock::time_point;
inline constexpr Deadline kNoDeadline = Deadline::max();

class RecordStore {
 public:
  virtual ~RecordStore() = default;
  PublishResult publish(uint64_t commId, uint64_t boundary, const std::string& bytes) {
    return publishBy(commId, boundary, bytes, kNoDeadline);
  }
  // A publish that also ends by `by`, every endpoint's try and retry included (the backend's own
  // per-operation bound still holds): Failed when `by` came first. A caller with a total bound
  // (finalize) passes what is left of it.
  virtual PublishResult publishBy(uint64_t commId, uint64_t boundary, const std::string& bytes, Deadline by) = 0;
  // nullopt: no record yet; an error: the backend could not be asked.
  virtual Expected<std::optional<std::string>> read(uint64_t commId, uint64_t boundary) = 0;
  // Several boundaries' records at once, in the order asked (nullopt where none yet); the first
  // `presence` of them are only asked whether they exist (an empty record where one does), so a rank
  // checking that the store still holds what it read is not sent it again. etcd answers them in one
  // request, other backends one operation each. An error: the backend could not be asked (by `by`).
  virtual Expected<std::vector<std::optional<std::string>>> readMany(uint64_t commId,
                                                                     const std::vector<uint64_t>& boundaries,
                                                                     size_t presence, Deadline by = kNoDeadline) {
    std::vector<std::optional<std::string>> out;
    for (size_t i = 0; i < boundaries.size(); ++i) {
      if (std::chrono::steady_clock::now() >= by) return makeError("no time left to read records");
      auto rec = read(commId, boundaries[i]);
      if (!rec.ok()) return makeError(rec.error());
      out.push_back(i < presence && rec->has_value() ? std::string() : std::move(*rec));
    }
    return out;
  }
  // A rank's poll ahead of its position (readMany's answer): a store that shares one reader among a
  // node's processes answers most of them from what that reader kept on the node.
  virtual Expected<std::vector<std::optional<std::string>>> pollMany(uint64_t commId,
                                                                     const std::vector<uint64_t>& boundaries,
                                                                     size_t presence, Deadline by = kNoDeadline) {
    return readMany(commId, boundaries, presence, by);
  }
  // Removes the record only while it still holds `expected` (the bytes a read gave), by `by`: true when
  // removed, false when it holds other bytes or none. Only a memory that folds its old records into
  // newer ones (the verdicts' ring) removes; epoch records are never removed, only expire (etcd).
  virtual Expected<bool> removeIf(uint64_t commId, uint64_t boundary, const std::string& expected, Deadline by) {
    (void)commId, (void)boundary, (void)expected, (void)by;
    return makeError(describe() + " does not remove records");
  }
  // Sets: records written once each under a member name of their own, in groups, and counted without
  // being read, so that a rank's work does not grow with how many ranks wrote (the input check). Names
  // are [0-9a-z-] only. Writes `bytes` as `member` of `group` in `set` (again: no error, nothing
  // changes) and counts, as of right after it, the members of the set and of the group.
  Expected<SetCount> joinSet(uint64_t commId, const std::string& set, const std::string& group,
                             const std::string& member, const std::string& bytes) {
    return joinSetBy(commId, set, group, member, bytes, kNoDeadline);
  }
  // A join ending by `by` or the backend's per-operation bound, whichever is later: a caller retrying a
  // join that timed out on a loaded store gives the retry longer (the work a timed-out request cost the
  // store is lost, and a herd of retries at the per-operation bound never drains).
  virtual Expected<SetCount> joinSetBy(uint64_t commId, const std::string& set, const std::string& group,
                                       const std::string& member, const std::string& bytes, Deadline by) = 0;
  // `boundaries`' records (as readMany) and the count joinSet would give, without joining, as of the
  // same moment: one request (etcd: one transaction; a directory: one operation each). A set no one
  // joined counts 0. How a waiting rank knows how many ranks are still to come.
  virtual Expected<RecordsAndCount> readAndCount(uint64_t commId, const std::vector<uint64_t>& boundaries,
                                                 const std::string& set, const std::string& group) = 0;
  // One member of `set` outside `group`, or nullopt when every member is in it.
  virtual Expected<std::optional<SetMember>> memberOutside(uint64_t commId, const std::string& set,
                                                           const std::string& group) = 0;
  virtual std::string describe() const = 0;
};

// A directory (node-local or shared by every node: NFS, Lustre). privateDir: create it 0700 and
// refuse it unless owned by us with no group/other access. delay_ms: DYNAMICCL_TEST coord_delay_ms,
// fault injection that delays every operation (tests of a slow shared file system).
// delay_ms: every operation this slow; publishFails_ms: the first publish of a table (not FROZEN, not the
// input check's records) at each boundary takes this long, then fails, as an etcd request timing out does (tests' fault injection).
Expected<std::unique_ptr<RecordStore>> openDirStore(const std::string& dir, bool privateDir, int delay_ms = 0,
                                                    int publishFails_ms = 0);

// The node-local default: $TMPDIR (or /tmp)/dynamiccl-<uid>, private to this user.
std::string nodeLocalDir();

// etcd v3 (its JSON gateway, through libcurl loaded at run time): endpoints "http(s)://host:port".
struct EtcdOptions {
  std::vector<std::string> endpoints;
  std::string user, password;                 // empty user: no authentication
  std::string caFile, certFile, keyFile;      // TLS: CA bundle, client certificate and key
  int timeout_ms = 2000;                      // per operation: every endpoint, retry and the lease included
  int64_t ttl_s = 86400;                      // lease of every key: old jobs' records expire; 0: none
  std::string prefix = "dynamiccl";           // keys: <prefix>/<commId>/b<boundary>
};
// An error (one line) when libcurl.so.4 cannot be loaded; nothing is contacted here.
Expected<std::unique_ptr<RecordStore>> openEtcdStore(const EtcdOptions& options);

// `inner` (a store every node reaches) with one reader per node and communicator: the process holding
// the communicator's lock file under `base` (nodeLocalDir()) polls `inner` and keeps what it reads on
// the node, where the node's other processes' polls read it (pollMany); a rank waiting for a record
// (readMany) reads the node's copy, then `inner`; read() asks `inner`. Everything else goes to `inner`. `jobTag` keeps
// jobs apart (the seal key's). An error: no private directory on the node (use `inner` alone).
Expected<std::unique_ptr<RecordStore>> nodeSharedStore(std::shared_ptr<RecordStore> inner, const std::string& base,
                                                       const std::string& jobTag);

// What a sealed store reads where the record is not sealed under its key (planted, forged, another
// job's): the same bytes on every rank, which parse as no table (a boundary's reader freezes).
inline constexpr const char* kForeignRecord = "DYNAMICCL-NOT-THIS-JOBS-RECORD";
// `inner` with every record sealed under `key` when published and opened when read (record_seal.h);
// onForeign(commId, boundary) is called for each read of a record that does not open.
std::shared_ptr<RecordStore> sealedStore(std::shared_ptr<RecordStore> inner, std::string key,
                                         std::function<void(uint64_t, uint64_t)> onForeign);

// While one lives on a thread, that thread's etcd requests end within about 10 ms of `*flag` being
// set, failing (those of other threads go on): how a thread stopping at finalize is joined in time
// whatever etcd does. Scopes nest; the innermost one counts.
class AbortScope {
 public:
  explicit AbortScope(const std::atomic<bool>* flag);
  ~AbortScope();
  AbortScope(const AbortScope&) = delete;
  AbortScope& operator=(const AbortScope&) = delete;

 private:
  const std::atomic<bool>* previous_;
};

struct EtcdCredentials {
  std::string user, password;
};
// One line "user:password" in a regular file no one else may read.
Expected<EtcdCredentials> readEtcdCredentials(const std::string& path);

}  // namespace dynamiccl::coord
