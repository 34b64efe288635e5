// cuckoo::Window (cpp/include/cuckoo/window.hpp) against plain models: a count window against a
// deque of the last N keys, a time window against the list of every recorded (key, time), exact
// answers through many generations, late records, and the approximate mode's one-sided error.
#include "cuckoo/window.hpp"

#include <deque>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "check.hpp"

namespace {

cuckoo::KeySpan span(const std::string& s) {
    return cuckoo::KeySpan{reinterpret_cast<const unsigned char*>(s.data()), s.size()};
}

cuckoo::WindowVerdict see(cuckoo::Window& w, const std::string& k, double t = 0) {
    return w.see(span(k), w.hasher().hash_key(k.data(), k.size()), t);
}

// The count-window model: a duplicate iff among the last N keys.
bool model_count(std::deque<std::string>& last, uint64_t n, const std::string& k) {
    bool dup = false;
    for (const std::string& x : last) dup = dup || x == k;
    last.push_back(k);
    if (last.size() > n) last.pop_front();
    return dup;
}

// The event-time model: late when t < max - L (kept, not recorded); else a duplicate iff a
// recorded time of the key lies within D.
struct TimeModel {
    TimeModel(double d_, double l_) : d(d_), l(l_) {}
    double d, l, max = 0;
    bool have = false;
    std::vector<std::pair<std::string, double>> recorded;
    cuckoo::WindowVerdict see(const std::string& k, double t) {
        if (have && t < max - l) return cuckoo::WindowVerdict::late;
        bool dup = false;
        for (const auto& r : recorded) dup = dup || (r.first == k && std::abs(t - r.second) < d);
        recorded.emplace_back(k, t);
        max = have ? std::max(max, t) : t;
        have = true;
        return dup ? cuckoo::WindowVerdict::duplicate : cuckoo::WindowVerdict::kept;
    }
};

}  // namespace

TEST_CASE(count_window_equals_a_deque_of_the_last_n) {
    std::mt19937_64 rng(1);
    for (uint64_t n : {1, 2, 3, 7, 50}) {
        for (unsigned gens : {1u, 2u, 4u, 9u}) {
            cuckoo::WindowConfig c;
            c.records = n;
            c.generations = gens;
            cuckoo::Window w(c);
            std::deque<std::string> last;
            uint64_t dups = 0;
            for (int i = 0; i < 3000; ++i) {
                const std::string k = std::to_string(rng() % (n + 5));
                const bool want = model_count(last, n, k);
                dups += want;
                CHECK_EQ(see(w, k) == cuckoo::WindowVerdict::duplicate, want);
            }
            CHECK_EQ(w.duplicates(), dups);
            CHECK(w.generation_count() <= gens + 2);
        }
    }
}

TEST_CASE(time_window_equals_the_event_time_model) {
    std::mt19937_64 rng(2);
    for (double d : {1.0, 2.5}) {
        for (double l : {-1.0, 0.0, 0.7, 4.0}) {
            cuckoo::WindowConfig c;
            c.seconds = d;
            c.lateness = l;
            cuckoo::Window w(c);
            TimeModel model(d, l < 0 ? d : l);
            double now = 0;
            for (int i = 0; i < 3000; ++i) {
                now += static_cast<double>(rng() % 100) / 100.0;
                // Out of order: up to 3 D behind the stream's front, on a grid (ties at D exactly).
                const double t = now - static_cast<double>(rng() % 7) * d / 2.0 * static_cast<double>(rng() % 2);
                const std::string k = std::to_string(rng() % 20);
                CHECK_EQ(static_cast<int>(see(w, k, t)), static_cast<int>(model.see(k, t)));
            }
            if ((l < 0 ? d : l) < 3 * d) CHECK(w.late() > 0);
        }
    }
}

TEST_CASE(approximate_windows_never_miss_a_duplicate_in_the_window) {
    std::mt19937_64 rng(3);
    cuckoo::WindowConfig c;
    c.records = 100;
    c.exact = false;
    c.fpr = 0.01;
    cuckoo::Window w(c);
    std::deque<std::string> last;
    uint64_t wrong = 0;
    for (int i = 0; i < 20000; ++i) {
        const std::string k = std::to_string(rng() % 300);
        const bool want = model_count(last, 100, k);
        const bool got = see(w, k) == cuckoo::WindowVerdict::duplicate;
        if (want) CHECK(got);
        wrong += got && !want;
    }
    CHECK(wrong > 0);  // keys up to one generation beyond the window count as seen
    CHECK(w.fpr_bound() <= 0.01 + 1e-12);

    cuckoo::WindowConfig ct;
    ct.seconds = 5;
    ct.exact = false;
    cuckoo::Window wt(ct);
    TimeModel model(5, 5);
    for (int i = 0; i < 20000; ++i) {
        const double t = i * 0.01 - static_cast<double>(rng() % 300) * 0.01;
        const std::string k = std::to_string(rng() % 2000);
        const cuckoo::WindowVerdict want = model.see(k, t);
        const cuckoo::WindowVerdict got = see(wt, k, t);
        if (want == cuckoo::WindowVerdict::duplicate) CHECK(got == cuckoo::WindowVerdict::duplicate);
        if (want == cuckoo::WindowVerdict::late) CHECK(got == cuckoo::WindowVerdict::late);
    }
}

TEST_CASE(memory_stays_bounded_by_the_window) {
    cuckoo::WindowConfig c;
    c.records = 1000;
    cuckoo::Window w(c);
    for (uint64_t i = 0; i < 200000; ++i) see(w, std::to_string(i));  // every key new
    CHECK(w.entries() <= 1000 + 250);
    CHECK(w.generation_count() <= 5);
    cuckoo::WindowConfig ct;
    ct.seconds = 10;
    cuckoo::Window wt(ct);
    for (uint64_t i = 0; i < 200000; ++i) see(wt, std::to_string(i), static_cast<double>(i) * 0.01);
    // 100 keys a second; the state spans L + D (20 s) and one slice of W = 5 s.
    CHECK(wt.entries() <= 2500);
}

TEST_CASE(a_small_window_holds_little_memory) {
    // Generations of a few keys must not each hold a 1 MiB arena chunk (zeroed: resident).
    cuckoo::WindowConfig c;
    c.records = 10;
    cuckoo::Window w(c);
    for (uint64_t i = 0; i < 10000; ++i) see(w, std::to_string(i % 37));
    CHECK(w.memory_bytes() < 64 * 1024);
}

TEST_CASE(bad_arguments_and_times_are_refused) {
    cuckoo::WindowConfig c;
    CHECK_THROWS(cuckoo::Window{c}, std::invalid_argument);  // neither records nor seconds
    c.seconds = 1;
    c.generations = 0;
    CHECK_THROWS(cuckoo::Window{c}, std::invalid_argument);
    c.generations = 4;
    cuckoo::Window w(c);
    see(w, "a", 1.0);
    CHECK_THROWS(see(w, "a", std::nan("")), std::invalid_argument);
    CHECK_THROWS(see(w, "a", 1e300), std::invalid_argument);
    CHECK_EQ(w.records(), uint64_t(1));
    CHECK(see(w, "a", 1.5) == cuckoo::WindowVerdict::duplicate);
}

int main(int argc, char** argv) { return cktest::run_all(argc, argv); }
