// What a record framing found for a record's key (dedup/framing.hpp): the key, no key (the
// record lacks the field: the --missing policy decides), or a record that is not valid in its
// format (CSV, JSON). Shared by csv.hpp and json_key.hpp.
#pragma once

#include <cstdint>

namespace cuckoo {
namespace dedup {

enum class KeyStatus : uint8_t { found, missing, invalid };

}  // namespace dedup
}  // namespace cuckoo
