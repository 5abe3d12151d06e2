// The dynamiccl command as a user runs it: a write that fails is an error, invalid values are
// refused, and read-only commands create nothing.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <iterator>
#include <string>
#include <tuple>
#include <thread>
#include <vector>

#include "policy/policy.h"
#include "shipped_data.h"
#include "test_support.h"
#include "tests/policy_weights_fixture.h"

namespace {

namespace fs = std::filesystem;
const std::string kDynamiccl = std::string(DYNAMICCL_BINARY_DIR) + "/offline/dynamiccl";

using Result = dynamiccl::testing::ShellResult;  // stdout and stderr together

// Runs `dynamiccl ARGS` through the shell (so ARGS may redirect), without DYNAMICCL_DB.
Result dynamiccl(const std::string& args) {
  return dynamiccl::testing::runShell("env -u DYNAMICCL_DB " + kDynamiccl + " " + args + " 2>&1");
}

struct TempDir {
  fs::path path;
  TempDir() {
    char tmpl[] = "/tmp/dynamiccl_cli_test_XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path); }
};

// A store with three observations, made by `dynamiccl ingest`.
std::string storeWithRows(const TempDir& dir) {
  const std::string csv = (dir.path / "rows.csv").string();
  std::ofstream(csv) << "system,collective,nranks,nnodes,bytes,algo,proto,nchannels,chunk,time_us,busbw_gbps,source_note\n"
                        "s,allreduce,8,1,1024,RING,LL,4,-1,10.5,0.1,a\n"
                        "s,allreduce,8,1,2048,RING,LL,4,-1,11.5,0.2,b\n"
                        "s,allgather,8,1,4096,RING,SIMPLE,4,-1,12.5,0.3,c\n";
  const std::string db = (dir.path / "store.db").string();
  const Result r = dynamiccl("ingest -q --db '" + db + "' '" + csv + "'");
  EXPECT_EQ(r.rc, 0) << r.output;
  return db;
}

TEST(Cli, AWriteThatFailsIsAnError) {
  TempDir dir;
  const std::string db = storeWithRows(dir);
  const Result ok = dynamiccl("db export-csv --db '" + db + "' -o '" + (dir.path / "out.csv").string() + "'");
  EXPECT_EQ(ok.rc, 0) << ok.output;
  EXPECT_NE(ok.output.find("wrote 3 rows"), std::string::npos) << ok.output;

  const Result full = dynamiccl("db export-csv --db '" + db + "' -o /dev/full");  // a device: never written
  EXPECT_NE(full.rc, 0) << full.output;
  EXPECT_EQ(full.output.find("wrote"), std::string::npos) << full.output;
  EXPECT_NE(full.output.find("/dev/full: not a regular file"), std::string::npos) << full.output;

  const Result stdoutFull = dynamiccl("db export-csv --db '" + db + "' > /dev/full");
  EXPECT_NE(stdoutFull.rc, 0) << stdoutFull.output;

  const Result noDir = dynamiccl("sim --emit-csv /proc/nope/x.csv");
  EXPECT_NE(noDir.rc, 0) << noDir.output;
  EXPECT_EQ(noDir.output.find("wrote"), std::string::npos) << noDir.output;
  EXPECT_NE(noDir.output.find("/proc/nope/x.csv"), std::string::npos) << noDir.output;

  const Result simFull = dynamiccl("sim --emit-csv /dev/full");
  EXPECT_NE(simFull.rc, 0) << simFull.output;
  EXPECT_EQ(simFull.output.find("wrote"), std::string::npos) << simFull.output;
}

int lines(const std::string& text) { return static_cast<int>(std::count(text.begin(), text.end(), '\n')); }

// Two profiles that merge (rules for ranks 2 and for 4, 8, 12, ...); `count` rules in the second.
std::pair<std::string, std::string> mergeableProfiles(const TempDir& dir, int count, const std::string& prefix = "") {
  const std::string head = R"({"format":"dynamiccl-profile","version":2,"name":"p","rules":[)";
  const std::string a = (dir.path / (prefix + "a.json")).string(), b = (dir.path / (prefix + "b.json")).string();
  std::ofstream(a) << head << R"({"collective":"allreduce","ranks":[2,2],"bytes":[0,4096],"algo":"tree","proto":"ll"}]})";
  std::ofstream out(b);
  out << head;
  for (int i = 0; i < count; ++i)
    out << (i ? "," : "") << R"({"collective":"allreduce","ranks":[)" << 4 * (i + 1) << "," << 4 * (i + 1)
        << R"(],"bytes":[0,4096],"algo":"ring","proto":"ll"})";
  out << "]}";
  return {a, b};
}

std::vector<std::string> namesIn(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::string contentOf(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

const std::string kProbeFacts =
    "env DYNAMICCL_TOPO=gpu_cc=103,nvlink_GBps=900,nics_per_node=8,nic_GBps=100 ";

// An output that is a FIFO (or a device, or a directory) is refused at once with one line naming it,
// never opened and waited on; the FIFO stays as it was.
TEST(CliOutputs, AFifoIsRefusedAtOnceNeverWaitedOn) {
  TempDir dir;
  const std::string fifo = (dir.path / "out.fifo").string();
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const auto [a, b] = mergeableProfiles(dir, 1);
  for (const std::string& cmd : {kProbeFacts + "timeout 10 " + kDynamiccl + " probe -o '" + fifo + "'",
                                 "timeout 10 " + kDynamiccl + " merge '" + a + "' '" + b + "' -o '" + fifo + "'"}) {
    const Result r = dynamiccl::testing::runShell(cmd + " 2>&1 >/dev/null");
    EXPECT_NE(r.rc, 124) << cmd << ": blocked on the FIFO";
    EXPECT_EQ(r.rc, 1) << cmd << "\n" << r.output;
    EXPECT_NE(r.output.find(fifo + ": not a regular file (a FIFO)"), std::string::npos) << r.output;
    EXPECT_EQ(lines(r.output), 1) << r.output;
    EXPECT_TRUE(fs::is_fifo(fifo));
  }
  const Result toDir = dynamiccl("merge '" + a + "' '" + b + "' -o '" + dir.path.string() + "'");
  EXPECT_EQ(toDir.rc, 1) << toDir.output;
  EXPECT_NE(toDir.output.find("not a regular file (a directory)"), std::string::npos) << toDir.output;
}

// A write that fails part way (a file size limit here: EFBIG on every machine) exits 1 and leaves the
// earlier file at that path byte for byte, or no file where there was none: never a truncated or empty one,
// and no temporary file behind. A symbolic link to the output keeps pointing at the new file, with its mode.
TEST(CliOutputs, AFailedWriteLeavesTheEarlierFileWhole) {
  TempDir dir;
  const auto [a, b] = mergeableProfiles(dir, 400);  // about 60 KB merged
  const std::string one = mergeableProfiles(dir, 1, "small-").second;
  const fs::path out = dir.path / "merged.json";
  const Result good = dynamiccl("merge '" + a + "' '" + one + "' -o '" + out.string() + "'");
  ASSERT_EQ(good.rc, 0) << good.output;
  const std::string before = contentOf(out);
  ASSERT_EQ(dynamiccl("validate '" + out.string() + "'").rc, 0);
  fs::permissions(out, fs::perms::owner_read | fs::perms::owner_write);
  const auto names = namesIn(dir.path);
  auto limited = [&](const std::string& args) {  // 16 KiB at most per file; SIGXFSZ ignored, so write() says EFBIG
    return dynamiccl::testing::runShell("bash -c \"trap '' XFSZ; ulimit -f 16; exec env -u DYNAMICCL_DB " + kDynamiccl + " " +
                                        args + "\" 2>&1");
  };
  const Result over = limited("merge '" + a + "' '" + b + "' -o '" + out.string() + "'");
  EXPECT_EQ(over.rc, 1) << over.output;
  EXPECT_NE(over.output.find("cannot write " + out.string() + ": File too large"), std::string::npos) << over.output;
  EXPECT_EQ(over.output.find("wrote"), std::string::npos) << over.output;
  EXPECT_EQ(contentOf(out), before);
  EXPECT_EQ(namesIn(dir.path), names) << "a temporary file was left behind";
  const Result fresh = limited("merge '" + a + "' '" + b + "' -o '" + (dir.path / "new.json").string() + "'");
  EXPECT_EQ(fresh.rc, 1) << fresh.output;
  EXPECT_FALSE(fs::exists(dir.path / "new.json")) << "an empty or partial file was left";

  const fs::path link = dir.path / "link.json";
  fs::create_symlink("merged.json", link);
  const Result viaLink = dynamiccl("merge '" + a + "' '" + b + "' -o '" + link.string() + "'");
  ASSERT_EQ(viaLink.rc, 0) << viaLink.output;
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_GT(fs::file_size(out), before.size());
  EXPECT_EQ(fs::status(out).permissions() & fs::perms::all, fs::perms::owner_read | fs::perms::owner_write);
}

// On a file system that is full (a 64 KiB tmpfs; skipped where it cannot be mounted), probe and merge
// exit 1 and leave no 0-byte file, and a failed rewrite leaves the earlier profile whole.
TEST(CliOutputs, AFullFileSystemLeavesNoEmptyOrTruncatedFile) {
  TempDir dir;
  const fs::path mnt = dir.path / "small";
  fs::create_directory(mnt);
  if (dynamiccl::testing::runShell("mount -t tmpfs -o size=64k tmpfs '" + mnt.string() + "' 2>&1").rc != 0)
    GTEST_SKIP() << "cannot mount a small tmpfs here (needs root and CAP_SYS_ADMIN)";
  struct Unmount {
    std::string at;
    ~Unmount() { dynamiccl::testing::runShell("umount '" + at + "'"); }
  } unmount{mnt.string()};
  const auto [a, b] = mergeableProfiles(dir, 800);  // about 120 KB merged: more than the file system holds
  const std::string one = mergeableProfiles(dir, 1, "small-").second;
  const fs::path out = mnt / "merged.json";
  ASSERT_EQ(dynamiccl("merge '" + a + "' '" + one + "' -o '" + out.string() + "'").rc, 0);
  const std::string before = contentOf(out);
  const Result over = dynamiccl("merge '" + a + "' '" + b + "' -o '" + out.string() + "'");
  EXPECT_EQ(over.rc, 1) << over.output;
  EXPECT_NE(over.output.find("No space left on device"), std::string::npos) << over.output;
  EXPECT_EQ(contentOf(out), before);
  EXPECT_EQ(dynamiccl("validate '" + out.string() + "'").rc, 0);

  std::ofstream(mnt / "filler") << std::string(128 * 1024, 'x');  // fills it
  const Result probe = dynamiccl::testing::runShell(kProbeFacts + kDynamiccl + " probe -o '" + (mnt / "fp.json").string() + "' 2>&1");
  EXPECT_EQ(probe.rc, 1) << probe.output;
  EXPECT_FALSE(fs::exists(mnt / "fp.json")) << "an empty fingerprint was left";
  EXPECT_EQ(namesIn(mnt), (std::vector<std::string>{"filler", "merged.json"}));
}

TEST(Cli, InvalidValuesAreRefused) {
  const std::string profile = std::string(DYNAMICCL_SOURCE_DIR) + "/profiles/example-dgx-h100.json";
  for (const std::string& args : std::vector<std::string>{"show -p '" + profile + "' -c alltoall", "sim --bytes -1", "sim --bytes 0",
                                 "sim --channels -5", "sim --channels 65", "sim --samples -1", "sim --collective alltoall"}) {
    const Result r = dynamiccl(args);
    EXPECT_NE(r.rc, 0) << args << "\n" << r.output;
  }
  const Result valid = dynamiccl("sim --bytes 1024 --algo ring --proto simple --channels 4 --samples 2");
  EXPECT_EQ(valid.rc, 0) << valid.output;
  const Result shown = dynamiccl("show -p '" + profile + "' -c allreduce --max-bytes 4096");
  EXPECT_EQ(shown.rc, 0) << shown.output;
}

// Every size option takes nccl-tests' suffixes (binary: 1K = 1024), the same as the number written out.
TEST(CliConventions, SizesTakeSuffixes) {
  const std::string profile = std::string(DYNAMICCL_SOURCE_DIR) + "/profiles/example-dgx-h100.json";
  for (auto [suffixed, plain] : {std::pair{"1M", "1048576"}, std::pair{"64K", "65536"}, std::pair{"64KiB", "65536"},
                                 std::pair{"2g", "2147483648"}, std::pair{"1MB", "1048576"}}) {
    const Result a = dynamiccl(std::string("sim --algo ring --proto simple --bytes ") + suffixed);
    const Result b = dynamiccl(std::string("sim --algo ring --proto simple --bytes ") + plain);
    EXPECT_EQ(a.rc, 0) << suffixed << "\n" << a.output;
    EXPECT_EQ(a.output, b.output) << suffixed;
  }
  const Result shown = dynamiccl("show -p '" + profile + "' -c allreduce --min-bytes 4K --max-bytes 1M");
  const Result plain = dynamiccl("show -p '" + profile + "' -c allreduce --min-bytes 4096 --max-bytes 1048576");
  EXPECT_EQ(shown.rc, 0) << shown.output;
  EXPECT_EQ(shown.output, plain.output);
  const Result chunk = dynamiccl("sim --algo ring --proto simple --chunk 128K");
  EXPECT_EQ(chunk.rc, 0) << chunk.output;
  for (const char* bad : {"1Q", "M", "1.5M", "-1K", "1KK", "99999999T", "0K"}) {
    const Result r = dynamiccl(std::string("sim --bytes ") + bad);
    EXPECT_NE(r.rc, 0) << bad << "\n" << r.output;
    EXPECT_EQ(lines(r.output), 1) << bad << "\n" << r.output;
    EXPECT_NE(r.output.find("a size in bytes"), std::string::npos) << r.output;
  }
}

// A bad value: a non-zero exit and one line that names it, never a run on it or a raw exception.
TEST(CliConventions, EveryBadValueIsOneLineAndNonZero) {
  TempDir dir;
  const std::string csv = (dir.path / "normalized.csv").string();
  std::ofstream(csv) << "system,collective,nranks,nnodes,bytes,algo,proto,nchannels,chunk,time_us,busbw_gbps,source_note\n"
                     << "s,allreduce,2,1,1024,default,default,,,10.0,0,a\n";
  const std::string profile = std::string(DYNAMICCL_SOURCE_DIR) + "/profiles/example-dgx-h100.json";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"replay --data '" + csv + "' --profile '" + (dir.path / "nope.json").string() + "'", "nope.json"},
      {"replay --data '" + csv + "' --profile '" + csv + "'", "--profile"},
      {"sim --nodes 0", "--nodes"},
      {"show -p '" + profile + "' --nodes 0", "--nodes"},
      {"show -p '" + profile + "' --ranks 0", "--ranks"},
      {"env '" + dir.path.string() + "'", "is a directory"},
      {"env '" + csv + "'", "is not JSON"},
      {"sim --bytes 1Q", "1Q"},
  };
  for (const auto& [args, says] : cases) {
    const Result r = dynamiccl(args);
    EXPECT_NE(r.rc, 0) << args << "\n" << r.output;
    EXPECT_EQ(lines(r.output), 1) << args << "\n" << r.output;
    EXPECT_NE(r.output.find(says), std::string::npos) << args << "\n" << r.output;
    EXPECT_EQ(r.output.find("json.exception"), std::string::npos) << args << "\n" << r.output;
  }
}

// One name per idea: `db export-csv -o/--out` as every command; --output still works, hidden.
TEST(CliConventions, FormerFlagNamesAreHiddenAliases) {
  TempDir dir;
  const std::string db = storeWithRows(dir);
  const Result byOldName = dynamiccl("db export-csv --db '" + db + "' --output '" + (dir.path / "a.csv").string() + "'");
  EXPECT_EQ(byOldName.rc, 0) << byOldName.output;
  EXPECT_TRUE(fs::exists(dir.path / "a.csv"));
  const Result byNewName = dynamiccl("db export-csv --db '" + db + "' --out '" + (dir.path / "b.csv").string() + "'");
  EXPECT_EQ(byNewName.rc, 0) << byNewName.output;
  EXPECT_TRUE(fs::exists(dir.path / "b.csv"));
  const Result help = dynamiccl("db export-csv --help");
  EXPECT_NE(help.output.find("--out"), std::string::npos) << help.output;
  EXPECT_EQ(help.output.find("--output"), std::string::npos) << help.output;
}

// --help shows each option's default where it has one.
TEST(CliConventions, HelpShowsDefaults) {
  const Result replay = dynamiccl("replay --help");
  EXPECT_NE(replay.output.find("=verified"), std::string::npos) << replay.output;  // --trust
  const Result sim = dynamiccl("sim --help");
  EXPECT_NE(sim.output.find("=1048576"), std::string::npos) << sim.output;  // --bytes
  const Result env = dynamiccl("env --help");
  EXPECT_NE(env.output.find("=dynamiccl"), std::string::npos) << env.output;  // --plugin
}

// ingest says per file what it detected, and refuses a file whose sources disagree.
TEST(CliIngest, SaysWhatItDetectedAndRefusesAmbiguousFiles) {
  TempDir dir;
  const std::string body =
      "# Collective test starting: all_reduce_perf\n"
      "#  Rank  0 Group  0 Pid 1 on hostA device  0 [0000:01:00] GPU X\n"
      "#  Rank  1 Group  0 Pid 2 on hostA device  1 [0000:02:00] GPU X\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
      "        1024           256     float     sum      -1    10.00    0.10    0.05      0    11.00    0.09    0.05      0\n";
  fs::create_directories(dir.path / "logs");
  std::ofstream(dir.path / "logs" / "allreduce_tree.txt") << body;
  const std::string db = (dir.path / "store.db").string();
  const Result ok = dynamiccl("ingest --db '" + db + "' '" + (dir.path / "logs").string() + "'");
  EXPECT_EQ(ok.rc, 0) << ok.output;
  EXPECT_NE(ok.output.find("allreduce, 2 ranks x 1 node, forced algorithm TREE (NCCL's protocol) (file name allreduce_tree.txt)"),
            std::string::npos) << ok.output;
  std::ofstream(dir.path / "logs" / "ring_ll.txt") << "NCCL_ALGO=Tree\n" << body;
  const Result refused = dynamiccl("ingest -q --db '" + db + "' '" + (dir.path / "logs" / "ring_ll.txt").string() + "'");
  EXPECT_EQ(refused.rc, 2) << refused.output;
  EXPECT_NE(refused.output.find("refused, ambiguous forced configuration (env line NCCL_ALGO=Tree says TREE, file name "
                                "ring_ll.txt says RING)"),
            std::string::npos) << refused.output;
  EXPECT_NE(refused.output.find("ingested 0 of 1 files"), std::string::npos) << refused.output;
}

TEST(Cli, ReadOnlyCommandsCreateNothing) {
  TempDir dir;
  for (const std::string& cmd : {std::string("db stats"), std::string("db export-csv"), std::string("db applied")}) {
    const fs::path typo = dir.path / "typo" / "x.db";
    const Result r = dynamiccl(cmd + " --db '" + typo.string() + "'");
    EXPECT_NE(r.rc, 0) << cmd << "\n" << r.output;
    EXPECT_FALSE(fs::exists(dir.path / "typo")) << cmd;
    // The default path (no --db, no DYNAMICCL_DB) is not created either.
    const Result byDefault = dynamiccl("HOME='" + dir.path.string() + "' XDG_DATA_HOME= " + cmd);
    EXPECT_NE(byDefault.rc, 0) << byDefault.output;
    EXPECT_FALSE(fs::exists(dir.path / ".local")) << cmd;
  }
  const std::string db = storeWithRows(dir);
  const auto before = fs::last_write_time(db);
  const Result stats = dynamiccl("db stats --db '" + db + "'");
  EXPECT_EQ(stats.rc, 0) << stats.output;
  EXPECT_NE(stats.output.find("observations: 3"), std::string::npos) << stats.output;
  EXPECT_EQ(fs::last_write_time(db), before);
}

// Every command that reads a store or a file, given a FIFO, a device or garbage: it returns within the
// limit (timeout's 124 would mean a hang), non-zero, with one line that names the file.
TEST(Cli, StoreReadersNeverHangOnAFifoADeviceOrGarbage) {
  TempDir dir;
  const std::string fifo = (dir.path / "fifo.db").string();
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const std::string garbage = (dir.path / "garbage.db").string();
  std::ofstream(garbage) << std::string(10000, 'g');
  const std::string out = " -o '" + (dir.path / "out").string() + "'";
  const std::vector<std::pair<std::string, std::string>> commands = {
      {"db stats --db", ""}, {"db export-csv --db", out}, {"db applied --db", ""}, {"export --from-store", out},
      {"train --epochs 1 --db", out}, {"export", out}, {"validate", ""}, {"train --epochs 1 --no-store --data", out}, {"sim --params", ""},
      {"sim --topology", ""}};
  for (const std::string& bad : {fifo, std::string("/dev/zero"), garbage}) {
    for (const auto& [cmd, rest] : commands) {
      const Result r = dynamiccl::testing::runShell("env -u DYNAMICCL_DB timeout 30 " + kDynamiccl + " " + cmd + " '" +
                                                    bad + "'" + rest + " 2>&1");
      if (cmd.rfind("train", 0) == 0 && r.output.find("no LibTorch") != std::string::npos) continue;
      EXPECT_NE(r.rc, 124) << cmd << " " << bad << ": hung\n" << r.output;
      EXPECT_NE(r.rc, 0) << cmd << " " << bad << "\n" << r.output;
      EXPECT_NE(r.output.find(bad), std::string::npos) << cmd << " " << bad << "\n" << r.output;
      EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << cmd << " " << bad << ": one line\n" << r.output;
      EXPECT_FALSE(fs::exists(dir.path / "out")) << cmd << " " << bad;
    }
  }
}

TEST(Cli, ExportFromAStoreThatIsNotThereCreatesNothing) {
  TempDir dir;
  const Result byDefault = dynamiccl::testing::runShell("env -u DYNAMICCL_DB HOME='" + dir.path.string() +
                                                        "' XDG_DATA_HOME= " + kDynamiccl +
                                                        " export --from-store default 2>&1");
  EXPECT_NE(byDefault.rc, 0) << byDefault.output;
  EXPECT_TRUE(fs::is_empty(dir.path)) << byDefault.output;
  const fs::path typo = dir.path / "typo" / "x.db";
  const Result named = dynamiccl("export --from-store '" + typo.string() + "'");
  EXPECT_NE(named.rc, 0) << named.output;
  EXPECT_NE(named.output.find(typo.string()), std::string::npos) << named.output;
  EXPECT_TRUE(fs::is_empty(dir.path)) << named.output;
}

// SQLite leaves -wal and -shm files beside a WAL store a read-only connection opened; readers must not.
TEST(Cli, ReadingAStoreLeavesTheDirectoryAsItWas) {
  TempDir dir;
  const std::string db = storeWithRows(dir);
  auto listing = [&] {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir.path)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  };
  const auto before = listing();
  for (const std::string cmd : {"db stats", "db export-csv", "db applied", "export --from-store"}) {
    const std::string flag = cmd.rfind("export", 0) == 0 ? " " : " --db ";
    const Result r = dynamiccl(cmd + flag + "'" + db + "' > /dev/null");
    EXPECT_EQ(r.rc, 0) << cmd << "\n" << r.output;
    EXPECT_EQ(listing(), before) << cmd;
  }
}

}  // namespace

namespace {

// The NVIDIA CSV cannot say every rule: export names how many it left out and counts only what it wrote.
TEST(CliExport, TheNvidiaCsvSaysHowManyRulesItCannotHold) {
  TempDir dir;
  const std::string profile = (dir.path / "p.json").string();
  std::ofstream(profile) << R"({"format":"dynamiccl-profile","version":1,"name":"two","rules":[)"
                         << R"({"collective":"allreduce","bytes":[0,4095],"algo":"ring","proto":"ll"},)"
                         << R"({"collective":"allreduce","bytes":[4096,null],"algo":"tree"}]})";
  const std::string csv = (dir.path / "p.csv").string();
  const Result r = dynamiccl("export '" + profile + "' -f nvidia-csv -o '" + csv + "'");
  ASSERT_EQ(r.rc, 0) << r.output;
  EXPECT_NE(r.output.find("1 of 2 rules left out"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("(1 rules, nvidia-csv)"), std::string::npos) << r.output;
  std::ifstream in(csv);
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(text.find("allreduce,0,4095,ring,ll"), std::string::npos) << text;
  EXPECT_EQ(text.find("tree"), std::string::npos) << text;
}

// A rule that forces the algorithm alone is judged by the rows that did the same (NCCL_ALGO alone): the
// plugin runs the protocol NCCL's costs pick in Tree, which is what those rows measured.
TEST(CliReplay, ARuleForcingTheAlgorithmAloneIsJudgedByTheRowsThatDidTheSame) {
  TempDir dir;
  const std::string csv = (dir.path / "normalized.csv").string();
  const std::string sys = "\"H100-SXM5-80GB x8 per node HGX (three nodes)\"";
  std::ofstream out(csv);
  out << "system,collective,nranks,nnodes,bytes,algo,proto,nchannels,chunk,time_us,busbw_gbps,source_note\n";
  for (const auto& [bytes, default_us, tree_us] : {std::tuple{1ull << 30, 27000.0, 33000.0},
                                                   std::tuple{4ull << 30, 108000.0, 87000.0}}) {
    for (double jitter : {0.99, 1.0, 1.01}) {
      out << sys << ",allreduce,24,3," << bytes << ",default,default,,," << default_us * jitter << ",,run\n";
      out << sys << ",allreduce,24,3," << bytes << ",TREE,default,,," << tree_us * jitter << ",,run\n";
    }
  }
  out.close();
  const std::string profile = (dir.path / "p.json").string();
  std::ofstream(profile) << R"({"format":"dynamiccl-profile","version":1,"name":"tree alone","rules":[)"
                         << R"({"collective":"allreduce","bytes":[4294967296,null],"algo":"tree"}]})";
  const Result r = dynamiccl("replay --data '" + csv + "' --profile '" + profile + "' --trust all");
  ASSERT_EQ(r.rc, 0) << r.output;
  EXPECT_NE(r.output.find("judged 2 (1 kept NCCL's default)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("chosen/best:    geomean 1.000"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("chosen/default: geomean 0.898"), std::string::npos) << r.output;  // sqrt(87/108)
}

// `dynamiccl replay` applies unverified rules only when the user opts in (--trust all), as the plugin does.
TEST(CliReplay, UnverifiedRulesChangeNothingUnlessTrustAllIsGiven) {
  TempDir dir;
  const std::string csv = (dir.path / "normalized.csv").string();
  const std::string sys = "L40S-48GB x2 PCIe (no NVLink; topo NODE) 1 node";
  std::ofstream(csv) << "system,collective,nranks,nnodes,bytes,algo,proto,nchannels,chunk,time_us,busbw_gbps,source_note\n"
                     << sys << ",allreduce,2,1,1024,default,default,,,10.0,0,a\n"
                     << sys << ",allreduce,2,1,1024,default,default,,,10.2,0,b\n"
                     << sys << ",allreduce,2,1,1024,default,default,,,9.8,0,c\n"
                     << sys << ",allreduce,2,1,1024,TREE,default,,,12.0,0,d\n";
  const std::string profile = (dir.path / "p.json").string();
  std::ofstream(profile) << R"({"format":"dynamiccl-profile","version":1,"name":"unverified","rules":[)"
                         << R"({"collective":"allreduce","bytes":[0,1048576],"algo":"tree","proto":"ll"}]})";
  const Result dflt = dynamiccl("replay --data '" + csv + "' --profile '" + profile + "'");
  ASSERT_EQ(dflt.rc, 0) << dflt.output;
  EXPECT_NE(dflt.output.find("trust: verified"), std::string::npos) << dflt.output;
  EXPECT_NE(dflt.output.find("judged 1 (1 kept NCCL's default)"), std::string::npos) << dflt.output;
  EXPECT_NE(dflt.output.find("hardware: the data's"), std::string::npos) << dflt.output;
  const Result all = dynamiccl("replay --data '" + csv + "' --profile '" + profile + "' --trust all --json '" +
                               (dir.path / "points.json").string() + "'");
  ASSERT_EQ(all.rc, 0) << all.output;
  EXPECT_NE(all.output.find("trust: all"), std::string::npos) << all.output;
  EXPECT_NE(all.output.find("judged 1 (0 kept NCCL's default)"), std::string::npos) << all.output;
  EXPECT_NE(all.output.find("chosen/default: geomean 1.200"), std::string::npos) << all.output;
  std::ifstream points(dir.path / "points.json");
  const std::string json((std::istreambuf_iterator<char>(points)), std::istreambuf_iterator<char>());
  EXPECT_NE(json.find("\"choice\": \"TREE/LL\""), std::string::npos) << json;
  EXPECT_NE(dynamiccl("replay --data '" + csv + "' --profile '" + profile + "' --trust some").rc, 0);
}

// The search by runs on a synthetic cluster: the runs it used against the exhaustive grid's, per size decided.
TEST(CliTune, RunnerSearchesByRunsAndReportsRunsAgainstTheGrid) {
  TempDir dir;
  const Result r = dynamiccl("tune --backend runner --fake-cluster dgx-h100 --min-bytes 1024 --max-bytes 16777216 "
                             "--no-progress -o '" + (dir.path / "t.json").string() + "'");
  ASSERT_EQ(r.rc, 0) << r.output;
  int used = 0, grid = 0;
  const size_t at = r.output.find("runs used ");
  ASSERT_NE(at, std::string::npos) << r.output;
  ASSERT_EQ(std::sscanf(r.output.c_str() + at, "runs used %d vs exhaustive grid %d", &used, &grid), 2) << r.output;
  EXPECT_GT(used, 2);
  EXPECT_LT(used, grid);
  EXPECT_NE(r.output.find("simulated cluster dgx-h100"), std::string::npos);
  EXPECT_NE(r.output.find("decided"), std::string::npos);
  EXPECT_NE(r.output.find("evidence: simulated"), std::string::npos) << "a synthetic cluster's rules must not count as measured";
}

}  // namespace

namespace {

// A stand-in for nccl-tests' all_reduce_perf: reads the configuration the plugin's profile forces
// (as scripts/measure_nccl_tests.sh writes it) and prints nccl-tests result rows from a latency
// model: NCCL runs Ring/Simple; Ring/LL is faster below 32K; everything else is 3x slower.
const char* kFakeAllReducePerf = R"(#!/usr/bin/env bash
b=0 e=0 n=1
while [ $# -gt 0 ]; do case "$1" in -b) b=$2; shift 2;; -e) e=$2; shift 2;; -N) n=$2; shift 2;; *) shift;; esac; done
algo=$(grep -o '"algo":"[a-z_]*"' "$DYNAMICCL_PROFILE" | cut -d'"' -f4)
proto=$(grep -o '"proto":"[a-z0-9]*"' "$DYNAMICCL_PROFILE" | cut -d'"' -f4)
[ -n "${NCCL_DEBUG_SUBSYS:-}" ] && { s=$b; while [ $s -le $e ]; do echo "h:1:1 [0] NCCL INFO AllReduce: $s Bytes -> Algo 1 proto 2 time 1.0"; s=$((s*2)); done; }
echo "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong"
awk -v b=$b -v e=$e -v n=$n -v a="$algo" -v p="$proto" -v seed=$RANDOM 'BEGIN { srand(seed); run = 1 + 0.01 * (rand() - 0.5)
  for (c = 0; c < n; c++) for (s = b; s <= e; s *= 2) {
    t = 20 + s / 10000
    if (a == "ring" && p == "ll") t = 5 + s / 2000
    else if (a != "" && !(a == "ring" && p == "simple")) t = 3 * t
    t = t * run * (1 + 0.02 * (rand() - 0.5))
    printf "%12d %12d float sum -1 %8.2f 0.1 0.1 0 %8.2f 0.1 0.1 0\n", s, s / 4, t, t } }'
)";

TEST(CliTune, RunnerSearchesByRunsThroughTheMeasurementScript) {
  TempDir dir;
  const fs::path bin = dir.path / "all_reduce_perf";
  std::ofstream(bin) << kFakeAllReducePerf;
  fs::permissions(bin, fs::perms::owner_all);
  const std::string profile = (dir.path / "p.json").string();
  const Result r = dynamiccl("tune --backend runner --script '" + std::string(DYNAMICCL_SOURCE_DIR) +
                             "/scripts/measure_nccl_tests.sh' --launcher none --nccl-tests-dir '" + dir.path.string() +
                             "' --nranks 8 --preset dgx-h100 --min-bytes 1024 --max-bytes 1048576 --no-progress -o '" +
                             (dir.path / "t.json").string() + "' --profile '" + profile + "'");
  ASSERT_EQ(r.rc, 0) << r.output;
  int used = 0, grid = 0;
  const size_t at = r.output.find("runs used ");
  ASSERT_NE(at, std::string::npos) << r.output;
  ASSERT_EQ(std::sscanf(r.output.c_str() + at, "runs used %d vs exhaustive grid %d", &used, &grid), 2) << r.output;
  EXPECT_LT(used, grid);
  std::ifstream in(profile);
  const std::string json((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Ring/LL below 32K, measured; never Ring/Simple, which NCCL's TUNING lines say it runs anyway.
  EXPECT_NE(json.find("\"ll\""), std::string::npos) << r.output;
  EXPECT_EQ(json.find("\"simple\""), std::string::npos) << json;
  EXPECT_NE(json.find("measured-offline"), std::string::npos) << json;
  EXPECT_NE(r.output.find("allreduce         1K  decided   faster: ring/ll"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("allreduce         1M  decided   default stands"), std::string::npos) << r.output;
}

// The embedded L40S rows renamed to a machine no platform describes (a B300 of tomorrow).
// The 4-GPU L40S rows under a name no platform describes; treeFactor scales the forced Tree runs up to
// 1K (0.85: a gain their runs establish, 1: the measurements as they are).
std::string unknownHardwareCsv(const TempDir& dir, double treeFactor = 1.0) {
  std::ifstream in(dynamiccl::testing::shippedL40sCsv());
  const std::string path = (dir.path / "b300.csv").string();
  std::ofstream out(path);
  std::string line;
  std::getline(in, line);
  out << line << "\n";
  const std::string from = "L40S-48GB x4 PCIe (no NVLink; topo NODE) 1 node (Stanford FarmShare oat-0x)";
  while (std::getline(in, line)) {
    if (line.rfind(from, 0) != 0) continue;
    std::vector<std::string> cells;
    std::stringstream row(line.substr(from.size()));
    for (std::string cell; std::getline(row, cell, ',');) cells.push_back(cell);
    // cells: "", collective, nranks, nnodes, bytes, algo, proto, nchannels, chunk, time_us, ...
    if (cells.size() > 9 && cells[5] == "TREE" && std::stoull(cells[4]) <= 1024)
      cells[9] = std::to_string(std::stod(cells[9]) * treeFactor);
    out << "NVIDIA B300 SXM6 x4 (a box no platform file names)";
    for (size_t i = 1; i < cells.size(); ++i) out << "," << cells[i];
    if (!line.empty() && line.back() == ',') out << ",";
    out << "\n";
  }
  return path;
}

// `dynamiccl probe` prints the fingerprint the plugin computes here and writes it; where the host
// cannot say (no GPU here), it says so and fails rather than write a guess.
TEST(CliProbe, PrintsAndWritesTheFingerprintOrSaysWhatIsUnknown) {
  TempDir dir;
  const std::string file = (dir.path / "fp.json").string();
  const Result r = dynamiccl::testing::runShell(
      "env DYNAMICCL_TOPO=gpu_cc=103,nvlink_GBps=900,nics_per_node=8,nic_GBps=100 " +
      kDynamiccl + " probe -o '" + file + "' 2>&1");
  ASSERT_EQ(r.rc, 0) << r.output;
  EXPECT_NE(r.output.find("gpu_cc = 103  (DYNAMICCL_TOPO gpu_cc)"), std::string::npos) << r.output;
  std::ifstream in(file);
  const std::string json((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(json.find("\"gpu_cc\":103"), std::string::npos) << json;
  const Result bare = dynamiccl::testing::runShell(
      "env -u DYNAMICCL_TOPO " +
      kDynamiccl + " probe -o '" + (dir.path / "none.json").string() + "' 2>&1");
  if (bare.output.find("gpu_cc unknown") != std::string::npos) {  // this machine has no GPU (CI): refused, nothing written
    EXPECT_NE(bare.rc, 0) << bare.output;
    EXPECT_FALSE(fs::exists(dir.path / "none.json"));
  }
}

// The main job on measurements needs no platform file either: on hardware no platform describes, the
// simulator's proposal step is skipped and said so, the stand-in model only orders NCCL's table, and the
// job searches every measured arm; the table and its checks hold as on known hardware.
TEST(CliDemo, RunsOnMeasurementsOfHardwareNoPlatformDescribes) {
  TempDir dir;
  const std::string csv = unknownHardwareCsv(dir, 0.85);
  const Result r = dynamiccl("demo --quick --no-plots --data '" + csv + "' --out '" + (dir.path / "out").string() + "'");
  ASSERT_EQ(r.rc, 0) << r.output;
  EXPECT_NE(r.output.find("no platform describes 'NVIDIA B300 SXM6 x4 (a box no platform file names)'"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("Tune on the simulator: skipped"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("every rank made the same decisions"), std::string::npos) << r.output;
  // Tree's runs up to 1K were made 15% faster: a gain they establish, which the job finds.
  EXPECT_NE(r.output.find("tree/ll promoted"), std::string::npos) << r.output;
  // Measuring is priced (the leader profiles what half the budget affords): a quick job of 25,000
  // calls reaches the established best at all but at most one key, whose trial it may not finish.
  std::ifstream summary(dir.path / "out" / "summary.json");
  const std::string totals((std::istreambuf_iterator<char>(summary)), {});
  EXPECT_TRUE(totals.find("\"within_1pct_of_established_best\": 25") != std::string::npos ||
              totals.find("\"within_1pct_of_established_best\": 24") != std::string::npos)
      << totals;
  EXPECT_TRUE(r.output.find("verified.json through the plugin alone (as `dynamiccl replay`): the job's final configuration "
                            "at 25/25 keys") != std::string::npos ||
              r.output.find("verified.json through the plugin alone (as `dynamiccl replay`): the job's final configuration "
                            "at 24/25 keys") != std::string::npos)
      << r.output;
  std::ifstream in(dir.path / "out" / "verified.json");
  const std::string verified((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(verified.find("measured-in-job"), std::string::npos) << verified;
  EXPECT_EQ(verified.find("gpu_cc"), std::string::npos) << "the stand-in's facts are never written as the machine's\n"
                                                        << verified;
}

// Tuning from measurements needs no platform file: on hardware no platform describes, the rules carry no
// fingerprint (unknown hardware, said), or the one declared with --fingerprint, never a stand-in's.
TEST(CliTune, ReplayOnUnknownHardwareWritesAProfileWithTheDeclaredFingerprintOrNone) {
  TempDir dir;
  const std::string csv = unknownHardwareCsv(dir);
  const std::string unknown = (dir.path / "unknown.json").string();
  const Result r = dynamiccl("tune --backend replay --dataset '" + csv + "' --nranks 4 --min-gain 0 --confidence 0.5 "
                             "-o '" + (dir.path / "report.json").string() + "' --profile '" + unknown + "'");
  ASSERT_EQ(r.rc, 0) << r.output;
  EXPECT_NE(r.output.find("unknown hardware"), std::string::npos) << r.output;
  std::ifstream in(unknown);
  const std::string profile((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(profile.find("gpu_cc"), std::string::npos) << "no stand-in's fact is written as the machine's\n" << profile;
  const std::string fp = (dir.path / "fp.json").string();
  std::ofstream(fp) << R"({"gpu_cc":103,"nvlink_GBps":900,"nics_per_node":8,"nic_GBps":100})";
  const std::string declared = (dir.path / "declared.json").string();
  const Result d = dynamiccl("tune --backend replay --dataset '" + csv + "' --nranks 4 --fingerprint '" + fp +
                             "' -o '" + (dir.path / "report2.json").string() + "' --profile '" + declared + "'");
  ASSERT_EQ(d.rc, 0) << d.output;
  EXPECT_NE(d.output.find("\"gpu_cc\":103"), std::string::npos) << d.output;
}

}  // namespace

namespace {

// From measurements to one profile in one command: every shape tuned, a table per shape, and the
// profile loads with rules pinned to the shapes that earned them.
TEST(CliProfile, OneCommandFromMeasurementsToAProfileForEveryShape) {
  TempDir dir;
  const std::string out = (dir.path / "profile.json").string();
  const std::string data = std::string(DYNAMICCL_SOURCE_DIR) + "/offline/demo/data/l40s-pcie-cs244c/normalized.csv";
  const Result r = dynamiccl("profile '" + data + "' -o '" + out + "' --work-dir '" + (dir.path / "work").string() + "'");
  ASSERT_EQ(r.rc, 0) << r.output;
  EXPECT_NE(r.output.find("2r/1n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("4r/1n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("verdict (real runs)"), std::string::npos) << r.output;
  auto p = dynamiccl::policy::loadProfileFile(out);
  ASSERT_TRUE(p.ok()) << p.error();
  ASSERT_FALSE(p->rules.empty()) << r.output;
  for (const dynamiccl::policy::Rule& rule : p->rules) {
    EXPECT_EQ(rule.minRanks, rule.maxRanks);  // each rule for its own shape
  }
  const Result none = dynamiccl("profile '" + (dir.path / "nothing").string() + "' -o '" + out + "'");
  EXPECT_NE(none.rc, 0) << none.output;
}

// Profiles tuned one shape at a time become one; two rules answering the same calls differently are
// refused with a line naming both; the merged file reads back and keeps every rule.
TEST(CliMerge, MergesShapesAndRefusesConflicts) {
  TempDir dir;
  auto write = [&](const std::string& name, const std::string& rules) {
    const std::string path = (dir.path / name).string();
    std::ofstream(path) << R"({"format":"dynamiccl-profile","version":2,"name":")" << name << R"(","rules":[)" << rules << "]}";
    return path;
  };
  const std::string two = write("two.json", R"({"collective":"allreduce","ranks":[2,2],"bytes":[0,4096],"algo":"tree","proto":"ll"})");
  const std::string four = write("four.json", R"({"collective":"allreduce","ranks":[4,4],"bytes":[0,4096],"algo":"ring","proto":"ll"})");
  const std::string clash = write("clash.json", R"({"collective":"allreduce","ranks":[2,8],"bytes":[1024,2048],"algo":"ring","proto":"simple"})");
  const std::string out = (dir.path / "merged.json").string();
  const Result ok = dynamiccl("merge '" + two + "' '" + four + "' -o '" + out + "'");
  ASSERT_EQ(ok.rc, 0) << ok.output;
  EXPECT_NE(ok.output.find("(2 rules)"), std::string::npos) << ok.output;
  EXPECT_EQ(dynamiccl("validate '" + out + "'").rc, 0);
  const Result bad = dynamiccl("merge '" + two + "' '" + clash + "' -o '" + (dir.path / "x.json").string() + "'");
  EXPECT_NE(bad.rc, 0) << bad.output;
  EXPECT_NE(bad.output.find("conflict: "), std::string::npos) << bad.output;
  EXPECT_NE(bad.output.find("clash.json"), std::string::npos) << bad.output;
  EXPECT_FALSE(fs::exists(dir.path / "x.json"));
}

// Node stores gathered into one for offline work: each input's rows once; the same file ingested on
// two nodes, or a store merged twice, adds nothing the second time.
TEST(CliDb, MergeGathersNodeStoresOnce) {
  TempDir a, b, out;
  const std::string dbA = storeWithRows(a), dbB = storeWithRows(b), all = (out.path / "all.db").string();
  const Result first = dynamiccl("db merge '" + all + "' '" + dbA + "' '" + dbB + "'");
  ASSERT_EQ(first.rc, 0) << first.output;
  EXPECT_NE(first.output.find(dbA + ": 1 runs (0 already there), 3 observations"), std::string::npos) << first.output;
  EXPECT_NE(first.output.find(dbB + ": 0 runs (1 already there), 0 observations"), std::string::npos) << first.output;
  const Result again = dynamiccl("db merge '" + all + "' '" + dbA + "'");
  ASSERT_EQ(again.rc, 0) << again.output;
  EXPECT_NE(again.output.find("0 runs (1 already there)"), std::string::npos) << again.output;
  const Result stats = dynamiccl("db stats --db '" + all + "'");
  EXPECT_NE(stats.output.find("observations: 3\n"), std::string::npos) << stats.output;
  EXPECT_NE(dynamiccl("db merge '" + all + "' '" + (out.path / "missing.db").string() + "'").rc, 0);
}

}  // namespace

namespace {

// An empty profile (0 bytes, or nothing but whitespace) is refused with one line: no tool writes one,
// and both readers would take it for a profile of no rules.
TEST(CliValidate, AnEmptyFileIsRefused) {
  TempDir dir;
  for (const std::string& content : {std::string(), std::string(" \n\t\r\n")}) {
    const std::string path = (dir.path / "empty.json").string();
    std::ofstream(path) << content;
    for (const char* format : {"", " --format csv", " --format json"}) {
      const Result r = dynamiccl("validate '" + path + "'" + format);
      EXPECT_EQ(r.rc, 1) << format << "\n" << r.output;
      EXPECT_NE(r.output.find(path + " is empty"), std::string::npos) << r.output;
      EXPECT_EQ(lines(r.output), 1) << r.output;
    }
  }
}

// Every file a command writes goes through the checked writer: one it cannot write is an error (exit 1,
// no "wrote"), for tune's per-size CSV as for the rest (crossval's: lab/tests/lab_cli_test.cpp).
TEST(CliOutputs, TheCsvWritersSayWhenTheyCannotWrite) {
  TempDir dir;
  const std::string data = std::string(DYNAMICCL_SOURCE_DIR) + "/offline/demo/data/l40s-pcie-cs244c/normalized.csv";
  const std::string nowhere = (dir.path / "no" / "such" / "dir.csv").string();
  const Result tune = dynamiccl("tune --backend replay --dataset '" + data + "' --nranks 4 --points '" + nowhere +
                                "' -o '" + (dir.path / "report.json").string() + "'");
  EXPECT_EQ(tune.rc, 1) << tune.output;
  EXPECT_NE(tune.output.find("cannot open " + nowhere), std::string::npos) << tune.output;
  EXPECT_EQ(tune.output.find("wrote " + nowhere), std::string::npos) << tune.output;
}

// profile names every input it could not read, a directory as well as a file, and then writes nothing
// (exit 2) unless told to profile the rest; run as nobody, since root reads a mode-000 directory.
TEST(CliProfile, NamesEveryInputItCouldNotReadDirectoriesIncluded) {
  const std::string asNobody = dynamiccl::testing::runShell("command -v setpriv").rc == 0
                                   ? "setpriv --reuid=65534 --regid=65534 --clear-groups "
                               : dynamiccl::testing::runShell("command -v runuser").rc == 0 ? "runuser -u nobody -- "
                                                                                             : "";
  if (asNobody.empty()) GTEST_SKIP() << "neither setpriv nor runuser is here to drop root's right to read anything";
  if (dynamiccl::testing::runShell(asNobody + "test -x '" + kDynamiccl + "'").rc != 0)
    GTEST_SKIP() << "the built tool is not reachable by an unprivileged user here";
  TempDir dir;
  fs::permissions(dir.path, fs::perms::all);
  const fs::path logs = dir.path / "logs";
  fs::create_directories(logs / "readable");
  fs::create_directories(logs / "closed");
  fs::copy_file(std::string(DYNAMICCL_SOURCE_DIR) + "/offline/demo/data/l40s-pcie-cs244c/normalized.csv",
                logs / "readable" / "normalized.csv");
  std::ofstream(logs / "closed" / "other.csv") << "another system's data\n";
  std::ofstream(logs / "secret.log") << "unreadable\n";
  for (const auto& e : fs::recursive_directory_iterator(logs)) fs::permissions(e.path(), fs::perms::all);
  fs::permissions(logs, fs::perms::all);
  fs::permissions(logs / "closed", fs::perms::none);
  fs::permissions(logs / "secret.log", fs::perms::none);
  const std::string out = (dir.path / "profile.json").string();
  const std::string run = asNobody + "env -u DYNAMICCL_DB TMPDIR='" + dir.path.string() + "' " + kDynamiccl + " profile '" +
                          logs.string() + "' -o '" + out + "' -q";
  const Result r = dynamiccl::testing::runShell(run + " 2>&1");
  EXPECT_EQ(r.rc, 2) << r.output;
  EXPECT_NE(r.output.find("not read: " + (logs / "closed").string() + ": Permission denied"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("not read: " + (logs / "secret.log").string()), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("2 input(s) could not be read; nothing written"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(out));
  const Result rest = dynamiccl::testing::runShell(run + " --skip-unreadable 2>&1");
  EXPECT_EQ(rest.rc, 0) << rest.output;
  EXPECT_NE(rest.output.find("not read: " + (logs / "closed").string()), std::string::npos) << rest.output;
  EXPECT_TRUE(fs::exists(out)) << rest.output;
  fs::permissions(logs / "closed", fs::perms::all);  // so the directory can be removed
}

}  // namespace

// show judges a rule's trust from the hardware the plugin sees: this host's probe with
// DYNAMICCL_TOPO over it. A rule measured on the hardware the variables declare is verified, and
// the decision map shows it applied.
TEST(CliShow, TrustReadsTheTopologyOverridesThePluginHonours) {
  TempDir dir;
  const std::string profile = (dir.path / "measured.json").string();
  std::ofstream(profile)
      << R"({"format":"dynamiccl-profile","version":2,"rules":[{"algo":"ring","proto":"ll128","channels":7,)"
         R"("evidence":{"provenance":"measured-offline","fingerprint":{"gpu_cc":103,"nvlink_GBps":900,)"
         R"("nics_per_node":8,"nic_GBps":100},"nccl_version":"2.28.9","samples":27,"default_samples":27,)"
         R"("gain":0.2,"gain_ci":[0.1,0.3],"date":"2026-11-20"}}]})";
  const Result r = dynamiccl::testing::runShell(kProbeFacts + "env -u DYNAMICCL_DB " + kDynamiccl + " show -p '" +
                                                profile + "' -c allreduce --max-bytes 4096 2>&1");
  ASSERT_EQ(r.rc, 0) << r.output;
  EXPECT_NE(r.output.find("-- verified\n"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("unverified ("), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("RING/LL128 channels=7"), std::string::npos) << "the plugin did not apply it:\n" << r.output;
}
