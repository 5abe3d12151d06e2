#include "policy/profile_json_reader.h"

#include <stdexcept>
#include <type_traits>

namespace dynamiccl::policy {

using Kind = FlatDocument::Kind;
using Node = FlatDocument::Node;
using nlohmann::json;

bool FlatValue::is_null() const { return doc_->nodes_[index_].kind == Kind::Null; }
bool FlatValue::is_object() const { return doc_->nodes_[index_].kind == Kind::Object; }
bool FlatValue::is_array() const { return doc_->nodes_[index_].kind == Kind::Array; }
bool FlatValue::is_string() const { return doc_->nodes_[index_].kind == Kind::String; }
bool FlatValue::is_number() const { return is_number_integer() || doc_->nodes_[index_].kind == Kind::Float; }
bool FlatValue::is_number_integer() const { return is_number_unsigned() || doc_->nodes_[index_].kind == Kind::Integer; }
bool FlatValue::is_number_unsigned() const { return doc_->nodes_[index_].kind == Kind::Unsigned; }
size_t FlatValue::size() const { return doc_->nodes_[index_].size; }

uint32_t FlatValue::firstChild() const {
  const Node& n = doc_->nodes_[index_];
  return n.size ? n.first : 0;
}
uint32_t FlatValue::nextSibling(uint32_t i) const { return doc_->nodes_[i].next; }
std::string_view FlatValue::keyOf(uint32_t i) const {
  const Node& n = doc_->nodes_[i];
  return std::string_view(doc_->chars_).substr(n.key, n.keyLength);
}

FlatValue FlatValue::operator[](size_t i) const {
  uint32_t child = firstChild();
  for (; i > 0 && child != 0; --i) child = nextSibling(child);
  if (child == 0) throw std::out_of_range("JSON index out of range");
  return FlatValue(doc_, child);
}

std::string_view FlatValue::text() const {
  const Node& n = doc_->nodes_[index_];
  if (n.kind != Kind::String) throw std::domain_error("JSON value is not a string");
  return std::string_view(doc_->chars_).substr(n.text, n.textLength);
}

// As nlohmann's get<T>(): a number converts to any arithmetic type with a cast.
template <typename T>
T FlatValue::get() const {
  const Node& n = doc_->nodes_[index_];
  if constexpr (std::is_same_v<T, std::string>) {
    if (n.kind != Kind::String) throw std::domain_error("JSON value is not a string");
    return std::string(std::string_view(doc_->chars_).substr(n.text, n.textLength));
  } else {
    switch (n.kind) {
      case Kind::Integer: return static_cast<T>(n.integer);
      case Kind::Unsigned: return static_cast<T>(n.unsignedInteger);
      case Kind::Float: return static_cast<T>(n.number);
      default: throw std::domain_error("JSON value is not a number");
    }
  }
}
template std::string FlatValue::get<std::string>() const;
template int64_t FlatValue::get<int64_t>() const;
template uint64_t FlatValue::get<uint64_t>() const;
template int FlatValue::get<int>() const;
template double FlatValue::get<double>() const;

void FlatDocument::clear() {
  nodes_.clear();
  chars_.clear();
  open_.clear();
}

void FlatDocument::key(std::string_view k) {
  pendingKey_ = static_cast<uint32_t>(chars_.size());
  pendingKeyLength_ = static_cast<uint32_t>(k.size());
  chars_.append(k);
}

void FlatDocument::value(Node n) {
  const auto i = static_cast<uint32_t>(nodes_.size());
  if (!open_.empty()) {
    auto& [parent, last] = open_.back();
    n.key = pendingKey_;
    n.keyLength = pendingKeyLength_;
    if (nodes_[parent].size++ == 0) nodes_[parent].first = i;
    else nodes_[last].next = i;
    last = i;
  }
  nodes_.push_back(n);
}

void FlatDocument::string(std::string_view s) {
  Node n;
  n.kind = Kind::String;
  n.text = static_cast<uint32_t>(chars_.size());
  n.textLength = static_cast<uint32_t>(s.size());
  chars_.append(s);
  value(n);
}

void FlatDocument::start(Kind container) {
  Node n;
  n.kind = container;
  value(n);
  open_.emplace_back(static_cast<uint32_t>(nodes_.size() - 1), 0);
}

void FlatDocument::end() { open_.pop_back(); }

bool ProfileJsonReader::read(std::string_view text) { return json::sax_parse(text.begin(), text.end(), this); }

json* ProfileJsonReader::policyValue(json v) {
  if (policyStack_.empty()) {
    policy_ = std::move(v);
    return &policy_;
  }
  json* parent = policyStack_.back();
  if (parent->is_array()) {
    parent->push_back(std::move(v));
    return &parent->back();
  }
  *policyMember_ = std::move(v);
  return policyMember_;
}

template <typename Json, typename Flat>
bool ProfileJsonReader::scalar(Json&& tree, Flat&& flat) {
  if (inPolicy_) {
    policyValue(tree());
  } else if (depth_ == 1 && topKey_ == "policy") {
    top_.value(Node{});
    policyStack_.clear();
    policyValue(tree());
    hasPolicy_ = true;
  } else if (inRules_) {
    if (!wantRules_) return true;
    if (depth_ == 2) rule_.clear();
    flat(rule_);
    if (depth_ == 2) finishRule();  // an element that is not an object: its parse says so
  } else {
    flat(top_);
  }
  return true;
}

bool ProfileJsonReader::startContainer(Kind kind) {
  auto empty = [&] { return kind == Kind::Object ? json::object() : json::array(); };
  if (inPolicy_) {
    policyStack_.push_back(policyValue(empty()));
  } else if (depth_ == 1 && topKey_ == "policy") {
    top_.value(Node{});
    policyStack_.clear();
    policyStack_.push_back(policyValue(empty()));
    hasPolicy_ = inPolicy_ = true;
  } else if (depth_ == 1 && topKey_ == "rules" && kind == Kind::Array) {
    top_.start(Kind::Array);  // "rules" in the top document: an empty array
    top_.end();
    inRules_ = wantRules_ = true;
    ruleIndex_ = 0;
    if (onRulesStart_) onRulesStart_();
  } else if (inRules_) {
    if (wantRules_) {
      if (depth_ == 2) rule_.clear();
      rule_.start(kind);
    }
  } else {
    top_.start(kind);
  }
  ++depth_;
  return true;
}

bool ProfileJsonReader::endContainer() {
  --depth_;
  if (inPolicy_) {
    policyStack_.pop_back();
    inPolicy_ = depth_ > 1;
  } else if (inRules_) {
    if (depth_ == 1) {
      inRules_ = false;  // the rules array closed
    } else if (wantRules_) {
      rule_.end();
      if (depth_ == 2) finishRule();
    }
  } else {
    top_.end();
  }
  return true;
}

void ProfileJsonReader::finishRule() {
  const size_t index = ruleIndex_++;
  if (onRule_) wantRules_ = onRule_(index, rule_.root());
}

bool ProfileJsonReader::null() {
  return scalar([] { return json(nullptr); }, [](FlatDocument& d) { d.value(Node{}); });
}

template <typename V>
bool ProfileJsonReader::leaf(Kind kind, V Node::*field, V v) {
  Node n;
  n.kind = kind;
  n.*field = v;
  return scalar([&] { return json(v); }, [&](FlatDocument& d) { d.value(n); });
}

bool ProfileJsonReader::boolean(bool v) { return leaf(Kind::Boolean, &Node::boolean, v); }
bool ProfileJsonReader::number_integer(number_integer_t v) { return leaf(Kind::Integer, &Node::integer, int64_t{v}); }
bool ProfileJsonReader::number_unsigned(number_unsigned_t v) {
  return leaf(Kind::Unsigned, &Node::unsignedInteger, uint64_t{v});
}
bool ProfileJsonReader::number_float(number_float_t v, const string_t&) { return leaf(Kind::Float, &Node::number, double{v}); }

bool ProfileJsonReader::string(string_t& v) {
  return scalar([&] { return json(std::move(v)); }, [&](FlatDocument& d) { d.string(v); });
}

bool ProfileJsonReader::key(string_t& k) {
  if (inPolicy_) {
    policyMember_ = &(*policyStack_.back())[k];
  } else if (inRules_) {
    if (wantRules_) rule_.key(k);
  } else {
    if (depth_ == 1) topKey_ = k;
    top_.key(k);
  }
  return true;
}

bool ProfileJsonReader::start_object(std::size_t) { return startContainer(Kind::Object); }
bool ProfileJsonReader::start_array(std::size_t) { return startContainer(Kind::Array); }
bool ProfileJsonReader::end_object() { return endContainer(); }
bool ProfileJsonReader::end_array() { return endContainer(); }

}  // namespace dynamiccl::policy
