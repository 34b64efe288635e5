#pragma once
#include <cstdint>
namespace cuckoo { namespace dedup {
enum class KeyStatus : uint8_t { found, missing, invalid };
}}
