// The verdicts a job left in its store (and beside it), read the way every in-job verification test checks them.
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

// What the next job resumes from: the store's verdicts and those a finalize kept beside it because the
// store was locked then (the job's own ranks write observations into it; under a sanitizer or a loaded
// machine that outlasts finalize's bound). Side rows are newer than the store's.
inline std::vector<store::VerdictRow> keptVerdicts(const std::string& db) {
  std::vector<store::VerdictRow> rows = storedVerdicts(db);
  for (const std::string& side : store::pendingVerdictsFiles(db)) {
    const std::vector<store::VerdictRow> more = storedVerdicts(side);
    rows.insert(rows.end(), more.begin(), more.end());
  }
  return rows;
}

}  // namespace dynamiccl::testing
