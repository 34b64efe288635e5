// STUB (lead's local placeholder until the jsonkey branch lands; not committed)
#pragma once
#include <string>
#include <vector>
#include "cuckoo/dedup/key_status.hpp"
namespace cuckoo { namespace dedup {
struct JsonPath { std::vector<std::string> members; };
inline KeyStatus json_key(const unsigned char* p, size_t n, const JsonPath&, std::string& key, std::string& error) {
    if (n && p[0] == '!') { error = "not valid JSON: stub"; return KeyStatus::invalid; }
    key.append(reinterpret_cast<const char*>(p), n); return KeyStatus::found;
}
}}
