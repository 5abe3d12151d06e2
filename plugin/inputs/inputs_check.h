// Ranks agree on their inputs: at communicator init every rank publishes what its decisions depend
// on, compares all of them within a bounded wait, and every rank adopts one write-once agreement, so a
// rank whose profile, settings or hardware differ turns the tuner off everywhere, never on one rank.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "coord/coord.h"
#include "features/features.h"
#include "plugin/nccl_version.h"
#include "plugin/settings/settings.h"

namespace dynamiccl::plugin {

inline constexpr const char* kInputsHeader = "DYNAMICCL-INPUTS-1";

struct InputField {
  std::string name, value;
};

// Everything this rank's decisions for the communicator depend on, in a fixed order (input_fields.cpp).
// profileDigest: the profile file's size and hash, "none", or why it could not be read (LoadedProfile).
std::vector<InputField> decisionInputs(const Settings& s, const std::string& profileDigest, const CommShape& shape,
                                       const NcclRules& rules);

// The record a rank publishes: a header, who it is (not compared), then one "name=value" per line.
std::string inputsRecord(const std::vector<InputField>& fields, const std::string& who);

// What every rank of the communicator adopts: the first agreement written to the store.
struct InputsAgreement {
  bool agree = false;
  bool missing = false;  // not every rank's inputs arrived in time (rather than some differing)
  std::string why;       // when not agreed: the first differing rank and field, or who is missing
  std::string proposal;  // "agree": the proposal every rank confirmed (a random name)
  std::string recordDigest;  // SHA-256 (hex) of the agreement's record as stored, once adopted
  bool storeFailed = false;  // the store did not take this rank's own inputs: no rank can agree
};

// Why the ranks' inputs differ, from one rank's view: its record and how many of nRanks hold its
// inputs, and one record from the other ranks (nullopt: none could be read; otherOpens: it is
// sealed under the job's key, so the same token wrote it).
std::string whyInputsDiffer(const std::string& mine, uint64_t mineCount, const std::optional<std::string>& other,
                            bool otherOpens, uint64_t nRanks);
std::string encodeAgreement(const InputsAgreement& v);
InputsAgreement decodeAgreement(const std::string& bytes);  // unreadable: "differ", alike on every rank

// The key that binds this communicator's records to the job (slots, agreement): SHA-256 of the
// communicator id, the inputs compared (`record` less its who line) and the job's token (empty:
// none). Ranks with other inputs hold another key.
std::string inputsKey(uint64_t commId, const std::string& record, const std::string& token);
// The name of a set's group of ranks with these inputs: a digest of the inputs' key.
std::string inputsGroup(const std::string& inputsKey);
// The key the input records themselves are sealed under: the communicator id and the job's token,
// so every rank of the job can read any rank's (to say how it differs), and no other job's opens.
std::string membersKey(uint64_t commId, const std::string& token);
// The key of the communicator's epoch records once the check agreed: bound to the agreement, whose
// judged records name this job's ranks (a random nonce each), so no earlier job's table opens under it.
std::string epochKeyAfter(const std::string& inputsKey, const InputsAgreement& adopted);
// Where the check did not run (off, one rank): the communicator id and the token only.
std::string epochKeyUnchecked(uint64_t commId, const std::string& token);
// The job's secret token, part of every key (DYNAMICCL_COORD_TOKEN_FILE; empty: none); a file that
// cannot be used gives a random token no other rank holds, with one line per process.
std::string coordToken(const Settings& s);
// A fresh random name: `words` 32-bit words from the system's entropy, in hex (records, members, voters).
std::string randomHex(int words);

// The protocol (input_agreement.cpp): every rank joins the communicator's set of input records (its
// group: ranks with its inputs), counting as it joins; the rank that makes the count nRanks proposes
// "agree" when its group holds them all (else writes "differ"); every rank confirms the proposal in a
// set of its own, and the one whose confirmation makes nRanks writes the agreement "agree". Each rank
// makes a bounded number of requests, each of a bounded size, whatever nRanks. A rank adopts the
// agreement the store kept if it is sealed under `key` and, when it says "agree", names the proposal
// this rank confirmed. Off NCCL's init path (the check pool). agree=false with a why also when the store fails this rank, and for
// an agreement not adopted (every rank then keeps NCCL's choices alike).
// stop: set when the communicator is finalized; a rank waiting then returns "not agreed" at once.
InputsAgreement agreeOnInputs(coord::RecordStore& store, uint64_t commId, int nRanks, const std::string& mine,
                            int64_t timeout_ms, const std::string& key, const std::string& membersKey,
                            const std::atomic<bool>* stop = nullptr);

}  // namespace dynamiccl::plugin
