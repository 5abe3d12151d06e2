// What any store's poll of a set must give: the records asked for and the set's count as a join gives it.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "coord/record_store.h"

namespace dynamiccl::testing {

// Joins three members of set "inputs" (two in group g1), `apart` from one another, publishes record
// 77, then polls records 77 and 78 counting g1, and a set no one joined. The poll's count.
inline coord::SetCount pollAfterThreeJoins(coord::RecordStore& store, uint64_t commId, std::chrono::milliseconds apart) {
  EXPECT_TRUE(store.joinSet(commId, "inputs", "g1", "a", "ra").ok());
  std::this_thread::sleep_for(apart);
  EXPECT_TRUE(store.joinSet(commId, "inputs", "g1", "b", "rb").ok());
  std::this_thread::sleep_for(apart);
  auto joined = store.joinSet(commId, "inputs", "g2", "c", "rc");
  EXPECT_TRUE(joined.ok() && joined->all == 3 && joined->group == 1);
  EXPECT_EQ(store.publish(commId, 77, "seventy-seven"), coord::PublishResult::Won);
  auto none = store.readAndCount(commId, {77}, "confirm-nobody", "g1");
  EXPECT_TRUE(none.ok() && none->count.all == 0 && none->count.group == 0);
  auto polled = store.readAndCount(commId, {77, 78}, "inputs", "g1");
  if (!polled.ok() || polled->records.size() != 2) {
    ADD_FAILURE() << (polled.ok() ? "a poll without one answer per record" : polled.error());
    return {};
  }
  EXPECT_EQ(polled->records[0], std::optional<std::string>("seventy-seven"));
  EXPECT_FALSE(polled->records[1].has_value());
  EXPECT_EQ(polled->count.all, 3u);
  EXPECT_EQ(polled->count.group, 2u);
  return polled->count;
}

}  // namespace dynamiccl::testing
