// The outcome of extracting one record's key, shared by the record framings of the dedup
// pipeline (dedup/csv.hpp, dedup/json_key.hpp): one enum, so the pipeline handles every framing
// alike.
#pragma once

#include <cstdint>

namespace cuckoo {
namespace dedup {

enum class KeyStatus : uint8_t { found, missing, invalid };

}  // namespace dedup
}  // namespace cuckoo
