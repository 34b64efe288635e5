// Tests of cpp/include/cuckoo/table.hpp (PackedTable, ByteBuffer) against a plain model: a
// std::vector<uint32_t> holding every slot. Every fingerprint width 4..32 and bucket size 2/4/8.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "check.hpp"
#include "cuckoo/table.hpp"

using cuckoo::ByteBuffer;
using cuckoo::PackedTable;

namespace {

const unsigned kBucketSizes[] = {2, 4, 8};

uint32_t mask_of(unsigned f) { return f >= 32 ? 0xFFFFFFFFu : ((1u << f) - 1); }

std::string params(uint64_t m, unsigned b, unsigned f) {
    return "m=" + std::to_string(m) + " b=" + std::to_string(b) + " f=" + std::to_string(f);
}

// Values that stress an exact SWAR lane compare: neighbours in value, the top bit of a lane alone,
// all ones, and values differing from each other only in the top or bottom bit.
std::vector<uint32_t> tricky_values(unsigned f, cktest::Rng& rng) {
    const uint32_t mask = mask_of(f);
    const uint32_t high = 1u << (f - 1);
    const uint32_t r = static_cast<uint32_t>(rng.next()) & mask;
    std::vector<uint32_t> v = {1, 2, 3, mask, mask - 1, high, high - 1, high + 1, high | 1, r, r ^ high, r ^ 1, mask ^ 1};
    for (uint32_t& x : v) {
        x &= mask;
        if (x == 0) x = 1;
    }
    return v;
}

// The table bytes the documented layout gives for a model: slot s (= i*b + k) at bits
// [s*f, (s+1)*f) of one little-endian bit string.
std::vector<unsigned char> layout_of(const std::vector<uint32_t>& model, unsigned f, size_t nbytes) {
    std::vector<unsigned char> bytes(nbytes, 0);
    for (size_t s = 0; s < model.size(); ++s) {
        for (unsigned j = 0; j < f; ++j) {
            if ((model[s] >> j) & 1u) {
                const uint64_t bit = static_cast<uint64_t>(s) * f + j;
                bytes[bit >> 3] |= static_cast<unsigned char>(1u << (bit & 7));
            }
        }
    }
    return bytes;
}

bool table_equals_model(const PackedTable& t, const std::vector<uint32_t>& model) {
    const unsigned b = t.bucket_size();
    for (size_t s = 0; s < model.size(); ++s)
        if (t.get(s / b, static_cast<unsigned>(s % b)) != model[s]) return false;
    return true;
}

bool padding_is_zero(const PackedTable& t) {
    for (uint64_t i = t.data_bytes(); i < t.allocated_bytes(); ++i)
        if (t.data()[i] != 0) return false;
    return true;
}

}  // namespace

TEST_CASE(sizes_and_allocation) {
    for (unsigned b : kBucketSizes) {
        for (unsigned f = 4; f <= 32; ++f) {
            for (uint64_t m : {uint64_t(1), uint64_t(3), uint64_t(8), uint64_t(37), uint64_t(1000)}) {
                cktest::context() = params(m, b, f);
                PackedTable t(m, b, f);
                CHECK_EQ(t.bucket_count(), m);
                CHECK_EQ(t.bucket_size(), b);
                CHECK_EQ(t.fingerprint_bits(), f);
                CHECK_EQ(t.slot_count(), m * b);
                CHECK_EQ(t.data_bytes(), (m * b * f + 7) / 8);
                CHECK_EQ(t.allocated_bytes(), t.data_bytes() + cuckoo::kTablePadding);
                CHECK(t.writable());
                CHECK_EQ(reinterpret_cast<uintptr_t>(t.data()) % cuckoo::kTableAlignment, 0u);
                bool all_zero = true;
                for (uint64_t i = 0; i < t.allocated_bytes(); ++i) all_zero &= t.data()[i] == 0;
                CHECK(all_zero);
            }
        }
    }
}

TEST_CASE(set_get_round_trip_every_width_leaves_neighbours_untouched) {
    cktest::Rng rng(10);
    for (unsigned b : kBucketSizes) {
        for (unsigned f = 4; f <= 32; ++f) {
            const uint64_t m = 37;  // odd on purpose: buckets start at every bit offset
            cktest::context() = params(m, b, f);
            PackedTable t(m, b, f);
            std::vector<uint32_t> model(m * b, 0);
            const std::vector<uint32_t> tricky = tricky_values(f, rng);
            for (int op = 0; op < 3000; ++op) {
                const uint64_t s = rng.below(model.size());
                uint32_t v;
                switch (rng.below(4)) {
                    case 0: v = 0; break;
                    case 1: v = tricky[rng.below(tricky.size())]; break;
                    default: v = static_cast<uint32_t>(rng.next()) & mask_of(f);
                }
                t.set(s / b, static_cast<unsigned>(s % b), v);
                model[s] = v;
                CHECK_EQ(t.get(s / b, static_cast<unsigned>(s % b)), v);
                // The neighbouring slots (in this bucket or the adjacent ones) keep their values.
                if (s > 0) CHECK_EQ(t.get((s - 1) / b, static_cast<unsigned>((s - 1) % b)), model[s - 1]);
                if (s + 1 < model.size()) CHECK_EQ(t.get((s + 1) / b, static_cast<unsigned>((s + 1) % b)), model[s + 1]);
                if (op % 250 == 0) CHECK(table_equals_model(t, model));
            }
            CHECK(table_equals_model(t, model));
            // Writes near the end never spill into the padding (word loads rely on it being readable,
            // and the file format stores only data_bytes()).
            CHECK(padding_is_zero(t));
            // Setting every slot to all ones then back to zero leaves an all-zero table.
            for (size_t s = 0; s < model.size(); ++s) t.set(s / b, static_cast<unsigned>(s % b), mask_of(f));
            for (size_t s = 0; s < model.size(); ++s) CHECK_EQ(t.get(s / b, static_cast<unsigned>(s % b)), mask_of(f));
            CHECK(padding_is_zero(t));
            // Bits past the last slot inside the last data byte stay clear.
            const uint64_t used_bits = m * b * f;
            if (used_bits % 8) CHECK_EQ(t.data()[t.data_bytes() - 1] >> (used_bits % 8), 0);
            for (size_t s = 0; s < model.size(); ++s) t.set(s / b, static_cast<unsigned>(s % b), 0);
            bool all_zero = true;
            for (uint64_t i = 0; i < t.allocated_bytes(); ++i) all_zero &= t.data()[i] == 0;
            CHECK(all_zero);
        }
    }
}

TEST_CASE(byte_layout_is_the_documented_little_endian_bit_string) {
    // Hand-worked examples.
    {
        PackedTable t(2, 4, 12);
        t.set(0, 0, 0xABC);
        t.set(0, 1, 0x123);
        // bits 0..23 hold 0x123ABC, least significant byte first.
        CHECK_EQ(t.data()[0], 0xBC);
        CHECK_EQ(t.data()[1], 0x3A);
        CHECK_EQ(t.data()[2], 0x12);
        t.set(1, 0, 0xFFF);  // slot 4: bits 48..59
        CHECK_EQ(t.data()[6], 0xFF);
        CHECK_EQ(t.data()[7], 0x0F);
    }
    {
        PackedTable t(3, 2, 4);
        t.set(0, 0, 0x1);
        t.set(0, 1, 0xF);
        t.set(2, 1, 0x9);  // slot 5: bits 20..23, the high nibble of byte 2
        CHECK_EQ(t.data()[0], 0xF1);
        CHECK_EQ(t.data()[1], 0x00);
        CHECK_EQ(t.data()[2], 0x90);
    }
    {
        PackedTable t(1, 2, 5);
        t.set(0, 1, 0x1F);  // bits 5..9
        CHECK_EQ(t.data()[0], 0xE0);
        CHECK_EQ(t.data()[1], 0x03);
    }
    // Random contents for every width and bucket size against the bit-by-bit construction.
    cktest::Rng rng(11);
    for (unsigned b : kBucketSizes) {
        for (unsigned f = 4; f <= 32; ++f) {
            for (uint64_t m : {uint64_t(1), uint64_t(5), uint64_t(16), uint64_t(41)}) {
                cktest::context() = params(m, b, f);
                PackedTable t(m, b, f);
                std::vector<uint32_t> model(m * b);
                for (size_t s = 0; s < model.size(); ++s) {
                    model[s] = rng.coin(20) ? 0 : static_cast<uint32_t>(rng.next()) & mask_of(f);
                    t.set(s / b, static_cast<unsigned>(s % b), model[s]);
                }
                const std::vector<unsigned char> expected = layout_of(model, f, t.data_bytes());
                CHECK(std::memcmp(t.data(), expected.data(), expected.size()) == 0);
                // And the other way round: a table viewing those bytes reads the model back.
                std::vector<unsigned char> bytes(expected);
                bytes.resize(expected.size() + cuckoo::kTablePadding, 0);
                const PackedTable v = PackedTable::view(m, b, f, false, bytes.data(), bytes.size());
                CHECK(table_equals_model(v, model));
            }
        }
    }
}

TEST_CASE(bucket_queries_agree_with_a_brute_force_scan) {
    cktest::Rng rng(12);
    for (unsigned b : kBucketSizes) {
        for (unsigned f = 4; f <= 32; ++f) {
            const uint64_t m = 29;
            cktest::context() = params(m, b, f);
            PackedTable t(m, b, f);
            std::vector<uint32_t> model(m * b, 0);
            const std::vector<uint32_t> pool = tricky_values(f, rng);
            for (int round = 0; round < 12; ++round) {
                // Refill with a density that varies by round: empty, sparse, full buckets.
                const unsigned zero_percent = round == 0 ? 100 : (round % 4) * 30;
                for (size_t s = 0; s < model.size(); ++s) {
                    uint32_t v = 0;
                    if (!rng.coin(zero_percent)) v = pool[rng.below(pool.size())];
                    model[s] = v;
                    t.set(s / b, static_cast<unsigned>(s % b), v);
                }
                for (uint64_t i = 0; i < m; ++i) {
                    const uint32_t* slots = &model[i * b];
                    std::vector<uint32_t> queries(pool);
                    queries.push_back(0);
                    queries.push_back(static_cast<uint32_t>(rng.next()) & mask_of(f));
                    for (uint32_t q : queries) {
                        unsigned n = 0;
                        int first = -1;
                        for (unsigned k = 0; k < b; ++k) {
                            if (slots[k] == q) {
                                ++n;
                                if (first < 0) first = static_cast<int>(k);
                            }
                        }
                        CHECK_EQ(t.contains(i, q), n > 0);
                        CHECK_EQ(t.count(i, q), n);
                        CHECK_EQ(t.find_slot(i, q), first);
                    }
                    unsigned occupied = 0;
                    for (unsigned k = 0; k < b; ++k) occupied += slots[k] != 0;
                    CHECK_EQ(t.occupied(i), occupied);
                }
            }
        }
    }
}

TEST_CASE(prefault_keeps_the_bytes) {
    // A mapped buffer (2 MiB and more: madvise) and a small one (a write of each page's own
    // byte), half of each written before: prefault() changes no byte, and the pages never
    // written read as zero.
    for (const size_t size : {size_t(5) << 20, size_t(3) << 20 | 123, size_t(10000)}) {
        ByteBuffer b(size);
        cktest::Rng rng(size);
        std::vector<unsigned char> model(size, 0);
        for (size_t i = 0; i < size / 2; i += 1 + rng.next() % 3000)
            model[i] = b.data()[i] = static_cast<unsigned char>(1 + rng.next() % 255);
        b.prefault();
        CHECK(std::memcmp(b.data(), model.data(), size) == 0);
    }
    ByteBuffer view = ByteBuffer::view(reinterpret_cast<const unsigned char*>("abc"), 3);
    view.prefault();  // not its bytes: nothing happens
    CHECK(std::memcmp(view.data(), "abc", 3) == 0);
}

TEST_CASE(clear_copy_and_view) {
    cktest::Rng rng(13);
    for (unsigned b : kBucketSizes) {
        for (unsigned f : {4u, 12u, 16u, 31u, 32u}) {
            const uint64_t m = 24;
            cktest::context() = params(m, b, f);
            PackedTable t(m, b, f);
            std::vector<uint32_t> model(m * b);
            for (size_t s = 0; s < model.size(); ++s) {
                model[s] = static_cast<uint32_t>(rng.next()) & mask_of(f);
                t.set(s / b, static_cast<unsigned>(s % b), model[s]);
            }
            // A copy owns its bytes: writing one does not change the other.
            PackedTable c = t;
            CHECK(c.data() != t.data());
            CHECK(c.writable());
            CHECK(table_equals_model(c, model));
            c.set(0, 0, model[0] ^ 1);
            CHECK_EQ(t.get(0, 0), model[0]);
            PackedTable assigned;
            assigned = t;
            assigned.clear();
            CHECK(table_equals_model(t, model));
            CHECK_EQ(assigned.occupied(0), 0u);
            // A move takes the bytes.
            const unsigned char* before = c.data();
            PackedTable moved = std::move(c);
            CHECK(moved.data() == before);

            // A view reads the bytes it was given, is read-only, and clear() leaves them alone.
            std::vector<unsigned char> bytes(t.data(), t.data() + t.allocated_bytes());
            PackedTable v = PackedTable::view(m, b, f, false, bytes.data(), bytes.size());
            CHECK(!v.writable());
            CHECK(v.data() == bytes.data());
            CHECK(table_equals_model(v, model));
            v.clear();
            CHECK(table_equals_model(v, model));
            PackedTable vc = v;  // copying a view gives an owned, writable copy of its bytes
            CHECK(vc.data() != bytes.data());
            CHECK(vc.writable());
            CHECK(table_equals_model(vc, model));
            CHECK_THROWS(PackedTable::view(m, b, f, false, bytes.data(), t.data_bytes() + cuckoo::kTablePadding - 1),
                         std::invalid_argument);

            t.clear();
            for (size_t s = 0; s < model.size(); ++s) CHECK_EQ(t.get(s / b, static_cast<unsigned>(s % b)), 0u);
            // prefetch of the first and last bucket is harmless (and within the allocation).
            t.prefetch(0);
            t.prefetch(m - 1);
        }
    }
}

// Tables of 2 MiB and more are mapped at a 2 MiB boundary (so that transparent huge pages can
// back them), read as zero, and copy and move like the small ones.
TEST_CASE(large_tables_are_huge_page_aligned_zero_and_copyable) {
    const uint64_t m = (uint64_t(3) << 20) / 8 + 8;  // 3 MiB and a bit of 16-bit, b = 4 buckets
    PackedTable t(m, 4, 16);
    CHECK(t.data_bytes() > (uint64_t(3) << 20));
#if defined(__linux__)
    CHECK_EQ(reinterpret_cast<uintptr_t>(t.data()) % (uintptr_t(2) << 20), uintptr_t(0));
#endif
    CHECK_EQ(reinterpret_cast<uintptr_t>(t.data()) % cuckoo::kTableAlignment, uintptr_t(0));
    for (uint64_t i : {uint64_t(0), m / 2, m - 1}) CHECK_EQ(t.occupied(i), 0u);
    CHECK_EQ(t.data()[t.allocated_bytes() - 1], 0);  // the padding is readable and zero
    t.set(m - 1, 3, 0xBEEF);
    t.set(0, 0, 0x1234);
    PackedTable c = t;
    CHECK(c.data() != t.data());
    CHECK_EQ(c.get(m - 1, 3), 0xBEEFu);
    CHECK_EQ(c.get(0, 0), 0x1234u);
    c.clear();
    CHECK_EQ(c.get(m - 1, 3), 0u);
    CHECK_EQ(t.get(m - 1, 3), 0xBEEFu);
    PackedTable moved = std::move(t);
    CHECK_EQ(moved.get(0, 0), 0x1234u);
    moved = c;  // assignment releases the old mapping and copies
    CHECK_EQ(moved.get(0, 0), 0u);
}

int main(int argc, char** argv) { return cktest::run_all(argc, argv); }
