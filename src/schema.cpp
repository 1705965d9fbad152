#include "src/schema.hpp"

#include <fmt/format.h>

#include <set>
#include <stdexcept>

namespace tkprobe {
namespace {

const std::set<std::string> kAnnotations = {"$schema", "$id", "$defs", "title", "description", "$comment"};
const std::set<std::string> kKeywords = {"type",    "properties", "required", "additionalProperties",
                                         "items",   "enum",       "const",    "minimum",
                                         "maximum", "minItems",   "maxItems", "anyOf",
                                         "$ref"};

bool has_type(const Json& v, const std::string& type) {
  if (type == "object") return v.is_object();
  if (type == "array") return v.is_array();
  if (type == "string") return v.is_string();
  if (type == "number") return v.is_number();
  if (type == "integer")
    return v.is_number_integer() || (v.is_number_float() && v.get<double>() == static_cast<long long>(v.get<double>()));
  if (type == "boolean") return v.is_boolean();
  if (type == "null") return v.is_null();
  throw std::invalid_argument("schema: unknown type '" + type + "'");
}

// A value in a message: its text, cut short; the document itself by its keys, since its text says
// little in 80 characters and may be a decoding, not the file read (a version 3 report's).
std::string described(const Json& v, const std::string& at) {
  if (!at.empty() || !v.is_object()) return v.dump().substr(0, 80);
  std::string keys;
  for (const auto& [key, _] : v.items()) keys += (keys.empty() ? "" : ", ") + key;
  return "an object with keys [" + keys + "]";
}

class Validator {
 public:
  explicit Validator(const Json& root) : root_(root) {}

  void check(const Json& schema, const Json& v, const std::string& at) {
    if (schema.is_boolean()) {
      if (!schema.get<bool>()) fail(at, "no value is allowed here");
      return;
    }
    for (const auto& [key, _] : schema.items()) {
      if (!kKeywords.count(key) && !kAnnotations.count(key)) {
        throw std::invalid_argument("schema: unsupported keyword '" + key + "'");
      }
    }
    if (schema.contains("$ref")) check(resolve(schema["$ref"].get<std::string>()), v, at);
    if (schema.contains("type")) check_type(schema["type"], v, at);
    if (schema.contains("enum") && !contains(schema["enum"], v)) {
      fail(at, fmt::format("{} is not one of {}", v.dump(), schema["enum"].dump()));
    }
    if (schema.contains("const") && schema["const"] != v) {
      fail(at, fmt::format("{} is not {}", v.dump(), schema["const"].dump()));
    }
    if (v.is_number()) check_bounds(schema, v.get<double>(), at);
    if (v.is_object()) check_object(schema, v, at);
    if (v.is_array()) check_array(schema, v, at);
    if (schema.contains("anyOf")) check_any_of(schema["anyOf"], v, at);
  }

  std::vector<std::string> errors;

 private:
  const Json& root_;

  void fail(const std::string& at, const std::string& what) { errors.push_back((at.empty() ? "/" : at) + ": " + what); }

  static bool contains(const Json& list, const Json& v) {
    for (const auto& item : list)
      if (item == v) return true;
    return false;
  }

  const Json& resolve(const std::string& ref) const {
    const std::string prefix = "#/$defs/";
    if (ref.rfind(prefix, 0) != 0) throw std::invalid_argument("schema: only local #/$defs/ references: " + ref);
    const auto name = ref.substr(prefix.size());
    if (!root_.contains("$defs") || !root_["$defs"].contains(name))
      throw std::invalid_argument("schema: no $defs/" + name);
    return root_["$defs"][name];
  }

  void check_type(const Json& type, const Json& v, const std::string& at) {
    if (type.is_string()) {
      if (!has_type(v, type.get<std::string>())) fail(at, fmt::format("{} is not of type {}", v.dump(), type.dump()));
      return;
    }
    for (const auto& t : type)
      if (has_type(v, t.get<std::string>())) return;
    fail(at, fmt::format("{} is not of type {}", v.dump(), type.dump()));
  }

  void check_bounds(const Json& schema, double x, const std::string& at) {
    if (schema.contains("minimum") && x < schema["minimum"].get<double>()) {
      fail(at, fmt::format("{} is below the minimum {}", x, schema["minimum"].get<double>()));
    }
    if (schema.contains("maximum") && x > schema["maximum"].get<double>()) {
      fail(at, fmt::format("{} is above the maximum {}", x, schema["maximum"].get<double>()));
    }
  }

  void check_object(const Json& schema, const Json& v, const std::string& at) {
    if (schema.contains("required")) {
      for (const auto& name : schema["required"]) {
        if (!v.contains(name.get<std::string>()))
          fail(at, fmt::format("required property '{}' is missing", name.get<std::string>()));
      }
    }
    const Json* props = schema.contains("properties") ? &schema["properties"] : nullptr;
    for (const auto& [key, value] : v.items()) {
      const std::string child = at + "/" + key;
      if (props && props->contains(key)) {
        check((*props)[key], value, child);
      } else if (schema.contains("additionalProperties")) {
        check(schema["additionalProperties"], value, child);
      }
    }
  }

  void check_array(const Json& schema, const Json& v, const std::string& at) {
    if (schema.contains("minItems") && v.size() < schema["minItems"].get<std::size_t>()) {
      fail(at, fmt::format("has {} items, fewer than {}", v.size(), schema["minItems"].get<std::size_t>()));
    }
    if (schema.contains("maxItems") && v.size() > schema["maxItems"].get<std::size_t>()) {
      fail(at, fmt::format("has {} items, more than {}", v.size(), schema["maxItems"].get<std::size_t>()));
    }
    if (schema.contains("items")) {
      for (std::size_t i = 0; i < v.size(); ++i) check(schema["items"], v[i], at + "/" + std::to_string(i));
    }
  }

  void check_any_of(const Json& options, const Json& v, const std::string& at) {
    for (const auto& option : options) {
      Validator trial(root_);
      trial.check(option, v, at);
      if (trial.errors.empty()) return;
    }
    fail(at, fmt::format("{} matches none of the allowed forms {}", described(v, at), options.dump()));
  }
};

}  // namespace

std::vector<std::string> validate_schema(const Json& schema, const Json& doc) {
  Validator v(schema);
  v.check(schema, doc, "");
  return v.errors;
}

}  // namespace tkprobe
