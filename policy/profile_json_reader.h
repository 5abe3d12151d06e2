// One pass of nlohmann's SAX tokenizer over a profile: its top-level members as flat values, the
// "policy" member as a tree (kept as text; learned/ reads it), and each element of "rules" handed over as
// soon as it closes, read into a buffer reused for the next one. A 60k-rule profile so builds no tree
// of millions of heap nodes (its first init waits for the parse), and nothing scans the text twice.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace dynamiccl::policy {

class FlatDocument;

// A value of a FlatDocument, with the part of nlohmann::json's interface the profile reader uses.
// Object members keep the text's order and duplicates: lookups find the last, as nlohmann's do.
class FlatValue {
 public:
  FlatValue() = default;
  FlatValue(const FlatDocument* doc, uint32_t index) : doc_(doc), index_(index) {}
  bool is_null() const;
  bool is_object() const;
  bool is_array() const;
  bool is_string() const;
  bool is_number() const;
  bool is_number_integer() const;
  bool is_number_unsigned() const;
  size_t size() const;  // members or elements
  FlatValue operator[](size_t i) const;
  template <typename T>
  T get() const;
  std::string_view text() const;  // a string's text without a copy (valid as long as its document)

  // Members of an object in the text's order: f(key, value).
  template <typename F>
  void forEachMember(F&& f) const {
    for (uint32_t i = firstChild(); i != 0; i = nextSibling(i)) f(keyOf(i), FlatValue(doc_, i));
  }

 private:
  uint32_t firstChild() const;
  uint32_t nextSibling(uint32_t i) const;
  std::string_view keyOf(uint32_t i) const;
  const FlatDocument* doc_ = nullptr;
  uint32_t index_ = 0;
};

// JSON values in one vector and one character buffer, built from SAX events and cleared for reuse.
class FlatDocument {
 public:
  enum class Kind : uint8_t { Null, Boolean, Integer, Unsigned, Float, String, Array, Object };
  struct Node {
    Kind kind = Kind::Null;
    uint32_t key = 0, keyLength = 0;    // in chars_, for a member of an object
    uint32_t text = 0, textLength = 0;  // in chars_, for a string
    uint32_t next = 0;                  // next sibling (0: none; the root is never one)
    uint32_t first = 0, size = 0;       // a container's first child and count
    union {
      bool boolean;
      int64_t integer;
      uint64_t unsignedInteger;
      double number;
    };
    Node() : integer(0) {}
  };

  void clear();
  bool empty() const { return nodes_.empty(); }
  FlatValue root() const { return FlatValue(this, 0); }

  void key(std::string_view k);
  void value(Node n);
  void string(std::string_view s);
  void start(Kind container);
  void end();

 private:
  friend class FlatValue;
  std::vector<Node> nodes_;
  std::string chars_;
  std::vector<std::pair<uint32_t, uint32_t>> open_;  // open containers: (node, its last child)
  uint32_t pendingKey_ = 0, pendingKeyLength_ = 0;
};

// Reads a profile's text in one SAX pass. onRule(index, element) is called as each element of the
// top-level "rules" array closes (the element is valid until it returns; it may be any JSON value);
// a "rules" key seen again starts the count anew, as the last one is the one nlohmann keeps.
// keepRules = false skips reading the elements of the rest of the array (they are still checked).
class ProfileJsonReader : public nlohmann::json_sax<nlohmann::json> {
 public:
  using OnRules = std::function<void()>;
  using OnRule = std::function<bool(size_t index, FlatValue element)>;  // false: no more elements needed
  ProfileJsonReader(OnRules onRulesStart, OnRule onRule) : onRulesStart_(std::move(onRulesStart)), onRule_(std::move(onRule)) {}

  // False when the text is not JSON (nothing else is checked here).
  bool read(std::string_view text);
  const FlatDocument& top() const { return top_; }  // "rules" is an empty array, "policy" null
  const nlohmann::json* policy() const { return hasPolicy_ ? &policy_ : nullptr; }

  bool null() override;
  bool boolean(bool v) override;
  bool number_integer(number_integer_t v) override;
  bool number_unsigned(number_unsigned_t v) override;
  bool number_float(number_float_t v, const string_t&) override;
  bool string(string_t& v) override;
  bool binary(binary_t&) override { return false; }  // never produced by the JSON tokenizer
  bool start_object(std::size_t) override;
  bool key(string_t& k) override;
  bool end_object() override;
  bool start_array(std::size_t) override;
  bool end_array() override;
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }

 private:
  // A value that is no container: into the policy's tree, the rule being read, or the top document.
  template <typename Json, typename Flat>
  bool scalar(Json&& json, Flat&& flat);
  template <typename V>
  bool leaf(FlatDocument::Kind kind, V FlatDocument::Node::*field, V v);  // a number or a boolean
  bool startContainer(FlatDocument::Kind kind);
  bool endContainer();
  void finishRule();
  // The policy's tree, built like nlohmann's own DOM parser (duplicate keys: the last wins).
  nlohmann::json* policyValue(nlohmann::json v);

  OnRules onRulesStart_;
  OnRule onRule_;
  FlatDocument top_, rule_;
  nlohmann::json policy_;
  std::vector<nlohmann::json*> policyStack_;
  nlohmann::json* policyMember_ = nullptr;
  bool hasPolicy_ = false;
  int depth_ = 0;           // containers open
  std::string topKey_;      // the last key of the top-level object
  bool inRules_ = false, inPolicy_ = false, wantRules_ = true;
  size_t ruleIndex_ = 0;
};

}  // namespace dynamiccl::policy
