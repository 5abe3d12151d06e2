// The one CSV splitter (features/csv.h) and the one interchange-CSV reader (offline/measurements).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "features/features.h"
#include "offline/measurements/measurements.h"

namespace dynamiccl {
namespace {

using Fields = std::vector<std::string>;

std::vector<Fields> allRecords(std::string_view text, std::vector<int>* lines = nullptr) {
  CsvReader reader(text);
  std::vector<Fields> out;
  for (Fields f; reader.next(f);) {
    out.push_back(f);
    if (lines) lines->push_back(reader.line());
  }
  return out;
}

TEST(CsvSplitter, QuotesHoldCommasDoubledQuotesAndLineBreaks) {
  EXPECT_EQ(splitCsvRecord(R"(a,"b,c","say ""hi""",d)"), (Fields{"a", "b,c", R"(say "hi")", "d"}));
  EXPECT_EQ(allRecords("x,\"two\nlines\",y\nnext,row\n"), (std::vector<Fields>{{"x", "two\nlines", "y"}, {"next", "row"}}));
}

TEST(CsvSplitter, EmptyFieldsCount) {
  EXPECT_EQ(splitCsvRecord(""), Fields{""});
  EXPECT_EQ(splitCsvRecord("a,,b,"), (Fields{"a", "", "b", ""}));
  EXPECT_EQ(splitCsvRecord(R"("")"), Fields{""});
  EXPECT_EQ(splitCsvRecord(",\r\nignored"), (Fields{"", ""}));  // one line only
}

TEST(CsvSplitter, LineEndingsBlankLinesAndLineNumbers) {
  std::vector<int> lines;
  const auto records = allRecords("h1,h2\r\n\r\n1,\"a\r\nb\"\n\n2,c\r3,d", &lines);
  EXPECT_EQ(records, (std::vector<Fields>{{"h1", "h2"}, {"1", "a\r\nb"}, {"2", "c"}, {"3", "d"}}));
  EXPECT_EQ(lines, (std::vector<int>{1, 3, 6, 7}));
  EXPECT_TRUE(allRecords("\n\r\n").empty());
}

TEST(CsvSplitter, AnUnterminatedQuoteRunsToTheEnd) {
  EXPECT_EQ(allRecords("a,\"b\nc,d"), (std::vector<Fields>{{"a", "b\nc,d"}}));
}

const std::string kHeader(measurements::kInterchangeHeader);

TEST(InterchangeReader, ErrorsNameTheLineAfterAQuotedLineBreak) {
  const std::string text = kHeader + "\nsys,allreduce,8,1,64,default,default,,,1.5,2,\"two\nlines\"\nsys,allreduce,8\n";
  auto rows = measurements::parseInterchangeCsv(text);
  ASSERT_FALSE(rows.ok());
  EXPECT_NE(rows.error().find("line 4:"), std::string::npos) << rows.error();
}

// loadMeasurements reads through the same reader as ingest: a note with a quoted comma and line
// break is one field (a line-by-line reader split the record in two and refused the file).
TEST(InterchangeReader, LoadMeasurementsKeepsQuotedNotesWhole) {
  const std::string path = (std::filesystem::temp_directory_path() / "dynamiccl_csv_test_measurements.csv").string();
  std::ofstream(path, std::ios::binary) << kHeader << "\r\n"
                                        << "\"H100, x8\",allreduce,8,1,1048576,ring,simple,,,120.5,17,\"run 1,\nNCCL 2.23.4\"\r\n"
                                        << "H100 x8,alltoall,8,1,1048576,default,default,,,50,1,\r\n"
                                        << "H100 x8,allreduce,8,1,2048,,,,,,,no time\r\n";
  auto loaded = measurements::loadMeasurements(path);
  std::remove(path.c_str());
  ASSERT_TRUE(loaded.ok()) << loaded.error();
  ASSERT_EQ(loaded->rows.size(), 1u);
  const measurements::Measurement& m = loaded->rows[0];
  EXPECT_EQ(m.system, "H100, x8");
  EXPECT_EQ(m.bytes, 1048576u);
  EXPECT_DOUBLE_EQ(m.time_us, 120.5);
  EXPECT_EQ(m.forcedAlgo, Algo::Ring);
  EXPECT_EQ(m.forcedProto, Proto::Simple);
  EXPECT_EQ(m.note, "run 1,\nNCCL 2.23.4");
  EXPECT_EQ(m.ncclVersion, 22304);
  EXPECT_EQ(loaded->skipped.at("no usable time or shape"), 1);
  EXPECT_EQ(loaded->skipped.size(), 2u);
}

}  // namespace
}  // namespace dynamiccl
