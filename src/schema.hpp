#pragma once
// A validator for the subset of JSON Schema (draft 2020-12) that results/report.schema.json
// uses: type, properties, required, additionalProperties, items, enum, const, minimum,
// maximum, minItems, maxItems, anyOf and local $ref ("#/$defs/NAME"). A schema that uses any
// other keyword is rejected rather than half-checked.
#include <string>
#include <vector>

#include "src/json.hpp"

namespace tkprobe {

// Returns one message per violation ("/results/0/status: 'bogus' is not one of [...]");
// empty when `doc` conforms. Throws std::invalid_argument for an unsupported schema.
std::vector<std::string> validate_schema(const Json& schema, const Json& doc);

}  // namespace tkprobe
