// Each fingerprint source on its own, including machines where sysfs or NVML say nothing.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "features/features.h"

namespace dynamiccl {
namespace {

namespace fs = std::filesystem;

// A throwaway directory tree standing in for /sys.
struct FakeSys {
  fs::path root;
  explicit FakeSys(const std::string& suffix = "")
      : root(fs::temp_directory_path() / ("dynamiccl-sys-" + std::to_string(::getpid()) + "-" +
                                          ::testing::UnitTest::GetInstance()->current_test_info()->name() + suffix)) {
    fs::create_directories(root);
  }
  ~FakeSys() { fs::remove_all(root); }
  void write(const std::string& rel, const std::string& content) {
    fs::create_directories((root / rel).parent_path());
    std::ofstream(root / rel) << content << "\n";
  }
};

TEST(SysfsNics, ReadsInfinibandRates) {
  FakeSys sys;
  for (int i = 0; i < 4; ++i) sys.write("class/infiniband/mlx5_" + std::to_string(i) + "/ports/1/rate", "400 Gb/sec (4X NDR)");
  sys.write("class/infiniband/mlx5_9/ports/1/rate", "garbage");
  sys.write("class/net/eth0/speed", "100000");
  const SysfsNics n = readSysfsNics(sys.root.string());
  EXPECT_EQ(n.source, "infiniband");
  EXPECT_EQ(n.count, 4);
  EXPECT_DOUBLE_EQ(n.speed_GBps, 50.0);
}

TEST(SysfsNics, FallsBackToPhysicalEthernet) {
  FakeSys sys;
  sys.write("class/net/eth0/speed", "200000");
  sys.write("class/net/eth0/device/vendor", "0x15b3");
  sys.write("class/net/lo/speed", "100000");  // no device link: virtual
  sys.write("class/net/eth1/device/vendor", "0x15b3");
  sys.write("class/net/eth1/speed", "-1");  // link down
  const SysfsNics n = readSysfsNics(sys.root.string());
  EXPECT_EQ(n.source, "net");
  EXPECT_EQ(n.count, 1);
  EXPECT_DOUBLE_EQ(n.speed_GBps, 25.0);
}

TEST(SysfsNics, EmptyOrMissingTreeSaysNothing) {
  FakeSys sys;
  EXPECT_EQ(readSysfsNics(sys.root.string()).count, 0);
  EXPECT_EQ(readSysfsNics("/nonexistent/dynamiccl").count, 0);
  EXPECT_EQ(readSysfsNics("/nonexistent/dynamiccl").source, "");
}

// An 8-GPU AMD node as the kernel's KFD topology shows it: a CPU node (no SIMDs), GPU nodes 1-8 with
// their gfx target, and from GPU 1 a PCIe link to the CPU and XGMI links (type 11, MB/s) to the others.
void writeKfdNode(FakeSys& sys, int gpus, int64_t gfx, int64_t xgmi_MBps) {
  const std::string nodes = "class/kfd/kfd/topology/nodes/";
  sys.write(nodes + "0/properties", "cpu_cores_count 96\nsimd_count 0\ngfx_target_version 0");
  for (int n = 1; n <= gpus; ++n)
    sys.write(nodes + std::to_string(n) + "/properties",
              "cpu_cores_count 0\nsimd_count 1216\ngfx_target_version " + std::to_string(gfx) + "\nnum_xcc 8");
  sys.write(nodes + "1/io_links/0/properties", "type 2\nnode_from 1\nnode_to 0\nmax_bandwidth 64000");
  for (int n = 2; n <= gpus; ++n)
    sys.write(nodes + "1/io_links/" + std::to_string(n - 1) + "/properties",
              "type 11\nnode_from 1\nnode_to " + std::to_string(n) + "\nmax_bandwidth " + std::to_string(xgmi_MBps));
}

TEST(KfdProbe, ReadsTheArchitectureAndTheXgmiFabricOfAnAmdNode) {
  FakeSys sys;
  writeKfdNode(sys, 8, 90402, 64000);
  const auto kfd = readKfdGpus(sys.root.string());
  ASSERT_TRUE(kfd);
  EXPECT_EQ(kfd->count, 8);
  EXPECT_EQ(kfd->arch, "gfx942");
  EXPECT_EQ(kfd->xgmiLinks, 7);                     // the PCIe link to the CPU is not the fabric
  EXPECT_DOUBLE_EQ(kfd->xgmiBwPerGpu_GBps, 448.0);  // 7 x 64 GB/s
  FakeSys mi250("-mi250");
  writeKfdNode(mi250, 2, 90010, 50000);
  EXPECT_EQ(readKfdGpus(mi250.root.string())->arch, "gfx90a");  // the stepping is a hex digit
  // Where NVML answers nothing the fingerprint takes XGMI for the scale-up fabric, and no gpu_cc.
  const HostSources host = probeHostSources(sys.root.string(), "/nonexistent/libnvidia-ml.so.1");
  ASSERT_TRUE(host.kfd);
  const TopologyFingerprint fp = buildFingerprint(CommShape{}, host);
  EXPECT_DOUBLE_EQ(fp.nvlinkBwPerGpu_GBps, 448.0);
  EXPECT_EQ(fp.computeCap, 0);
}

TEST(KfdProbe, NoTreeABrokenTreeOrCpusOnlySayNothing) {
  FakeSys sys;
  EXPECT_FALSE(readKfdGpus(sys.root.string()));
  EXPECT_FALSE(readKfdGpus("/nonexistent/dynamiccl"));
  sys.write("class/kfd/kfd/topology/nodes/0/properties", "cpu_cores_count 96\nsimd_count 0");
  sys.write("class/kfd/kfd/topology/nodes/x/properties", "garbage garbage");
  EXPECT_FALSE(readKfdGpus(sys.root.string()));
  fs::create_directories(sys.root / "class/kfd/kfd/topology/nodes/1");
  ASSERT_EQ(mkfifo((sys.root / "class/kfd/kfd/topology/nodes/1/properties").c_str(), 0600), 0);
  EXPECT_FALSE(readKfdGpus(sys.root.string())) << "a FIFO is refused, never opened blocking";
}

TEST(Nvml, AbsentLibraryDegradesToAnError) {
  auto info = readNvml("libdynamiccl-no-such-nvml.so.1");
  ASSERT_FALSE(info.ok());
  EXPECT_NE(info.error().find("not available"), std::string::npos);
  // The real name is absent on machines without the driver: either way no crash, a value back.
  auto real = readNvml();
  if (real) {
    EXPECT_GT(real->gpuCount, 0);
  }
}

TEST(Nvml, LibraryWithoutNvmlSymbolsIsRejected) {
  auto info = readNvml("libc.so.6");
  ASSERT_FALSE(info.ok());
  EXPECT_NE(info.error().find("symbol"), std::string::npos);
}

TEST(TopoOverrides, ParsesTheProfilesFingerprintKeysAndRefusesABadTextWhole) {
  auto o = parseTopoOverrides("gpu_cc=90,nvlink_GBps=400,nics_per_node=8,nic_GBps=25,ranks_per_node=8");
  ASSERT_TRUE(o.ok()) << o.error();
  EXPECT_EQ(o->computeCap, 90);
  EXPECT_EQ(o->nvlinkBw_GBps, 400.0);
  EXPECT_EQ(o->nics, 8);
  EXPECT_EQ(o->nicSpeed_GBps, 25.0);
  EXPECT_EQ(o->ranksPerNode, 8);
  EXPECT_EQ(topoOverridesText(*o), "gpu_cc=90,nvlink_GBps=400,nics_per_node=8,nic_GBps=25,ranks_per_node=8");
  const std::pair<const char*, const char*> bad[] = {
      {"gpu_cc=90,ranks_per_node=8.5", "ranks_per_node must be an integer"},
      {"nics_per_node=-3", "nics_per_node must be an integer in 1..1000000"},
      {"gpu_cc=abc", "gpu_cc must be an integer"},
      {"nic_GBps=1e7", "nic_GBps must be a number in (0, 1e+06]"},
      {"nics=8", "unknown key \"nics\""},
      {"gpu_cc=90,gpu_cc=80", "given twice"},
      {"gpu_cc", "expected key=value"},
  };
  for (const auto& [text, why] : bad) {
    auto refused = parseTopoOverrides(text);
    ASSERT_FALSE(refused.ok()) << text;
    EXPECT_NE(refused.error().find(why), std::string::npos) << text << ": " << refused.error();
  }
}

TEST(TopoOverrides, NvlinkZeroMeansNoNvlinkOtherZerosAreRefused) {
  auto o = parseTopoOverrides("nvlink_GBps=0");
  ASSERT_TRUE(o.ok());
  ASSERT_TRUE(o->nvlinkBw_GBps.has_value());  // a PCIe-only cluster can be declared through the environment
  EXPECT_EQ(*o->nvlinkBw_GBps, 0.0);
  EXPECT_EQ(topoOverridesText(*o), "nvlink_GBps=0");
  EXPECT_FALSE(parseTopoOverrides("nvlink_GBps=0,nics_per_node=0").ok());
  EXPECT_FALSE(parseTopoOverrides("nic_GBps=0").ok());
}

// What the tools set for the plugin reads back to the same facts, fractions included.
TEST(TopoOverrides, TheTextReadsBackToTheSameFacts) {
  TopoOverrides o;
  o.nvlinkBw_GBps = 0.1 + 0.2;
  o.nicSpeed_GBps = 12.5;
  o.ranksPerNode = 4;
  auto back = parseTopoOverrides(topoOverridesText(o));
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(*back, o);
  EXPECT_EQ(topoOverridesText(TopoOverrides{}), "");
}

TEST(Fingerprint, MergesSourcesWithOverridesLast) {
  FakeSys sys;
  for (int i = 0; i < 8; ++i) sys.write("class/infiniband/mlx5_" + std::to_string(i) + "/ports/1/rate", "400 Gb/sec");
  // H800: 400 GB/s NVLink per GPU, 8 x 200 Gb/s NICs -> 400 / 25 = 16 (operator's word via env).
  HostSources host = probeHostSources(sys.root.string(), "libdynamiccl-no-such-nvml.so.1",
                                      *parseTopoOverrides("gpu_cc=90,nvlink_GBps=400,nic_GBps=25"));
  EXPECT_FALSE(host.nvml);
  CommShape shape{.commId = 1, .nRanks = 16, .nNodes = 2, .minRanksPerNode = 8, .maxRanksPerNode = 8};
  const TopologyFingerprint fp = buildFingerprint(shape, host);
  EXPECT_EQ(fp.ranksPerNode, 8);
  EXPECT_EQ(fp.nicsPerNode, 8);
  EXPECT_EQ(fp.computeCap, 90);
  EXPECT_DOUBLE_EQ(fp.nicSpeed_GBps, 25.0);
  EXPECT_DOUBLE_EQ(fp.nvlinkToNicRatio(), 16.0);
  EXPECT_NE(fp.text().find("ratio=16.0"), std::string::npos);
}

TEST(Fingerprint, NothingKnownLeavesZerosNotGarbage) {
  HostSources host = probeHostSources("/nonexistent", "libdynamiccl-no-such-nvml.so.1");
  const TopologyFingerprint fp = buildFingerprint(CommShape{.nRanks = 8, .nNodes = 1}, host);
  EXPECT_EQ(fp.nicsPerNode, 0);
  EXPECT_EQ(fp.computeCap, 0);
  EXPECT_EQ(fp.nvlinkToNicRatio(), 0.0);
  float ctx[kContextFeatures];
  encodeContext(fp, Collective::AllReduce, 1 << 20, {}, ctx);
  for (float v : ctx) EXPECT_TRUE(std::isfinite(v));
}

TEST(SizeFeatures, LogSizeAndBytesPerRank) {
  EXPECT_DOUBLE_EQ(log2Bytes(0), 0.0);
  EXPECT_DOUBLE_EQ(log2Bytes(1024), 10.0);
  TopologyFingerprint fp;
  fp.nRanks = 16;
  float ctx[kContextFeatures];
  encodeContext(fp, Collective::AllGather, 1 << 20, {}, ctx);
  EXPECT_FLOAT_EQ(ctx[0], 20.0f / 32);
  EXPECT_FLOAT_EQ(ctx[1], 16.0f / 32);  // 1 MiB / 16 ranks = 64 KiB
  EXPECT_EQ(ctx[2 + 2], 1.0f);
}

}  // namespace
}  // namespace dynamiccl
