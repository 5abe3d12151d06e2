// The verdicts a job left in its store, read the way every in-job verification test checks them.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "store/store.h"

namespace dynamiccl::testing {

// The newest verdict per candidate in the store at `db`, opened read-only; a store that does not open
// or read is a test failure, and no rows.
inline std::vector<store::VerdictRow> storedVerdicts(const std::string& db) {
  store::StoreOptions o;
  o.path = db;
  o.read_only = true;
  auto s = store::Store::open(o);
  EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error());
  if (!s.ok()) return {};
  auto rows = (*s)->latestVerdicts();
  EXPECT_TRUE(rows.ok()) << (rows.ok() ? "" : rows.error());
  return rows.ok() ? *rows : std::vector<store::VerdictRow>{};
}

}  // namespace dynamiccl::testing
