// features: the vocabulary of a collective call and the per-call features (fingerprint, timing
// windows, workload context, the policy's input encoding) and the one CSV splitter. The one header
// other modules include.
#pragma once

#include "features/crypto.h"
#include "features/csv.h"
#include "features/expected.h"
#include "features/feature_vector.h"
#include "features/key_values.h"
#include "features/regular_file.h"
#include "features/rule_fingerprint.h"
#include "features/size_text.h"
#include "features/timing_window.h"
#include "features/topology_fingerprint.h"
#include "features/vocabulary.h"
#include "features/workload_context.h"
