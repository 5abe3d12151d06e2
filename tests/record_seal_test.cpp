// SHA-256 against FIPS 180-4's examples and lengths around a block's padding, HMAC-SHA256 against
// RFC 4231, base64 against RFC 4648, all through libcrypto (features/crypto.h); the seal: it opens only
// under its key, at its place, with its bytes unaltered; and a libcrypto that cannot be used says why.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "coord/coord.h"

namespace dynamiccl::coord {
namespace {

TEST(RecordSeal, Sha256MatchesFipsExamplesAndPaddingEdges) {
  EXPECT_EQ(hex(sha256("")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(hex(sha256("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(hex(sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(hex(sha256(std::string(1000000, 'a'))), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  const std::pair<size_t, const char*> edges[] = {
      {55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"},
      {56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a"},
      {63, "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34"},
      {64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"},
      {65, "635361c48bb9eab14198e76ea8ab7f1a41685d6ad62aa9146d301d4f17eb0ae0"},
      {119, "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb"},
      {120, "2f3d335432c70b580af0e8e1b3674a7c020d683aa5f73aaaedfdc55af904c21c"}};
  for (const auto& [n, want] : edges) EXPECT_EQ(hex(sha256(std::string(n, 'a'))), want) << n << " bytes";
}

TEST(RecordSeal, HmacMatchesRfc4231) {
  EXPECT_EQ(hex(hmacSha256(std::string(20, '\x0b'), "Hi There")),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  EXPECT_EQ(hex(hmacSha256("Jefe", "what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  EXPECT_EQ(hex(hmacSha256(std::string(131, '\xaa'), "Test Using Larger Than Block-Size Key - Hash Key First")),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

TEST(RecordSeal, Base64MatchesRfc4648AndRefusesWhatIsNot) {
  const std::pair<const char*, const char*> vectors[] = {{"", ""},         {"f", "Zg=="},         {"fo", "Zm8="},
                                                         {"foo", "Zm9v"}, {"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="},
                                                         {"foobar", "Zm9vYmFy"}};
  for (const auto& [plain, coded] : vectors) {
    EXPECT_EQ(base64(plain), coded);
    EXPECT_EQ(unbase64(coded), plain) << coded;
  }
  std::string bytes;
  for (int i = 0; i < 256; ++i) bytes += static_cast<char>(i);
  EXPECT_EQ(unbase64(base64(bytes)), bytes);
  EXPECT_FALSE(unbase64("Zm9"));    // not a whole group
  EXPECT_FALSE(unbase64("Zm9v*A=="));  // not a digit
}

TEST(RecordSeal, TheLibraryIsLoadedAndOneThatCannotBeUsedSaysWhyInOneLine) {
  const auto loaded = systemCrypto();
  ASSERT_TRUE(loaded.ok()) << loaded.error();  // so every test here ran through libcrypto
  const auto missing = Crypto::load("libcrypto-not-there.so.9");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("cannot load libcrypto-not-there.so.9"), std::string::npos) << missing.error();
  const auto notCrypto = Crypto::load("libc.so.6");  // loads, but holds none of the functions
  ASSERT_FALSE(notCrypto.ok());
  EXPECT_NE(notCrypto.error().find("lacks a libcrypto function"), std::string::npos) << notCrypto.error();
  for (const auto& e : {missing.error(), notCrypto.error()}) EXPECT_EQ(e.find('\n'), std::string::npos) << e;
}

TEST(RecordSeal, ARecordSealedUnderOneJobsTokenDoesNotOpenUnderAnothers) {
  // As the plugin derives its keys: a digest over the communicator and the job's token.
  const auto keyOf = [](const std::string& token) { return hex(sha256("members\n7\n" + token)); };
  const std::string a = keyOf("token-of-job-a-0123456789"), b = keyOf("token-of-job-b-0123456789");
  ASSERT_NE(a, b);
  const std::string sealed = sealRecord(a, 7, kInputsRecordKey, "inputs");
  EXPECT_EQ(openSealed(a, 7, kInputsRecordKey, sealed), "inputs");
  EXPECT_FALSE(openSealed(b, 7, kInputsRecordKey, sealed));
  EXPECT_FALSE(openSealed(keyOf(""), 7, kInputsRecordKey, sealed));  // no token
}

TEST(RecordSeal, OpensOnlyUnderItsKeyAtItsPlaceUnaltered) {
  std::string bytes = "table\n";
  for (int i = 0; i < 256; ++i) bytes += static_cast<char>(i);
  const std::string sealed = sealRecord("job key", 7, 1000, bytes);
  EXPECT_EQ(openSealed("job key", 7, 1000, sealed), bytes);
  EXPECT_FALSE(openSealed("another key", 7, 1000, sealed));
  EXPECT_FALSE(openSealed("job key", 8, 1000, sealed));  // another communicator
  EXPECT_FALSE(openSealed("job key", 7, 2000, sealed));  // another boundary
  std::string altered = sealed;
  altered.back() ^= 1;
  EXPECT_FALSE(openSealed("job key", 7, 1000, altered));
  EXPECT_FALSE(openSealed("job key", 7, 1000, bytes));  // unsealed
  EXPECT_FALSE(openSealed("job key", 7, 1000, ""));
  EXPECT_EQ(openSealed("k", 1, 2, sealRecord("k", 1, 2, "")), "");
  EXPECT_EQ(sealedPayload(sealed), bytes);  // unverified: for messages and offline readers
  EXPECT_EQ(sealedPayload(bytes), bytes);
}

// A token file in a fresh directory, with the given bytes and mode.
class TokenDir {
 public:
  TokenDir() {
    char tmpl[] = "/tmp/dynamiccl-token-XXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  ~TokenDir() { std::filesystem::remove_all(dir_); }
  std::string file(const std::string& name, const std::string& bytes, mode_t mode) const {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path, std::ios::binary) << bytes;
    chmod(path.c_str(), mode);
    return path;
  }
  std::string fifo() const {
    const std::string path = dir_ + "/fifo";
    EXPECT_EQ(mkfifo(path.c_str(), 0600), 0);
    return path;
  }

 private:
  std::string dir_;
};

std::string errorOf(const Expected<std::string>& e) { return e.ok() ? "(read: " + *e + ")" : e.error(); }

TEST(RecordSeal, AJobTokenIsReadFromAPrivateRegularFileLessItsTrailingWhitespace) {
  TokenDir d;
  const auto token = readJobToken(d.file("token", "0123456789abcdef0123456789abcdef\n", 0600));
  ASSERT_TRUE(token.ok()) << token.error();
  EXPECT_EQ(*token, "0123456789abcdef0123456789abcdef");
  EXPECT_TRUE(readJobToken(d.file("ro", std::string(4096, 'k'), 0400)).ok());
}

TEST(RecordSeal, AJobTokenFileIsRefusedInOneLineUnlessPrivateRegularAndSized) {
  TokenDir d;
  const std::string good = "0123456789abcdef0123456789abcdef";
  EXPECT_NE(errorOf(readJobToken(d.file("group", good, 0640))).find("chmod 600"), std::string::npos);
  EXPECT_NE(errorOf(readJobToken(d.file("others", good, 0604))).find("chmod 600"), std::string::npos);
  EXPECT_NE(errorOf(readJobToken(d.file("writable", good, 0620))).find("chmod 600"), std::string::npos);
  EXPECT_NE(errorOf(readJobToken(d.file("big", std::string(4097, 'k'), 0600))).find("over 4096 bytes"), std::string::npos);
  EXPECT_NE(errorOf(readJobToken(d.file("short", "abc\n", 0600))).find("at least 16"), std::string::npos);
  EXPECT_NE(errorOf(readJobToken(d.file("blank", "  \n\n", 0600))).find("holds 0 bytes"), std::string::npos);
  EXPECT_NE(errorOf(readJobToken("/nonexistent/token")).find("cannot open"), std::string::npos);
  // A FIFO with no writer: refused at once, never a blocked open() or read().
  const auto started = std::chrono::steady_clock::now();
  EXPECT_NE(errorOf(readJobToken(d.fifo())).find("not a regular file"), std::string::npos);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(1));
  if (geteuid() != 0) {  // root reads a file of mode 000
    EXPECT_NE(errorOf(readJobToken(d.file("unreadable", good, 0000))).find("cannot open"), std::string::npos);
  }
  for (const std::string& e : {errorOf(readJobToken(d.file("g2", good, 0660))), errorOf(readJobToken("/nonexistent/t"))}) {
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
    EXPECT_NE(e.find("DYNAMICCL_COORD_TOKEN_FILE"), std::string::npos) << e;
  }
}

}  // namespace
}  // namespace dynamiccl::coord
