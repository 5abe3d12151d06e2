// Ranks agree on their inputs: at communicator init every rank publishes what its decisions depend
// on, compares all of them within a bounded wait, and every rank adopts one write-once verdict, so a
// rank whose profile, settings or hardware differ turns the tuner off everywhere, never on one rank.
#pragma once

#include <cstdint>
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

// What every rank of the communicator adopts: the first verdict written to the store.
struct InputsVerdict {
  bool agree = false;
  bool missing = false;  // not every rank's inputs arrived in time (rather than some differing)
  std::string why;       // when not agreed: the first differing rank and field, or who is missing
};

// The verdict on a complete set of records (slot order); the same records give the same text everywhere.
InputsVerdict judgeInputs(const std::vector<std::string>& records);
std::string encodeVerdict(const InputsVerdict& v);
InputsVerdict decodeVerdict(const std::string& bytes);  // unreadable: "differ", alike on every rank

// The protocol (input_agreement.cpp): publish `mine` in a free slot, wait up to timeout_ms for all
// nRanks records, propose a verdict write-once, adopt whichever verdict the store kept. Init only.
// agree=false with a why also when the store fails this rank (it cannot know what the others chose).
InputsVerdict agreeOnInputs(coord::RecordStore& store, uint64_t commId, int nRanks, const std::string& mine,
                            int64_t timeout_ms);

}  // namespace dynamiccl::plugin
