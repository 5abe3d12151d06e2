// The profile readers: our JSON and NVIDIA's example CSV, and every semantic error they must refuse.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "policy/json_limits.h"
#include "policy/policy.h"
#include "test_support.h"

namespace dynamiccl::policy {
namespace {

using dynamiccl::testing::profileJson;

TEST(ProfileJson, ParsesAFullRule) {
  auto p = parseProfileJson(profileJson(
      R"({"collective":"allreduce","bytes":[1024,65535],"nodes":[1,4],"ranks":[8,null],"pipe_ops":2,"reg_buff":1,
          "algo":"RING","proto":"LL128","channels":16,"chunk":131072,"confidence":0.75})"));
  ASSERT_TRUE(p.ok()) << p.error();
  ASSERT_EQ(p->rules.size(), 1u);
  const Rule& r = p->rules[0];
  EXPECT_EQ(r.collective, Collective::AllReduce);
  EXPECT_EQ(r.minBytes, 1024u);
  EXPECT_EQ(r.maxBytes, 65535u);
  EXPECT_EQ(r.minNodes, 1);
  EXPECT_EQ(r.maxNodes, 4);
  EXPECT_EQ(r.minRanks, 8);
  EXPECT_EQ(r.maxRanks, INT_MAX);
  EXPECT_EQ(r.numPipeOps, 2);
  EXPECT_EQ(r.regBuff, 1);
  EXPECT_EQ(r.decision.algo, Algo::Ring);
  EXPECT_EQ(r.decision.proto, Proto::LL128);
  EXPECT_EQ(r.decision.nChannels, 16);
  EXPECT_EQ(r.decision.chunkBytes, 131072u);
  EXPECT_DOUBLE_EQ(r.confidence, 0.75);
  EXPECT_EQ(p->name, "test");
}

TEST(ProfileJson, RoundTripsThroughWriter) {
  auto p = parseProfileJson(profileJson(
      R"({"collective":"allgather","bytes_per_rank":[0,4096],"algo":"pat","proto":"simple"},
         {"collective":"any","bytes":[1,null],"channels":4})"));
  ASSERT_TRUE(p.ok()) << p.error();
  auto again = parseProfileJson(profileToJson(*p));
  ASSERT_TRUE(again.ok()) << again.error();
  ASSERT_EQ(again->rules.size(), 2u);
  EXPECT_EQ(again->rules[0].sizeKey, SizeKey::BytesPerRank);
  EXPECT_EQ(again->rules[0].decision, p->rules[0].decision);
  EXPECT_FALSE(again->rules[1].collective.has_value());
  EXPECT_EQ(again->rules[1].maxBytes, UINT64_MAX);
  EXPECT_EQ(again->rules[1].decision.nChannels, 4);
  EXPECT_TRUE(again->rules[1].decision.keepsAlgoProto());
}

// An algorithm alone forces it and leaves the protocol to NCCL (what a dataset's half-forced rows
// measured); it reads back as such, and the NVIDIA CSV, which cannot say it, leaves it out.
TEST(ProfileJson, AnAlgorithmAloneLeavesTheProtocolToNccl) {
  auto p = parseProfileJson(profileJson(R"({"collective":"allreduce","bytes":[1,null],"algo":"tree"})"));
  ASSERT_TRUE(p.ok()) << p.error();
  ASSERT_EQ(p->rules.size(), 1u);
  EXPECT_TRUE(p->rules[0].decision.leavesProtoToNccl());
  EXPECT_EQ(p->rules[0].decision.algo, Algo::Tree);
  EXPECT_EQ(decisionLabel(p->rules[0].decision), "tree/default");
  auto again = parseProfileJson(profileToJson(*p));
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_EQ(again->rules[0].decision, p->rules[0].decision);
  EXPECT_EQ(profileToNvidiaCsv(*p).find("tree"), std::string::npos) << profileToNvidiaCsv(*p);
}

// A profile whose "fingerprint" key is `fingerprint` (JSON text).
std::string profileWithFingerprint(const std::string& fingerprint) {
  return R"({"format":"dynamiccl-profile","version":1,"fingerprint":)" + fingerprint + R"(,"rules":[]})";
}

TEST(ProfileJson, ReadsTheDeclaredClusterHardware) {
  auto p = parseProfileJson(profileWithFingerprint(
      R"({"gpu_cc":90,"nvlink_GBps":400,"nics_per_node":8,"nic_GBps":25,"source":"sim preset h800"})"));
  ASSERT_TRUE(p.ok()) << p.error();
  ASSERT_TRUE(p->hardware.has_value());
  EXPECT_EQ(p->hardware->computeCap, 90);
  EXPECT_DOUBLE_EQ(p->hardware->nvlinkBwPerGpu_GBps, 400.0);
  EXPECT_EQ(p->hardware->nicsPerNode, 8);
  EXPECT_DOUBLE_EQ(p->hardware->nicSpeed_GBps, 25.0);
  EXPECT_EQ(p->hardware->source, "sim preset h800");
  auto again = parseProfileJson(profileToJson(*p));  // the writer keeps it (export, tune reports)
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_EQ(again->hardware, p->hardware);

  auto pcie = parseProfileJson(profileWithFingerprint(R"({"gpu_cc":89,"nvlink_GBps":0,"nics_per_node":2,"nic_GBps":12.5})"));
  ASSERT_TRUE(pcie.ok()) << pcie.error();  // 0: no NVLink
  EXPECT_EQ(pcie->hardware->nvlinkBwPerGpu_GBps, 0.0);
  EXPECT_FALSE(parseProfileJson(profileJson(R"({"algo":"ring","proto":"ll"})"))->hardware.has_value());
}

struct BadCase {
  const char* name;
  std::string text;
  const char* expectInError;
};

class ProfileJsonRejects : public ::testing::TestWithParam<BadCase> {};

TEST_P(ProfileJsonRejects, WithAClearMessage) {
  auto p = parseProfileJson(GetParam().text);
  ASSERT_FALSE(p.ok()) << GetParam().name;
  EXPECT_NE(p.error().find(GetParam().expectInError), std::string::npos) << p.error();
}

const BadCase kBadJson[] = {
    {"not json", "{\"format\": ", "not valid JSON"},
    {"array top", "[]", "object"},
    {"wrong format", R"({"format":"other","version":1,"rules":[]})", "format"},
    {"newer version", R"({"format":"dynamiccl-profile","version":99,"rules":[]})", "newer"},
    {"unknown top key", R"({"format":"dynamiccl-profile","version":1,"rules":[],"rulez":[]})", "rulez"},
    {"unknown algo", profileJson(R"({"algo":"rign","proto":"ll"})"), "unknown algo"},
    {"unknown proto", profileJson(R"({"algo":"ring","proto":"ll64"})"), "unknown proto"},
    {"unknown collective", profileJson(R"({"collective":"alltoall","algo":"ring","proto":"ll"})"), "collective"},
    {"unknown rule key", profileJson(R"({"algo":"ring","proto":"ll","chanels":3})"), "chanels"},
    {"inverted bytes", profileJson(R"({"bytes":[100,10],"algo":"ring","proto":"ll"})"), "inverted"},
    {"inverted nodes", profileJson(R"({"nodes":[4,2],"algo":"ring","proto":"ll"})"), "inverted"},
    {"negative channels", profileJson(R"({"algo":"ring","proto":"ll","channels":-2})"), "channels"},
    {"too many channels", profileJson(R"({"algo":"ring","proto":"ll","channels":65})"), "channels"},
    {"fractional channels", profileJson(R"({"algo":"ring","proto":"ll","channels":2.5})"), "integer"},
    {"negative bytes", profileJson(R"({"bytes":[-1,10],"algo":"ring","proto":"ll"})"), "non-negative"},
    {"NaN literal", profileJson(R"({"algo":"ring","proto":"ll","confidence":NaN})"), "not valid JSON"},
    {"confidence range", profileJson(R"({"algo":"ring","proto":"ll","confidence":1.5})"), "confidence"},
    {"proto without algo", profileJson(R"({"proto":"ll"})"), "needs its algo"},
    {"decides nothing", profileJson(R"({"bytes":[0,10]})"), "decides nothing"},
    {"chunk below grain", profileJson(R"({"algo":"ring","proto":"ll","chunk":8})"), "chunk"},
    {"pipe_ops zero", profileJson(R"({"algo":"ring","proto":"ll","pipe_ops":0})"), "pipe_ops"},
    {"reg_buff 2", profileJson(R"({"algo":"ring","proto":"ll","reg_buff":2})"), "reg_buff"},
    {"rules not array", R"({"format":"dynamiccl-profile","version":1,"rules":{}})", "rules"},
    {"fingerprint text", profileWithFingerprint(R"("ranks=16 nodes=2 cc=90")"), "fingerprint: must be an object"},
    {"fingerprint partial", profileWithFingerprint(R"({"gpu_cc":90,"nvlink_GBps":400,"nics_per_node":8})"),
     "fingerprint: missing \"nic_GBps\""},
    {"fingerprint unknown key", profileWithFingerprint(R"({"gpu_cc":90,"nvlink_GBps":400,"nics_per_node":8,"nic_GBps":25,"nic_gbps":25})"),
     "unknown key \"nic_gbps\""},
    {"fingerprint cc fraction", profileWithFingerprint(R"({"gpu_cc":9.0,"nvlink_GBps":400,"nics_per_node":8,"nic_GBps":25})"),
     "gpu_cc must be an integer"},
    {"fingerprint cc range", profileWithFingerprint(R"({"gpu_cc":9,"nvlink_GBps":400,"nics_per_node":8,"nic_GBps":25})"),
     "gpu_cc must be in"},
    {"fingerprint nvlink negative", profileWithFingerprint(R"({"gpu_cc":90,"nvlink_GBps":-1,"nics_per_node":8,"nic_GBps":25})"),
     "nvlink_GBps"},
    {"fingerprint nvlink string", profileWithFingerprint(R"({"gpu_cc":90,"nvlink_GBps":"400","nics_per_node":8,"nic_GBps":25})"),
     "nvlink_GBps must be a number"},
    {"fingerprint no nics", profileWithFingerprint(R"({"gpu_cc":90,"nvlink_GBps":400,"nics_per_node":0,"nic_GBps":25})"),
     "nics_per_node"},
    {"fingerprint nic speed zero", profileWithFingerprint(R"({"gpu_cc":90,"nvlink_GBps":400,"nics_per_node":8,"nic_GBps":0})"),
     "nic_GBps"},
    {"fingerprint nic speed huge", profileWithFingerprint(R"({"gpu_cc":90,"nvlink_GBps":400,"nics_per_node":8,"nic_GBps":1e300})"),
     "nic_GBps"},
    {"fingerprint source number", profileWithFingerprint(R"({"gpu_cc":90,"nvlink_GBps":400,"nics_per_node":8,"nic_GBps":25,"source":3})"),
     "source"},
};

INSTANTIATE_TEST_SUITE_P(Bad, ProfileJsonRejects, ::testing::ValuesIn(kBadJson),
                         [](const auto& info) {
                           std::string n = info.param.name;
                           for (char& c : n)
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });

TEST(ProfileJson, ErrorNamesTheRule) {
  auto p = parseProfileJson(profileJson(R"({"algo":"ring","proto":"ll"},{"algo":"tree","proto":"xx"})"));
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().find("rules[1]"), std::string::npos) << p.error();
}

// Rules are read one at a time as the one pass reaches them; a "rules" key spelled with an escape is
// the same key. Both must give the same profile, or the same error, for any text.
TEST(ProfileJson, RuleByRuleParseAgreesWithTheWholeDocumentParse) {
  const std::string evidence =
      R"("evidence":{"provenance":"measured-offline","nccl_version":"2.28.9","samples":3,"default_samples":3,)"
      R"("gain":0.2,"gain_ci":[0.1,0.3]})";
  const std::string good = R"({"collective":"allreduce","bytes":[0,1023],"algo":"ring","proto":"ll","channels":4,)"
                           R"("note":"a ]\"}, [ { note",)" + evidence + "}";
  const std::string bad = R"({"collective":"allreduce","algo":"nope","proto":"ll"})";
  const std::string head = R"({"format":"dynamiccl-profile","version":2,"name":"n", "rules" : )";
  const std::vector<std::string> texts = {
      head + "[" + good + "," + good + "]}",
      head + "[ ]}",
      head + "[]}",
      head + "[" + good + "," + bad + "]}",                            // a rule's own error, named
      head + "[" + good + ",]}",                                      // trailing comma
      head + "[" + good + "," + good.substr(0, 20) + "]}",             // a cut rule
      head + "[" + good + "},\"meta\":{}}",                           // the array closed by a brace
      head + "[{\"a\":1}},\"name\":\"x\"}",
      R"({"format":"other","version":2,"rules":[)" + good + ",{]}",   // a bad top and a bad rule
      R"({"format":"other","version":2,"rules":[)" + good + "]}",
      head + "[" + good + "], \"rules\":[]}",                         // the key twice: the last one counts
      head + "{}}",
      head + "[" + good + "]} trailing",
      "[" + head + "[]}]",
  };
  for (const std::string& text : texts) {
    std::string whole = text;
    whole.replace(whole.find("\"rules\""), 7, "\"rul\\u0065s\"");
    const auto split = parseProfileJson(text), reference = parseProfileJson(whole);
    ASSERT_EQ(split.ok(), reference.ok()) << text << "\n" << (split.ok() ? reference.error() : split.error());
    if (!split.ok()) {
      EXPECT_EQ(split.error(), reference.error()) << text;
      continue;
    }
    EXPECT_EQ(profileToJson(*split), profileToJson(*reference)) << text;
    EXPECT_EQ(split->rules.size(), reference->rules.size()) << text;
  }
  EXPECT_EQ(parseProfileJson(texts[0])->rules.size(), 2u);
  EXPECT_EQ(parseProfileJson(texts[0])->rules[1].origin, "rules[1]");
  EXPECT_NE(parseProfileJson(texts[3]).error().find("rules[1]: unknown algo"), std::string::npos);
  EXPECT_EQ(parseProfileJson(texts[4]).error(), "not valid JSON");
  EXPECT_EQ(parseProfileJson(texts[8]).error(), "not valid JSON");
}

TEST(NvidiaCsv, ReadsTheExampleFormatWithWildcards) {
  auto p = parseNvidiaCsv(
      "# comment\n\n"
      "allreduce,0,65536,tree,ll,-1,1,-1\n"
      " allgather , 65537, 1048576, ring, simple, 4, -1, 16, 2, 1 \n"
      "reducescatter,0,1000,nvls_tree,ll128,8,2,16,-1\n");
  ASSERT_TRUE(p.ok()) << p.error();
  ASSERT_EQ(p->rules.size(), 3u);
  EXPECT_EQ(p->rules[0].decision.nChannels, 0) << "-1 channels keeps NCCL's count";
  EXPECT_EQ(p->rules[0].minNodes, 1);
  EXPECT_EQ(p->rules[0].maxNodes, 1);
  EXPECT_EQ(p->rules[0].maxRanks, INT_MAX);
  EXPECT_EQ(p->rules[1].collective, Collective::AllGather);
  EXPECT_EQ(p->rules[1].decision.nChannels, 4);
  EXPECT_EQ(p->rules[1].numPipeOps, 2);
  EXPECT_EQ(p->rules[1].regBuff, 1);
  EXPECT_EQ(p->rules[1].minNodes, 1);
  EXPECT_EQ(p->rules[1].maxNodes, INT_MAX);
  EXPECT_EQ(p->rules[2].decision.algo, Algo::NvlsTree);
  EXPECT_EQ(p->rules[2].numPipeOps, -1);
}

TEST(NvidiaCsv, RejectsWhatNvidiaSilentlyMisreads) {
  for (const char* bad : {"allreduce,0,10,rign,ll,-1,-1,-1\n", "allreduce,0,10,ring,ll256,-1,-1,-1\n",
                          "alltoall,0,10,ring,ll,-1,-1,-1\n", "allreduce,10,0,ring,ll,-1,-1,-1\n",
                          "allreduce,0,10,ring,ll,-5,-1,-1\n", "allreduce,0,10,ring,ll,0,-1,-1\n",
                          "allreduce,0,10,ring,ll\n", "allreduce,x,10,ring,ll,-1,-1,-1\n",
                          "allreduce,0,10,ring,ll,-1,-1,-1,1,7\n"}) {
    auto p = parseNvidiaCsv(bad);
    EXPECT_FALSE(p.ok()) << bad;
    if (!p.ok()) {
      EXPECT_NE(p.error().find("line 1"), std::string::npos) << p.error();
    }
  }
}

TEST(NvidiaCsv, WriterOutputReadsBack) {
  auto p = parseNvidiaCsv("allreduce,0,65536,tree,ll,-1,1,8\nbroadcast,1,2,ring,simple,2,-1,-1,3,0\n");
  ASSERT_TRUE(p.ok());
  auto again = parseNvidiaCsv(profileToNvidiaCsv(*p));
  ASSERT_TRUE(again.ok()) << again.error();
  ASSERT_EQ(again->rules.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(again->rules[i].decision, p->rules[i].decision);
    EXPECT_EQ(again->rules[i].minNodes, p->rules[i].minNodes);
    EXPECT_EQ(again->rules[i].maxRanks, p->rules[i].maxRanks);
    EXPECT_EQ(again->rules[i].numPipeOps, p->rules[i].numPipeOps);
  }
}

TEST(ProfileFile, SizeCapAndFormatDetection) {
  dynamiccl::testing::TempFile json(profileJson(R"({"algo":"ring","proto":"ll"})"));
  dynamiccl::testing::TempFile csv("allreduce,0,10,ring,ll,-1,-1,-1\n", ".conf");
  auto a = loadProfileFile(json.path());
  ASSERT_TRUE(a.ok()) << a.error();
  EXPECT_EQ(a->source, json.path());
  auto b = loadProfileFile(csv.path());
  ASSERT_TRUE(b.ok()) << b.error();
  EXPECT_EQ(b->rules.size(), 1u);
  auto c = loadProfileFile(json.path(), ProfileFormat::Auto, 10);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().find("limit"), std::string::npos);
  auto d = loadProfileFile("/nonexistent/profile.json");
  ASSERT_FALSE(d.ok());
  auto e = loadProfileFile("/tmp");
  ASSERT_FALSE(e.ok());
}

// The bytes parsed are the bytes the caller digests: one read of the file.
TEST(ProfileFile, OnReadSeesTheBytesParsed) {
  const std::string text = "\xEF\xBB\xBF" + profileJson(R"({"algo":"ring","proto":"ll"})");
  dynamiccl::testing::TempFile json(text);
  std::string seen;
  auto p = loadProfileFile(json.path(), ProfileFormat::Auto, kMaxProfileBytes, [&](std::string_view b) { seen = b; });
  ASSERT_TRUE(p.ok()) << p.error();
  EXPECT_EQ(seen, text);  // byte order mark and all
  seen = "untouched";
  EXPECT_FALSE(loadProfileFile(json.path(), ProfileFormat::Auto, 10, [&](std::string_view b) { seen = b; }).ok());
  EXPECT_EQ(seen, "untouched");  // refused unread
}

// The nesting check skips strings by memchr and plain bytes by a table: it must count exactly the
// brackets a byte-at-a-time scan counts, whatever quotes, backslashes and brackets the text mixes.
TEST(JsonLimits, NestingCheckAgreesWithAByteAtATimeScan) {
  auto reference = [](std::string_view text, int maxDepth) {
    int depth = 0;
    bool inString = false, escaped = false;
    for (const char c : text) {
      if (inString) {
        if (escaped) escaped = false;
        else if (c == '\\') escaped = true;
        else if (c == '"') inString = false;
      } else if (c == '"') {
        inString = true;
      } else if (c == '[' || c == '{') {
        if (++depth > maxDepth) return false;
      } else if (c == ']' || c == '}') {
        --depth;
      }
    }
    return true;
  };
  std::mt19937 rng(3);
  const char alphabet[] = {'"', '\\', '[', '{', ']', '}', 'a', ' '};
  for (int i = 0; i < 20000; ++i) {
    std::string text(rng() % 40, ' ');
    for (char& c : text) c = alphabet[rng() % sizeof alphabet];
    EXPECT_EQ(checkJsonLimits(text, kMaxProfileBytes, 3).ok(), reference(text, 3)) << text;
  }
  EXPECT_FALSE(checkJsonLimits(R"(["\\"[[[]]]])", kMaxProfileBytes, 3).ok());  // an even run closes the string
  EXPECT_TRUE(checkJsonLimits(R"(["\\\"[[[]]]"])", kMaxProfileBytes, 3).ok());   // an odd one escapes the quote
}

// Evidence: schema version 2. A version-2 profile with one rule and the given "evidence" value.
std::string withEvidence(const std::string& evidence) {
  return R"({"format":"dynamiccl-profile","version":2,"rules":[{"collective":"allreduce","algo":"ring",)"
         R"("proto":"ll","evidence":)" + evidence + "}]}";
}
constexpr const char* kFullEvidence =
    R"({"provenance":"measured-offline","fingerprint":{"gpu_cc":90,"nvlink_GBps":450,"nics_per_node":8,)"
    R"("nic_GBps":50},"nccl_version":"2.28.9","samples":54,"default_samples":27,"gain":0.12,)"
    R"("gain_ci":[0.08,0.16],"date":"2026-11-20"})";

TEST(ProfileEvidence, ReadsEveryField) {
  auto p = parseProfileJson(withEvidence(kFullEvidence));
  ASSERT_TRUE(p.ok()) << p.error();
  ASSERT_TRUE(p->rules[0].evidence);
  const Evidence& e = *p->rules[0].evidence;
  EXPECT_EQ(e.provenance, Provenance::MeasuredOffline);
  ASSERT_TRUE(e.fingerprint);
  EXPECT_EQ(e.fingerprint->nicsPerNode, 8);
  EXPECT_EQ(e.ncclVersion, "2.28.9");
  EXPECT_EQ(e.samples, 54);
  EXPECT_EQ(e.defaultSamples, 27);
  EXPECT_DOUBLE_EQ(e.gain, 0.12);
  EXPECT_DOUBLE_EQ(e.gainLow, 0.08);
  EXPECT_DOUBLE_EQ(e.gainHigh, 0.16);
  EXPECT_EQ(e.date, "2026-11-20");
  EXPECT_TRUE(p->rules[0].evidenceProblem.empty());
}

TEST(ProfileEvidence, RoundTripsThroughWriter) {
  auto p = parseProfileJson(withEvidence(kFullEvidence));
  ASSERT_TRUE(p.ok()) << p.error();
  const std::string text = profileToJson(*p);
  EXPECT_NE(text.find("\"version\": 2"), std::string::npos) << text;
  auto q = parseProfileJson(text);
  ASSERT_TRUE(q.ok()) << q.error();
  EXPECT_EQ(q->rules[0].evidence, p->rules[0].evidence);
}

TEST(ProfileEvidence, MalformedEvidenceLeavesTheRuleLoadedButUnverified) {
  const char* bad[] = {
      R"("measured")",
      R"({"provenance":"guessed"})",
      R"({"samples":3})",
      R"({"provenance":"simulated","samples":-1})",
      R"({"provenance":"simulated","gain":0.1,"gain_ci":[0.2,0.3]})",
      R"({"provenance":"simulated","date":"yesterday"})",
      R"({"provenance":"simulated","colour":"red"})",
      R"({"provenance":"measured-offline","fingerprint":{"gpu_cc":90}})",
  };
  for (const char* e : bad) {
    auto p = parseProfileJson(withEvidence(e));
    ASSERT_TRUE(p.ok()) << e << ": " << p.error();
    ASSERT_EQ(p->rules.size(), 1u);
    EXPECT_FALSE(p->rules[0].evidence) << e;
    EXPECT_FALSE(p->rules[0].evidenceProblem.empty()) << e;
  }
}

TEST(ProfileEvidence, OldSchemaLoadsWithoutEvidenceAndRefusesTheKey) {
  auto old = parseProfileJson(profileJson(R"({"algo":"ring","proto":"ll"})"));
  ASSERT_TRUE(old.ok()) << old.error();
  EXPECT_EQ(old->version, 1);
  EXPECT_FALSE(old->rules[0].evidence);
  auto mixed = parseProfileJson(profileJson(R"({"algo":"ring","proto":"ll","evidence":{"provenance":"simulated"}})"));
  ASSERT_FALSE(mixed.ok());
  EXPECT_NE(mixed.error().find("version"), std::string::npos) << mixed.error();
}

// The rules are read as the text goes (one pass), before a "version" written after them: the rule
// named is still the one the profile's version refuses first, with the same message.
TEST(ProfileEvidence, TheVersionAfterTheRulesDecidesWhichRuleIsRefused) {
  const std::string evidence = R"("evidence":{"provenance":"simulated"})";
  auto text = [&](int version, const std::string& rules) {
    return R"({"rules":[)" + rules + R"(],"format":"dynamiccl-profile","version":)" + std::to_string(version) + "}";
  };
  const std::string plain = R"({"algo":"ring","proto":"ll"})", withEvidence = R"({"algo":"ring","proto":"ll",)" + evidence + "}",
                    badAlgo = R"({"algo":"nope","proto":"ll"})", unknownFirst = R"({"algo":"ring","aa":1,"proto":"ll",)" + evidence + "}";
  EXPECT_TRUE(parseProfileJson(text(2, plain + "," + withEvidence)).ok());
  EXPECT_EQ(parseProfileJson(text(1, plain + "," + withEvidence + "," + badAlgo)).error(),
            "rules[1]: unknown key \"evidence\" (evidence needs \"version\": 2)");
  EXPECT_EQ(parseProfileJson(text(2, plain + "," + withEvidence + "," + badAlgo)).error(),
            "rules[2]: unknown algo \"nope\"");
  EXPECT_EQ(parseProfileJson(text(1, badAlgo + "," + withEvidence)).error(), "rules[0]: unknown algo \"nope\"");
  EXPECT_EQ(parseProfileJson(text(1, unknownFirst)).error(), "rules[0]: unknown key \"aa\"");
  // The key twice: the last "rules" and the last value of a key count, as in nlohmann's tree.
  auto twice = parseProfileJson(R"({"format":"dynamiccl-profile","rules":[)" + badAlgo + R"(],"version":1,"rules":[)" + plain +
                                R"(,{"algo":"tree","proto":"ll","algo":"ring"}]})");
  ASSERT_TRUE(twice.ok()) << twice.error();
  ASSERT_EQ(twice->rules.size(), 2u);
  EXPECT_EQ(twice->rules[1].decision.algo, Algo::Ring);
  EXPECT_EQ(twice->rules[1].origin, "rules[1]");
}

// Verified = measured, with a fingerprint every rank shares that matches this communicator's.
TEST(ProfileEvidence, OnlyMeasuredRulesOnThisFingerprintAreVerified) {
  HostSources host;
  host.overrides.computeCap = 90;
  host.overrides.nvlinkBw_GBps = 450;
  host.overrides.nics = 8;
  host.overrides.nicSpeed_GBps = 50;
  const StandingInputs here = StandingInputs::of(CommShape{.nRanks = 16, .nNodes = 2}, std::nullopt, host, false,
                                                 Trust::Verified);
  Evidence e;
  e.provenance = Provenance::MeasuredOffline;
  e.fingerprint = ClusterHardware{90, 450, 8, 50, "", ""};
  EXPECT_TRUE(ruleStanding(e, here).verified);
  EXPECT_TRUE(ruleStanding(e, here).applies);
  e.fingerprint->nicsPerNode = 4;
  EXPECT_FALSE(ruleStanding(e, here).verified);
  EXPECT_EQ(ruleStanding(e, here).why,
            "measured on another fingerprint (nics_per_node differs: this communicator's 8, the rule's 4)");
  e.fingerprint->nicsPerNode = 8;
  e.fingerprint->computeCap = 100;  // a B200 rule on this H100: the field that differs is named
  EXPECT_EQ(ruleStanding(e, here).why, "measured on another fingerprint (gpu_cc differs: this communicator's 90, the rule's 100)");
  e.fingerprint->computeCap = 90;
  e.fingerprint->nicsPerNode = 8;
  for (Provenance p : {Provenance::Simulated, Provenance::Learned}) {
    e.provenance = p;
    EXPECT_FALSE(ruleStanding(e, here).applies);
  }
  EXPECT_FALSE(ruleStanding(std::nullopt, here).applies);
  // Across nodes nothing every rank shares: a measured rule cannot be verified.
  const StandingInputs unknown = StandingInputs::of(CommShape{.nRanks = 16, .nNodes = 2}, std::nullopt,
                                                    HostSources{}, false, Trust::Verified);
  e.provenance = Provenance::MeasuredInJob;
  EXPECT_FALSE(ruleStanding(e, unknown).verified);
  // Opt-ins: DYNAMICCL_TRUST=all, or the user's own NVIDIA CSV rules.
  EXPECT_TRUE(ruleStanding(std::nullopt, StandingInputs::of(CommShape{.nRanks = 8, .nNodes = 1}, std::nullopt,
                                                            HostSources{}, false, Trust::All)).applies);
  EXPECT_TRUE(ruleStanding(std::nullopt, StandingInputs::of(CommShape{.nRanks = 8, .nNodes = 1}, std::nullopt,
                                                            HostSources{}, true, Trust::Verified)).applies);
}

TEST(ProfileEvidence, UnverifiedRulesStayCompiledAsCandidates) {
  auto p = parseProfileJson(withEvidence(R"({"provenance":"simulated"})"));
  ASSERT_TRUE(p.ok()) << p.error();
  const HostSources nothing;
  const CommShape shape{.nRanks = 8, .nNodes = 1};
  const PolicyTable t = compileProfile(*p, shape, StandingInputs::of(shape, std::nullopt, nothing, false, Trust::Verified), nullptr);
  EXPECT_TRUE(t.table.empty());
  EXPECT_EQ(t.unverified.ruleCount(), 1u);
  const PolicyTable all = compileProfile(*p, shape, StandingInputs::of(shape, std::nullopt, nothing, false, Trust::All), nullptr);
  EXPECT_EQ(all.table.ruleCount(), 1u);
  EXPECT_EQ(all.unverified.ruleCount(), 1u);
}

TEST(NvidiaCsv, RulesAreTheUsersOwn) {
  auto p = parseNvidiaCsv("allreduce,0,65535,ring,ll,-1,-1,-1\n");
  ASSERT_TRUE(p.ok()) << p.error();
  EXPECT_TRUE(p->userRules);
  EXPECT_FALSE(p->rules[0].evidence);
}

}  // namespace
}  // namespace dynamiccl::policy
