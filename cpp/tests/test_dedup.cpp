// The streaming dedup pipeline (cuckoo/dedup.hpp) against a model (first occurrence of each key,
// lines written as read), through a filter and a store, for several block sizes and thread
// counts, on input with CRLF, empty lines, NUL bytes, lines longer than a block and no final
// newline. POSIX only, like the store (not compiled for Windows: .ci/cross.sh).
#include "cuckoo/dedup.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <poll.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "check.hpp"

namespace {

std::string temp_path(const char* name) {
    static std::string dir;
    if (dir.empty()) {
        char tmpl[] = "/tmp/cuckoo-dedup-test-XXXXXX";
        const char* d = ::mkdtemp(tmpl);
        REQUIRE(d != nullptr);
        dir = d;
    }
    return dir + "/" + name;
}

void write_file(const std::string& path, const std::string& data) {
    FILE* f = std::fopen(path.c_str(), "wb");
    REQUIRE(f != nullptr);
    std::fwrite(data.data(), 1, data.size(), f);
    std::fclose(f);
}

std::string read_file(const std::string& path) {
    std::string out;
    FILE* f = std::fopen(path.c_str(), "rb");
    REQUIRE(f != nullptr);
    char buf[65536];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
    std::fclose(f);
    return out;
}

// The records of the inputs read as one: (text as written, key); a last line without '\n' gets
// one when more input follows.
std::vector<std::pair<std::string, std::string>> records_of(const std::vector<std::string>& inputs) {
    std::vector<std::pair<std::string, std::string>> out;
    for (size_t i = 0; i < inputs.size(); ++i) {
        const std::string& d = inputs[i];
        size_t pos = 0;
        while (pos < d.size()) {
            size_t e = d.find('\n', pos);
            const bool open = e == std::string::npos;
            std::string line = open ? d.substr(pos) : d.substr(pos, e + 1 - pos);
            if (open && i + 1 < inputs.size()) line += '\n';
            std::string key = line;
            if (!key.empty() && key.back() == '\n') key.pop_back();
            if (!key.empty() && key.back() == '\r') key.pop_back();
            out.emplace_back(line, key);
            pos = open ? d.size() : e + 1;
        }
    }
    return out;
}

// The model: (kept output, dropped output) of first-occurrence dedup over inputs read as one.
std::pair<std::string, std::string> model(const std::vector<std::string>& inputs) {
    std::set<std::string> seen;
    std::string kept, dropped;
    for (const auto& [line, key] : records_of(inputs)) (seen.insert(key).second ? kept : dropped) += line;
    return {kept, dropped};
}

std::string random_input(std::mt19937_64& rng, size_t lines) {
    std::string d;
    for (size_t k = 0; k < lines; ++k) {
        const unsigned kind = rng() % 10;
        if (kind == 0) {
            d += std::string(rng() % 300, 'L');  // longer than the small blocks
        } else if (kind == 1) {
            d += std::string(1, '\0') + std::to_string(rng() % 5);
        } else if (kind != 2) {  // kind 2: an empty line
            d += "k" + std::to_string(rng() % 40);
        }
        d += rng() % 4 == 0 ? "\r\n" : "\n";
    }
    if (!d.empty() && rng() % 2) d.pop_back();  // no final newline (or a lone '\r' at the end)
    return d;
}

// 1 to 3 random inputs (random_input, fewer than max_lines lines each), written to files `name`0,
// `name`1, ...
struct Inputs {
    std::vector<std::string> data, paths;
};
Inputs random_inputs(std::mt19937_64& rng, size_t max_lines, const std::string& name) {
    Inputs in;
    const size_t n_inputs = 1 + rng() % 3;
    for (size_t i = 0; i < n_inputs; ++i) {
        in.data.push_back(random_input(rng, rng() % max_lines));
        in.paths.push_back(temp_path((name + std::to_string(i)).c_str()));
        write_file(in.paths.back(), in.data.back());
    }
    return in;
}

std::vector<cuckoo::dedup::Input> open_inputs(const std::vector<std::string>& paths) {
    std::vector<cuckoo::dedup::Input> in;
    for (const std::string& p : paths) {
        const int fd = ::open(p.c_str(), O_RDONLY);
        REQUIRE(fd >= 0);
        in.push_back(cuckoo::dedup::Input{fd, {}});
    }
    return in;
}

void close_inputs(const std::vector<cuckoo::dedup::Input>& in) {
    for (const auto& i : in) ::close(i.fd);
}

int open_out(const std::string& path) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    REQUIRE(fd >= 0);
    return fd;
}

// Dedups the files at `paths` through filter f into temp_path("out"); checks that the run went
// to the end and wrote `want` (the model's kept lines).
cuckoo::dedup::Result dedup_into_filter(cuckoo::StagedFilter& f, const std::vector<std::string>& paths,
                                        const cuckoo::dedup::Options& opt, const std::string& want) {
    const auto in = open_inputs(paths);
    const int out = open_out(temp_path("out"));
    const auto r = cuckoo::dedup::with_filter(f, in, out, -1, opt, nullptr);
    close_inputs(in);
    ::close(out);
    CHECK(r.status == cuckoo::dedup::Status::done);
    CHECK(read_file(temp_path("out")) == want);
    return r;
}

}  // namespace

TEST_CASE(pipeline_equals_the_model_through_a_store_and_a_filter) {
    std::mt19937_64 rng(11);
    for (int trial = 0; trial < 12; ++trial) {
        const auto [data, paths] = random_inputs(rng, 400, "in");
        const auto want = model(data);
        for (unsigned threads : {1u, 2u, 4u}) {
            cuckoo::dedup::Options opt;
            opt.block = 1 + rng() % 200;
            opt.threads = threads;
            cktest::context() = "trial " + std::to_string(trial) + " threads " + std::to_string(threads) + " block " +
                                std::to_string(opt.block);
            for (bool batches : {false, true}) {  // store
                const std::string store_path = temp_path("s.ckv");
                for (const char* ext : {"", ".idx", ".lock"}) ::unlink((store_path + ext).c_str());
                cuckoo::Store::Options so;
                so.log_id = 5;
                auto s = cuckoo::Store::open(store_path, so);
                const auto in = open_inputs(paths);
                const int out = open_out(temp_path("out")), dropped = open_out(temp_path("dropped"));
                const auto r = cuckoo::dedup::with_store(*s, in, out, dropped, opt, batches, !batches, nullptr);
                close_inputs(in);
                ::close(out);
                ::close(dropped);
                CHECK(r.status == cuckoo::dedup::Status::done);
                CHECK(read_file(temp_path("out")) == want.first);
                CHECK(read_file(temp_path("dropped")) == want.second);
                CHECK_EQ(r.kept, s->size());
            }
            {  // filter: a false drop is possible but, at 32-bit fingerprints and a few hundred keys, never seen
                cuckoo::StagedFilter f(cuckoo::Filter::for_capacity(1000, 0.0, 32, 4, 500, 3), true);
                const auto r = dedup_into_filter(f, paths, opt, want.first);
                CHECK_EQ(r.kept, f.size());
            }
        }
    }
}

TEST_CASE(filter_blocks_sized_by_lines_give_the_answers_of_one_thread) {
    // Blocks of 1 MiB of short lines: with producers, the blocks after the first are read at
    // about 16 Ki lines (Options::lines_per_block); a line of 700 KB passes the sized block. The
    // output and the filter's bytes are those of one thread reading whole 1 MiB blocks.
    std::mt19937_64 rng(29);
    std::string data;
    for (size_t k = 0; k < 400000; ++k) {
        data += "id" + std::to_string(rng() % 150000) + (rng() % 5 == 0 ? "\r\n" : "\n");
        if (k == 250000) data += std::string(700000, 'W') + "\n";
    }
    const std::string path = temp_path("short_lines");
    write_file(path, data);
    const auto want = model({data});
    std::string tables[2];
    for (unsigned threads : {1u, 2u}) {
        cktest::context() = "threads " + std::to_string(threads);
        cuckoo::dedup::Options opt;
        opt.block = size_t(1) << 20;
        opt.threads = threads;
        cuckoo::StagedFilter f(cuckoo::Filter::for_capacity(200000, 0.0, 32, 4, 500, 7), true);
        CHECK_EQ(dedup_into_filter(f, {path}, opt, want.first).lines, 400001u);
        const auto& t = f.newest().table();
        tables[threads - 1].assign(reinterpret_cast<const char*>(t.data()), t.data_bytes());
    }
    CHECK(tables[0] == tables[1]);
}

TEST_CASE(the_producer_warms_the_next_block_with_its_whole_hashes_with_two_threads_only) {
    // A slow apply (the calling thread the slower side, as with a filter on short lines): with
    // two threads the producer passes the hashes of the block taken next to the warmer, every
    // one computed (what apply then sees for that block); with one thread or several producers
    // the warmer is never called. The output does not change.
    std::string data;
    for (size_t k = 0; k < 6000; ++k) data += "line" + std::to_string(k % 4000) + "\n";
    const std::string path = temp_path("warm_lines");
    write_file(path, data);
    const auto want = model({data});
    for (unsigned threads : {1u, 2u, 3u}) {
        cktest::context() = "threads " + std::to_string(threads);
        cuckoo::dedup::Options opt;
        opt.block = 2048;  // about 200 lines a block, 30 blocks
        opt.threads = threads;
        const auto in = open_inputs({path});
        const int out = open_out(temp_path("out"));
        cuckoo::dedup::Pipeline p(in, out, -1, cuckoo::KeyHasher{3}, opt, nullptr);
        std::mutex m;
        std::vector<std::vector<uint64_t>> warmed, applied;
        p.set_next_block_warmer([&](const uint64_t* h, size_t n) {
            std::lock_guard<std::mutex> g(m);
            warmed.emplace_back(h, h + n);
        });
        std::set<std::string> seen;
        const auto r = p.run(
            [&](cuckoo::dedup::Block& b, size_t n) {
                std::this_thread::sleep_for(std::chrono::milliseconds(2));
                {
                    std::lock_guard<std::mutex> g(m);
                    applied.emplace_back(b.hashes.begin(), b.hashes.begin() + static_cast<std::ptrdiff_t>(n));
                }
                for (size_t j = 0; j < n; ++j) {
                    const cuckoo::KeySpan k = b.key(j);
                    b.keep[j] = seen.insert(std::string(reinterpret_cast<const char*>(k.data), k.len)).second;
                }
                return n;
            },
            [] {}, /*write_behind=*/true);
        close_inputs(in);
        ::close(out);
        CHECK(r.status == cuckoo::dedup::Status::done);
        CHECK(read_file(temp_path("out")) == want.first);
        CHECK(applied.size() >= 20u);
        if (threads != 2) {
            CHECK_EQ(warmed.size(), 0u);
            continue;
        }
        // Each block warmed is one applied, in order, with the same hashes.
        CHECK(warmed.size() >= applied.size() / 4);
        size_t at = 0;
        for (const auto& w : warmed) {
            while (at < applied.size() && applied[at] != w) ++at;
            CHECK(at < applied.size());
            ++at;
        }
    }
}

TEST_CASE(exact_passes_equal_the_model_at_every_budget) {
    // The key set's exact path (with_key_set): one pass when the keys fit, more when the budget
    // makes ranges split (down to budgets of a few keys); the output must not depend on either.
    std::mt19937_64 rng(17);
    for (int trial = 0; trial < 10; ++trial) {
        const auto [data, paths] = random_inputs(rng, 500, "in");
        const auto want = model(data);
        for (uint64_t budget : {uint64_t(1) << 30, uint64_t(3000), uint64_t(0)}) {
            for (unsigned threads : {1u, 3u}) {
                // A budget of 0: about a pass per distinct key (slow): a few trials, one thread.
                if (budget == 0 && (trial >= 3 || threads > 1)) continue;
                cuckoo::dedup::Options opt;
                opt.block = 1 + rng() % 300;
                // (Each of those passes reads the whole input again: in blocks of a few bytes, the
                // three trials took 25 s, nearly all of this binary's time, and longer under qemu
                // and TSan in CI; in blocks of 4-4.3 KiB, a few a pass, 4.5 s. Blocks that cut
                // records anywhere are the other budgets' part.)
                if (budget == 0) opt.block += 4096;
                opt.threads = threads;
                cktest::context() = "trial " + std::to_string(trial) + " budget " + std::to_string(budget) +
                                    " threads " + std::to_string(threads) + " block " + std::to_string(opt.block);
                auto in = open_inputs(paths);
                std::vector<int64_t> starts(in.size(), 0);
                if (rng() % 2 && !data[0].empty()) {  // the caller read the start of the first input already
                    const size_t k = 1 + rng() % data[0].size();
                    in[0].prefix.assign(data[0].begin(), data[0].begin() + static_cast<long>(k));
                    REQUIRE(::lseek(in[0].fd, static_cast<off_t>(k), SEEK_SET) == static_cast<off_t>(k));
                    starts[0] = static_cast<int64_t>(k);
                }
                const int out = open_out(temp_path("out")), dropped = open_out(temp_path("dropped"));
                cuckoo::dedup::ExactRun info;
                const auto r = cuckoo::dedup::with_key_set(in, starts, out, dropped, cuckoo::KeyHasher{trial + 0u}, opt,
                                                           budget, 0, nullptr, &info);
                close_inputs(in);
                ::close(out);
                ::close(dropped);
                CHECK(r.status == cuckoo::dedup::Status::done);
                CHECK(read_file(temp_path("out")) == want.first);
                CHECK(read_file(temp_path("dropped")) == want.second);
                CHECK_EQ(r.kept, info.distinct);
                if (budget >= (uint64_t(1) << 30)) CHECK_EQ(info.passes, 1u);
                if (budget < 4000 && want.first.size() > 2000) CHECK(info.passes > 1);
            }
        }
    }
}

// with_counts (--count, -d, -u, --keep last) against a model over std::map counts: every
// selection, keep first and last, with and without the counts written, budgets that make the
// keys split into hash ranges (their bits and count files, and the last pass), 1 and 3 threads
// (two lanes on a helper thread: this test runs under ThreadSanitizer in CI).
TEST_CASE(counted_runs_equal_a_counting_model) {
    std::mt19937_64 rng(23);
    for (int trial = 0; trial < 12; ++trial) {
        const auto [data, paths] = random_inputs(rng, 400, "cin");
        const auto recs = records_of(data);
        std::map<std::string, uint64_t> count, first, last;
        for (size_t k = 0; k < recs.size(); ++k) {
            const std::string& key = recs[k].second;
            if (!count[key]++) first[key] = k;
            last[key] = k;
        }
        for (uint64_t budget : {uint64_t(1) << 30, uint64_t(3000)}) {
            for (unsigned threads : {1u, 3u}) {
                cuckoo::dedup::CountOptions how;
                how.keep_last = rng() % 2;
                const unsigned selection = static_cast<unsigned>(rng() % 3);  // all, repeated, unique
                how.min_count = selection == 1 ? 2 : 1;
                how.max_count = selection == 2 ? 1 : ~uint64_t(0);
                how.write_counts = rng() % 2;
                std::string want_out, want_dropped;
                for (size_t k = 0; k < recs.size(); ++k) {
                    const auto& [text, key] = recs[k];
                    const uint64_t c = count[key];
                    const bool chosen = (how.keep_last ? last[key] : first[key]) == k && how.min_count <= c &&
                                        c <= how.max_count;
                    if (!chosen) {
                        want_dropped += text;
                    } else if (how.write_counts) {
                        char prefix[24];
                        std::snprintf(prefix, sizeof prefix, "%7llu ", static_cast<unsigned long long>(c));
                        want_out += prefix + text;
                    } else {
                        want_out += text;
                    }
                }
                cuckoo::dedup::Options opt;
                opt.block = 1 + rng() % 300;
                opt.threads = threads;
                cktest::context() = "trial " + std::to_string(trial) + " budget " + std::to_string(budget) +
                                    " threads " + std::to_string(threads) + " block " + std::to_string(opt.block);
                auto in = open_inputs(paths);
                const int out = open_out(temp_path("cout")), dropped = open_out(temp_path("cdropped"));
                cuckoo::dedup::CountedRun info;
                const auto r = cuckoo::dedup::with_counts(in, std::vector<int64_t>(in.size(), 0), out, dropped,
                                                          cuckoo::KeyHasher{trial + 0u}, opt, how, budget, 0, nullptr,
                                                          &info);
                close_inputs(in);
                ::close(out);
                ::close(dropped);
                CHECK(r.status == cuckoo::dedup::Status::done);
                CHECK(read_file(temp_path("cout")) == want_out);
                CHECK(read_file(temp_path("cdropped")) == want_dropped);
                CHECK_EQ(info.distinct, count.size());
                CHECK_EQ(info.passes, info.ranges == 1 ? 2u : 2 * info.ranges + 1);
                if (budget < 4000 && count.size() > 100) CHECK(info.ranges > 1);
            }
        }
    }
}

// with_window over a count window against a deque of the last N keys, 1 and 3 threads.
TEST_CASE(a_count_window_equals_a_deque_model) {
    std::mt19937_64 rng(29);
    for (int trial = 0; trial < 12; ++trial) {
        const auto [data, paths] = random_inputs(rng, 400, "win");
        const auto recs = records_of(data);
        const uint64_t n = 1 + rng() % 50;
        std::deque<std::string> lastn;
        std::string want;
        for (const auto& [text, key] : recs) {
            if (std::find(lastn.begin(), lastn.end(), key) == lastn.end()) want += text;
            lastn.push_back(key);
            if (lastn.size() > n) lastn.pop_front();
        }
        for (unsigned threads : {1u, 3u}) {
            cuckoo::WindowConfig cfg;
            cfg.records = n;
            cfg.seed = trial;
            cuckoo::Window w(cfg);
            cuckoo::dedup::Options opt;
            opt.block = 1 + rng() % 300;
            opt.threads = threads;
            cktest::context() = "trial " + std::to_string(trial) + " window " + std::to_string(n);
            auto in = open_inputs(paths);
            const int out = open_out(temp_path("wout"));
            const auto r = cuckoo::dedup::with_window(in, out, -1, w, opt, nullptr);
            close_inputs(in);
            ::close(out);
            CHECK(r.status == cuckoo::dedup::Status::done);
            CHECK(read_file(temp_path("wout")) == want);
        }
    }
}

TEST_CASE(exact_read_once_moves_its_keys_to_a_store_past_the_budget) {
    // Input read once (Spill: a pipe): one pass; past the budget the keys move to a store on an
    // anonymous file, at once when the expected keys do not fit, and the run goes on through it.
    // The output must not depend on where (or whether) they moved, nor on the thread count.
    std::mt19937_64 rng(23);
    for (int trial = 0; trial < 8; ++trial) {
        const auto [data, paths] = random_inputs(rng, 500, "once");
        const auto want = model(data);
        struct Case {
            uint64_t budget, expected_keys;
            double mean_key_bytes;
        };
        for (const Case c : {Case{uint64_t(1) << 30, 0, 0}, Case{3000, 0, 0}, Case{20000, 0, 0},
                             Case{3000, 100000, 20.0}}) {
            for (unsigned threads : {1u, 2u, 3u}) {
                cuckoo::dedup::Options opt;
                opt.block = 1 + rng() % 300;
                opt.threads = threads;
                cktest::context() = "trial " + std::to_string(trial) + " budget " + std::to_string(c.budget) +
                                    " expected " + std::to_string(c.expected_keys) + " threads " +
                                    std::to_string(threads) + " block " + std::to_string(opt.block);
                const auto in = open_inputs(paths);
                const std::string spill_path = temp_path("spill");
                const int spill_fd = ::open(spill_path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
                REQUIRE(spill_fd >= 0);
                const int out = open_out(temp_path("out")), dropped = open_out(temp_path("dropped"));
                cuckoo::dedup::ExactRun info;
                const auto r = cuckoo::dedup::with_key_set(
                    in, std::vector<int64_t>(in.size(), 0), out, dropped, cuckoo::KeyHasher{trial + 7u}, opt, c.budget,
                    c.expected_keys, nullptr, &info, c.mean_key_bytes, cuckoo::dedup::Spill{spill_fd, 99});
                close_inputs(in);
                ::close(out);
                ::close(dropped);
                ::close(spill_fd);
                CHECK(r.status == cuckoo::dedup::Status::done);
                CHECK(read_file(temp_path("out")) == want.first);
                CHECK(read_file(temp_path("dropped")) == want.second);
                CHECK_EQ(info.passes, 1u);
                CHECK_EQ(r.kept, info.distinct);
                const bool moved = info.spilled_at_line != ~uint64_t(0);
                if (c.expected_keys) {
                    CHECK(moved && info.spilled_at_line == 0 && info.spilled_keys == 0);
                } else if (c.budget > 100000) {
                    CHECK(!moved);
                } else if (c.budget <= 3000 && want.first.size() > 2000) {
                    CHECK(moved && info.spilled_at_line > 0 && info.spilled_keys > 0);
                }
                if (moved) CHECK(info.store.log_bytes > 0 && info.store.live == info.distinct);
            }
        }
    }
}

TEST_CASE(exact_passes_read_what_the_first_pass_read_and_notice_other_lines) {
    // A file that changes while the exact path reads it in passes (budget 0: a pass a range).
    // The tick runs after every block, with the lines of every pass so far: once the second pass
    // began (past the file's 300 lines), the file changes. Appended lines (a log being written)
    // are left out of every later pass, as the first pass never saw them: the output is that of
    // the file as the first pass read it. A file cut short, or rewritten in place with other
    // lines of the same length, stops the run (InputChanged).
    std::string d;
    for (int k = 0; k < 300; ++k) d += "line" + std::to_string(100 + k % 200) + "\n";
    std::string rewritten = d;
    std::swap(rewritten[4], rewritten[5]);  // "line100" -> "line010": same length, another key
    const std::vector<std::pair<const char*, std::function<void(const std::string&)>>> changes{
        {"append", [](const std::string& path) {
             FILE* f = std::fopen(path.c_str(), "ab");
             std::fputs("more\nlines\nline100\nno newline", f);
             std::fclose(f);
         }},
        {"truncate", [&](const std::string& path) { CHECK(::truncate(path.c_str(), 1000) == 0); }},
        {"rewrite", [&](const std::string& path) {
             // In place (the open fd reads the new bytes), as an editor that writes over a file.
             FILE* f = std::fopen(path.c_str(), "r+b");
             std::fwrite(rewritten.data(), 1, rewritten.size(), f);
             std::fclose(f);
         }},
    };
    for (unsigned threads : {1u, 2u}) {
        for (const auto& named_change : changes) {
            // (not a structured binding: a lambda capturing one is C++20, and this is C++17)
            const auto& name = named_change.first;
            const auto& change = named_change.second;
            const std::string path = temp_path("changing"), out_path = temp_path("out");
            write_file(path, d);
            cuckoo::dedup::Options opt;
            opt.block = 64;
            opt.threads = threads;
            opt.tick_every = std::chrono::milliseconds(0);
            bool changed = false;
            auto in = open_inputs({path});
            const int out = open_out(out_path);
            bool threw = false;
            cuckoo::dedup::ExactRun info;
            try {
                cuckoo::dedup::with_key_set(in, {0}, out, -1, cuckoo::KeyHasher{1}, opt, 0, 0,
                                            [&](const cuckoo::dedup::Result& r) {
                                                if (r.lines > 300 && !changed) {
                                                    change(path);
                                                    changed = true;
                                                }
                                                return false;
                                            },
                                            &info);
            } catch (const cuckoo::dedup::InputChanged& e) {
                threw = std::string(e.what()).find("changed") != std::string::npos;
            }
            close_inputs(in);
            ::close(out);
            CHECK(changed);
            if (std::string(name) == "append") {
                CHECK(!threw);
                CHECK(info.passes > 2);
                CHECK(read_file(out_path) == model({d}).first);
            } else {
                CHECK(threw);
            }
        }
    }
}

TEST_CASE(pipeline_stops_before_a_key_longer_than_max_key) {
    const std::string path = temp_path("long");
    write_file(path, "a\nb\n" + std::string(50, 'x') + "\nc\n");
    for (size_t block : {size_t(4), size_t(1000)}) {
        cuckoo::dedup::Options opt;
        opt.block = block;
        opt.max_key = 10;
        cuckoo::Store::Options so;
        so.log_id = 6;
        const std::string store_path = temp_path("t.ckv");
        for (const char* ext : {"", ".idx", ".lock"}) ::unlink((store_path + ext).c_str());
        auto s = cuckoo::Store::open(store_path, so);
        const auto in = open_inputs({path});
        const int out = open_out(temp_path("out"));
        const auto r = cuckoo::dedup::with_store(*s, in, out, -1, opt, true, false, nullptr);
        close_inputs(in);
        ::close(out);
        CHECK(r.status == cuckoo::dedup::Status::key_too_long);
        CHECK_EQ(r.lines, 2u);
        CHECK(read_file(temp_path("out")) == "a\nb\n");
        CHECK_EQ(s->size(), 2u);
    }
}

// A Pipeline over pipes, run on a thread of its own, with a model's apply (first occurrence of
// each key) that may stop the run after `stop_at` lines and sleeps `sleep` a block (so that the
// producer gets ahead of it).
struct PipeRun {
    int in[2] = {-1, -1}, out[2] = {-1, -1};
    std::set<std::string> seen;
    cuckoo::dedup::Result result;
    std::atomic<bool> done{false};
    std::thread thread;
    PipeRun(unsigned threads, size_t block, uint64_t stop_at, std::chrono::milliseconds sleep,
            bool out_to_pipe) {
        REQUIRE(::pipe(in) == 0);
        if (out_to_pipe) {
            REQUIRE(::pipe(out) == 0);
        } else {
            out[1] = open_out(temp_path("pipe_out"));
        }
        thread = std::thread([this, threads, block, stop_at, sleep] {
            cuckoo::dedup::Options opt;
            opt.block = block;
            opt.threads = threads;
            cuckoo::dedup::Pipeline p({cuckoo::dedup::Input{in[0], {}}}, out[1], -1, cuckoo::KeyHasher{3}, opt,
                                      nullptr);
            uint64_t lines = 0;
            result = p.run(
                [&](cuckoo::dedup::Block& b, size_t n) -> size_t {
                    std::this_thread::sleep_for(sleep);
                    size_t j = 0;
                    for (; j < n && lines < stop_at; ++j, ++lines) {
                        const cuckoo::KeySpan k = b.key(j);
                        b.keep[j] = seen.emplace(reinterpret_cast<const char*>(k.data), k.len).second;
                    }
                    return j;
                },
                [] {}, /*write_behind=*/threads > 1);
            done = true;
        });
    }
    void write_input(const std::string& d) const {
        REQUIRE(::write(in[1], d.data(), d.size()) == static_cast<ssize_t>(d.size()));
    }
    void close_input() {
        if (in[1] >= 0) ::close(in[1]);
        in[1] = -1;
    }
    // Waits up to `limit` (a hang guard) for the run to end.
    bool ended_within(std::chrono::seconds limit) const {
        const auto until = std::chrono::steady_clock::now() + limit;
        while (!done && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(5));
        return done;
    }
    // Reads the output pipe until it holds `want` bytes or `limit` passed.
    std::string read_output(size_t want, std::chrono::milliseconds limit) const {
        std::string got;
        const auto until = std::chrono::steady_clock::now() + limit;
        while (got.size() < want && std::chrono::steady_clock::now() < until) {
            pollfd pfd{out[0], POLLIN, 0};
            if (::poll(&pfd, 1, 20) <= 0) continue;
            char buf[4096];
            const ssize_t n = ::read(out[0], buf, sizeof buf);
            if (n <= 0) break;
            got.append(buf, static_cast<size_t>(n));
        }
        return got;
    }
    ~PipeRun() {
        close_input();  // (ends a run that hung, after its check failed)
        if (thread.joinable()) thread.join();
        for (int fd : {in[0], out[0], out[1]})
            if (fd >= 0) ::close(fd);
    }
};

// The run stops (as when a filter fills) near the end of what a pipe holds, while the pipe stays
// open with the start of one more line. With 2 threads, one thread reads and writes: its read
// waited on the pipe while the calling thread waited for room in the full write queue, and the
// run ended only when the pipe closed. It must end at once, having written the lines applied.
TEST_CASE(a_run_that_stops_ends_while_its_input_pipe_stays_open) {
    std::string data, want;
    for (int k = 0; k < 1200; ++k) {
        const std::string line = "line-" + std::to_string(100000000 + k) + "\n";  // 15 bytes
        data += line;
        if (k < 1150) want += line;
    }
    for (unsigned threads : {1u, 2u}) {
        cktest::context() = "threads " + std::to_string(threads);
        // 1 KiB blocks (18 of them): the producer reads up to 4 ahead while each takes 20 ms.
        PipeRun run(threads, 1024, 1150, std::chrono::milliseconds(20), false);
        run.write_input(data + "the start of a line");
        const bool ended = run.ended_within(std::chrono::seconds(30));
        CHECK(ended);
        run.close_input();
        run.thread.join();
        CHECK_EQ(run.result.lines, 1150u);
        CHECK(read_file(temp_path("pipe_out")) == want);
    }
}

// A live stream (`tail -f log | cuckoo dedup`): lines that came through a pipe which stays open
// come out about a tick later, not when a block (1 MiB here) filled or the pipe closed.
TEST_CASE(the_lines_of_a_live_stream_come_out_while_its_pipe_stays_open) {
    for (unsigned threads : {1u, 2u}) {
        cktest::context() = "threads " + std::to_string(threads);
        PipeRun run(threads, size_t(1) << 20, ~uint64_t(0), std::chrono::milliseconds(0), true);
        run.write_input("a\nb\na\nc");
        CHECK(run.read_output(4, std::chrono::seconds(30)) == "a\nb\n");
        run.write_input("\nb\nd\n");
        CHECK(run.read_output(4, std::chrono::seconds(30)) == "c\nd\n");
        run.close_input();
        CHECK(run.ended_within(std::chrono::seconds(30)));
        CHECK_EQ(run.result.lines, 6u);
        CHECK(run.read_output(1, std::chrono::milliseconds(100)).empty());  // (it wrote all before it ended)
    }
}

// The 8-byte newline scan (what ARM and s390x run) against a byte loop, for every alignment of
// the range, newline densities from none to all, and a callback that stops.
TEST_CASE(portable_newline_scan_finds_every_newline_in_order) {
    std::mt19937_64 rng(42);
    for (int trial = 0; trial < 300; ++trial) {
        const size_t n = rng() % 200;
        const unsigned density = static_cast<unsigned>(rng() % 5);  // 0: none ... 4: every byte
        const unsigned char end = trial % 2 ? '\n' : 0;  // (lines, or NUL-terminated records: -z)
        std::vector<unsigned char> buf(n + 1);
        for (auto& c : buf) c = (density && rng() % 4 < density) ? end : static_cast<unsigned char>(rng() % 256);
        const size_t from = n ? rng() % (n + 1) : 0, to = from + (n > from ? rng() % (n - from + 1) : 0);
        std::vector<size_t> want;
        for (size_t i = from; i < to; ++i)
            if (buf[i] == end) want.push_back(i + 1);
        const size_t stop_after = want.empty() ? 0 : rng() % (want.size() + 1);  // == size: never stops
        std::vector<size_t> got;
        auto line = [&](size_t e) {
            got.push_back(e);
            return stop_after == want.size() || got.size() < stop_after + 1;
        };
        const size_t stopped = cuckoo::dedup::for_each_newline_portable(buf.data(), from, to, line, end);
        const bool stops = stop_after < want.size();
        std::vector<size_t> expect(want.begin(), stops ? want.begin() + stop_after + 1 : want.end());
        CHECK(got == expect);
        CHECK_EQ(stopped, stops ? want[stop_after] : to);
    }
}

// A split block's keys hashed by two threads at once (the producer that split it and the calling
// thread that took it, each claiming batches of Block::kHashBatch lines) get the hashes one thread
// gives each key alone: every batch is hashed once and in full, whoever claims it, and the lines
// past the last whole batch too. CRLF, empty lines and lines of every length up to 3 KiB.
TEST_CASE(a_block_hashed_by_two_threads_at_once_gets_the_hash_of_each_key) {
    std::mt19937_64 rng(11);
    const cuckoo::KeyHasher hasher{5};
    for (int trial = 0; trial < 60; ++trial) {
        std::string text;
        const size_t lines = trial < 4 ? static_cast<size_t>(trial) * cuckoo::dedup::Block::kHashBatch + trial
                                       : rng() % (5 * cuckoo::dedup::Block::kHashBatch);
        for (size_t j = 0; j < lines; ++j) {
            const size_t len = rng() % 8 == 0 ? rng() % 3000 : rng() % 40;
            for (size_t c = 0; c < len; ++c) text.push_back(static_cast<char>('a' + rng() % 26));
            if (rng() % 5 == 0) text.push_back('\r');
            text.push_back('\n');
        }
        cuckoo::dedup::Block b;
        b.data.append(reinterpret_cast<const unsigned char*>(text.data()), text.size());
        b.used = text.size();
        cuckoo::dedup::split_lines(b, UINT64_MAX);
        REQUIRE(b.lines() == lines);
        std::atomic<bool> go{false};
        std::thread other([&] {
            while (!go.load()) std::this_thread::yield();
            cuckoo::dedup::hash_unclaimed(b, hasher);
        });
        go.store(true);
        cuckoo::dedup::hash_unclaimed(b, hasher);
        other.join();
        for (size_t j = 0; j < lines; ++j) {
            const cuckoo::KeySpan k = b.key(j);
            CHECK_EQ(b.hashes[j], hasher.hash_key(k.data, k.len));
        }
        // A block split again (a recycled one) is hashed again in full.
        cuckoo::dedup::split_lines(b, UINT64_MAX);
        std::fill(b.hashes.begin(), b.hashes.end(), 0);
        cuckoo::dedup::hash_unclaimed(b, hasher);
        for (size_t j = 0; j < lines; ++j) CHECK_EQ(b.hashes[j], hasher.hash_key(b.key(j).data, b.key(j).len));
    }
}

// newline_ends (64-byte windows on x86, four ends written unconditionally) against a byte loop,
// for '\n' and for NUL (-z):
// windows with no newline, one to four (the unconditional writes), more (the loop after them) and
// 64, buffers of every length around the window size, and no write past the slack it asks for.
TEST_CASE(newline_ends_lists_every_newline_in_order) {
    std::mt19937_64 rng(7);
    for (int trial = 0; trial < 2000; ++trial) {
        const size_t n = trial < 300 ? static_cast<size_t>(trial) : rng() % 1000;
        const unsigned density = static_cast<unsigned>(rng() % 7);  // 0: none ... 6: every byte
        const unsigned char end = trial % 3 ? '\n' : 0;  // (lines, or NUL-terminated records: -z)
        std::vector<unsigned char> buf(n);
        for (auto& c : buf) {
            const bool nl = density == 6 || (density && rng() % 64 < (1u << density));
            c = nl ? end : static_cast<unsigned char>(rng() % 256);
        }
        std::vector<uint64_t> want;
        for (size_t i = 0; i < n; ++i)
            if (buf[i] == end) want.push_back(i + 1);
        constexpr uint64_t canary = 0xDEADBEEFCAFEF00Dull;
        std::vector<uint64_t> ends(want.size() + cuckoo::dedup::kNewlineSlack + 4, canary);
        const size_t count = cuckoo::dedup::newline_ends(buf.data(), n, ends.data(), end);
        CHECK_EQ(count, want.size());
        CHECK(std::vector<uint64_t>(ends.begin(), ends.begin() + static_cast<long>(count)) == want);
        for (size_t k = want.size() + cuckoo::dedup::kNewlineSlack; k < ends.size(); ++k) CHECK_EQ(ends[k], canary);
    }
}

// The run journal (dedup/run_journal.hpp): a run stopped after any number of ticks (before or
// after a block's commit), resumed from the journal's point as cuckoo/_dedup/resume.py does it
// (the store's log, the output and the dropped file cut back, the inputs read from the point),
// writes the uninterrupted run's files.
TEST_CASE(a_run_stopped_anywhere_resumes_from_its_journal_to_the_uninterrupted_files) {
    std::mt19937_64 rng(47);
    const std::string store_path = temp_path("j.ckv"), journal_path = temp_path("j.ckv.run");
    const std::string out_path = temp_path("j.out"), dropped_path = temp_path("j.dropped");
    auto fresh = [&] {
        for (const char* ext : {"", ".idx", ".lock", ".run"}) ::unlink((store_path + ext).c_str());
    };
    for (int trial = 0; trial < 24; ++trial) {
        const auto [data, paths] = random_inputs(rng, 300, "j");
        const auto want = model(data);
        cuckoo::dedup::Options opt;
        opt.block = 1 + rng() % 64;
        opt.threads = 1 + static_cast<unsigned>(rng() % 2);
        opt.tick_every = std::chrono::milliseconds(0);  // a tick after every block
        const uint64_t stop_after = rng() % 12;
        cktest::context() = "trial " + std::to_string(trial) + " stop after " + std::to_string(stop_after);
        fresh();
        cuckoo::Store::Options so;
        so.log_id = 9;
        cuckoo::dedup::RunPoint start;
        start.run_id = 77;
        {  // the stopped run
            auto s = cuckoo::Store::open(store_path, so);
            const int jfd = ::open(journal_path.c_str(), O_RDWR | O_CREAT, 0600);
            const auto in = open_inputs(paths);
            const int out = open_out(out_path), dropped = open_out(dropped_path);
            uint64_t ticks = 0;
            bool stopped = false;
            try {
                cuckoo::dedup::with_store(*s, in, out, dropped, opt, true, false,
                                          [&](const cuckoo::dedup::Result&) { return ticks++ >= stop_after; }, jfd,
                                          start);
            } catch (const cuckoo::dedup::Stopped&) {
                stopped = true;
            }
            (void)stopped;
            close_inputs(in);
            ::close(out);
            ::close(dropped);
            ::close(jfd);
            s->close();  // (as cuckoo.dedup does after an error: synced at the last commit)
        }
        const int jfd = ::open(journal_path.c_str(), O_RDWR);
        const auto points = cuckoo::dedup::read_run_points(jfd);
        REQUIRE(!points.empty());
        CHECK_EQ(points[0].run_id, uint64_t(77));
        struct stat st;
        REQUIRE(::stat(store_path.c_str(), &st) == 0);
        const cuckoo::dedup::RunPoint* at = nullptr;  // the newest point whose commit completed
        for (const auto& p : points)
            if (!at && p.store_end <= static_cast<uint64_t>(st.st_size)) at = &p;
        REQUIRE(at != nullptr);
        cuckoo::dedup::RunPoint from = *at;
        from.sequence = points[0].sequence;
        cuckoo::dedup::cut_store_log(store_path, at->store_log_id, at->store_end);
        CHECK(::truncate(out_path.c_str(), static_cast<off_t>(at->out_bytes)) == 0);
        CHECK(::truncate(dropped_path.c_str(), static_cast<off_t>(at->dropped_bytes)) == 0);
        {  // the rerun
            auto s = cuckoo::Store::open(store_path, so);
            auto in = open_inputs(paths);
            for (size_t j = 0; j < in.size(); ++j) {
                if (j < from.input) {
                    ::close(in[j].fd);
                    in[j].fd = -1;
                } else if (j == from.input) {
                    CHECK(::lseek(in[j].fd, static_cast<off_t>(from.input_offset), SEEK_SET) >= 0);
                    in[j].first_byte = from.input_offset;
                    in[j].first_line = from.input_line;
                }
            }
            const int out = ::open(out_path.c_str(), O_WRONLY), dropped = ::open(dropped_path.c_str(), O_WRONLY);
            CHECK(::lseek(out, 0, SEEK_END) >= 0 && ::lseek(dropped, 0, SEEK_END) >= 0);
            const auto r = cuckoo::dedup::with_store(*s, in, out, dropped, opt, true, false, nullptr, jfd, from);
            CHECK(r.status == cuckoo::dedup::Status::done);
            close_inputs(in);
            ::close(out);
            ::close(dropped);
            CHECK_EQ(s->size(), from.kept + r.kept);  // (a fresh store: the keys of the kept lines)
            s->close();
        }
        CHECK(read_file(out_path) == want.first);
        CHECK(read_file(dropped_path) == want.second);
        const auto after = cuckoo::dedup::read_run_points(jfd);
        REQUIRE(!after.empty());
        CHECK(after[0].done);
        CHECK_EQ(after[0].out_bytes, static_cast<uint64_t>(want.first.size()));
        ::close(jfd);
        // A point's slot whose checksum fails is not read; the other slot still is.
        if (after.size() == 2) {
            const int fd = ::open(journal_path.c_str(), O_RDWR);
            const unsigned char bad = 0xFF;
            CHECK(::pwrite(fd, &bad, 1, static_cast<off_t>((after[0].sequence % 2) * 128 + 40)) == 1);
            const auto torn = cuckoo::dedup::read_run_points(fd);
            CHECK(torn.size() == 1 && torn[0].sequence == after[1].sequence);
            ::close(fd);
        }
    }
    // The log is never cut for a point of another log, past its end, before its synced end (the
    // last trial's store was closed: synced to its end) or off a record boundary.
    struct stat st;
    REQUIRE(::stat(store_path.c_str(), &st) == 0);
    const uint64_t end = static_cast<uint64_t>(st.st_size);
    REQUIRE(end > 64 + 16);
    for (auto [id, at] : {std::pair<uint64_t, uint64_t>{8, end}, {9, end + 8}, {9, end - 8}, {9, end - 3}}) {
        bool refused = false;
        try {
            cuckoo::dedup::cut_store_log(store_path, id, at);
        } catch (const std::runtime_error&) {
            refused = true;
        }
        CHECK(refused);
    }
    CHECK_EQ(cuckoo::dedup::cut_store_log(store_path, 9, end), uint64_t(0));
}

int main(int argc, char** argv) { return cktest::run_all(argc, argv); }

namespace {

// Random CSV records keyed by their first column: (the bytes, the model's kept and dropped
// records). Fields quoted at random, some holding the delimiter, doubled quotes or newlines.
struct CsvDoc {
    std::string data, kept, dropped;
    size_t records = 0;
};
CsvDoc random_csv(std::mt19937_64& rng, size_t records) {
    CsvDoc d;
    std::set<std::string> seen;
    for (size_t k = 0; k < records; ++k) {
        const std::string key = "k" + std::to_string(rng() % 50);
        std::string rec;
        if (rng() % 3 == 0)
            rec = "\"" + key + (rng() % 2 ? ",x" : "") + "\"";  // quoted: its content is the key
        else
            rec = key;
        const std::string content = rec.front() == '"' ? rec.substr(1, rec.size() - 2) : rec;
        switch (rng() % 4) {
            case 0: rec += ",\"a \"\"q\"\"\nb\""; break;  // a doubled quote and a newline inside quotes
            case 1: rec += ",plain," + std::string(rng() % 200, 'v'); break;
            case 2: rec += ",\"\r\n\""; break;
            default: break;
        }
        rec += rng() % 3 == 0 ? "\r\n" : "\n";
        (seen.insert(content).second ? d.kept : d.dropped) += rec;
        d.data += rec;
        ++d.records;
    }
    return d;
}

}  // namespace

TEST_CASE(keyed_csv_records_equal_the_model_through_every_table_and_thread_count) {
    // The CSV framing (dedup/framing.hpp) in the pipeline: record ends outside quotes found as the
    // bytes come (blocks that cut records anywhere), keys taken by the producers, the same output
    // with 1-3 threads through the key set, a store and a filter.
    std::mt19937_64 rng(29);
    for (int trial = 0; trial < 8; ++trial) {
        const CsvDoc doc = random_csv(rng, 200 + rng() % 400);
        const std::string path = temp_path("records.csv");
        write_file(path, doc.data);
        for (unsigned threads : {1u, 2u, 3u}) {
            for (int table = 0; table < 3; ++table) {
                cuckoo::dedup::Options opt;
                opt.block = 1 + rng() % 500;
                opt.threads = threads;
                opt.framing.kind = cuckoo::dedup::FramingKind::csv;
                opt.framing.fields.mode = cuckoo::dedup::FieldKeySpec::csv_columns;
                opt.framing.fields.columns = {0};
                cktest::context() = "trial " + std::to_string(trial) + " threads " + std::to_string(threads) +
                                    " table " + std::to_string(table) + " block " + std::to_string(opt.block);
                auto in = open_inputs({path});
                const int out = open_out(temp_path("out")), dropped = open_out(temp_path("dropped"));
                cuckoo::dedup::Result r;
                if (table == 0) {
                    r = cuckoo::dedup::with_key_set(in, {0}, out, dropped, cuckoo::KeyHasher{7}, opt, 1 << 30, 0,
                                                    nullptr);
                } else if (table == 1) {
                    const std::string store_path = temp_path("records.ckv");
                    for (const char* ext : {"", ".idx", ".lock"}) ::unlink((store_path + ext).c_str());
                    auto s = cuckoo::Store::open(store_path, cuckoo::Store::Options{});
                    r = cuckoo::dedup::with_store(*s, in, out, dropped, opt, true, false, nullptr);
                } else {
                    cuckoo::StagedFilter f(cuckoo::Filter::for_capacity(4096, 0.0, 32, 4, 500, 7), true);
                    r = cuckoo::dedup::with_filter(f, in, out, dropped, opt, nullptr);
                }
                close_inputs(in);
                ::close(out);
                ::close(dropped);
                CHECK(r.status == cuckoo::dedup::Status::done);
                CHECK_EQ(r.lines, doc.records);
                CHECK(read_file(temp_path("out")) == doc.kept);
                CHECK(read_file(temp_path("dropped")) == doc.dropped);
            }
        }
    }
}

// Blocks of many hash batches (Block::kHashBatch records each), whose keys both threads frame at
// once (frame_batch) and finish_records cuts: an invalid record or a key longer than max_key in
// any batch, at its edges or past the block's first batch, stops the run right after the
// records before it, with its line number, whichever thread framed it and whatever the other
// framed after it; with 1-3 threads alike.
TEST_CASE(a_record_that_stops_a_many_batch_block_cuts_it_exactly_there) {
    constexpr size_t B = cuckoo::dedup::Block::kHashBatch;
    std::mt19937_64 rng(37);
    for (const size_t before : {size_t(0), size_t(1), B - 1, B, B + 1, 2 * B + 17, static_cast<size_t>(3 * B + rng() % B)}) {
        for (int kind = 0; kind < 2; ++kind) {  // an invalid record, a key too long
            const CsvDoc head = random_csv(rng, before), tail = random_csv(rng, 2 * B);
            const std::string stop = kind == 0 ? "k1,\"open\"x\n" : std::string(80, 'L') + ",x\n";
            const std::string path = temp_path("stop.csv");
            write_file(path, head.data + stop + tail.data);
            size_t newlines = 0;
            for (char c : head.data) newlines += c == '\n';
            for (unsigned threads : {1u, 2u, 3u}) {
                cktest::context() = "before " + std::to_string(before) + " kind " + std::to_string(kind) +
                                    " threads " + std::to_string(threads);
                cuckoo::dedup::Options opt;
                opt.block = size_t(1) << 20;  // (the whole file: one block)
                opt.threads = threads;
                opt.max_key = 40;
                opt.framing.kind = cuckoo::dedup::FramingKind::csv;
                opt.framing.fields.columns = {0};
                auto in = open_inputs({path});
                in[0].first_line = 2;
                const int out = open_out(temp_path("out"));
                const auto r =
                    cuckoo::dedup::with_key_set(in, {0}, out, -1, cuckoo::KeyHasher{3}, opt, 1 << 30, 0, nullptr);
                close_inputs(in);
                ::close(out);
                CHECK(r.status == (kind == 0 ? cuckoo::dedup::Status::bad_record : cuckoo::dedup::Status::key_too_long));
                CHECK_EQ(r.lines, before);
                if (kind == 0) {
                    CHECK_EQ(r.bad_line, 2 + newlines);
                    CHECK(r.message.find("not valid CSV") != std::string::npos);
                }
                CHECK(read_file(temp_path("out")) == head.kept);
            }
        }
    }
}

TEST_CASE(an_invalid_csv_record_stops_the_run_after_the_records_before_it) {
    std::mt19937_64 rng(31);
    for (unsigned threads : {1u, 2u, 3u}) {
        const CsvDoc doc = random_csv(rng, 300);
        const std::string bad = "k1,\"open\"x\n";
        const std::string path = temp_path("bad.csv");
        write_file(path, doc.data + bad + doc.data);
        cuckoo::dedup::Options opt;
        opt.block = 64;
        opt.threads = threads;
        opt.framing.kind = cuckoo::dedup::FramingKind::csv;
        opt.framing.fields.columns = {0};
        auto in = open_inputs({path});
        in[0].first_line = 2;  // (after a header the caller read)
        const int out = open_out(temp_path("out"));
        const auto r = cuckoo::dedup::with_key_set(in, {0}, out, -1, cuckoo::KeyHasher{3}, opt, 1 << 30, 0, nullptr);
        close_inputs(in);
        ::close(out);
        CHECK(r.status == cuckoo::dedup::Status::bad_record);
        CHECK_EQ(r.lines, doc.records);
        size_t newlines = 0;
        for (char c : doc.data) newlines += c == '\n';
        CHECK_EQ(r.bad_line, 2 + newlines);
        CHECK(r.bad_why == cuckoo::dedup::KeyStatus::invalid);
        CHECK(r.message.find("not valid CSV") != std::string::npos);
        CHECK(read_file(temp_path("out")) == doc.kept);
    }
}
