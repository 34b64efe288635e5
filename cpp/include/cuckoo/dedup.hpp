// The streaming dedup pipeline (`cuckoo dedup`, cuckoo.dedup()): reads input file descriptors in
// large blocks, splits each block into lines (a vector scan for newlines), hashes the keys a block
// at a time with the filter's or store's own hasher (hash_block.hpp: the same value as Filter.add / Store take for
// the same bytes), applies the filter's or store's batch insert in input order, and writes the kept
// lines (and, optionally, the dropped ones) with one write() per block.
//
// Threads: with threads = N > 1, N - 1 producer threads each take the next block off the input (the
// reads themselves are serialised by a mutex, in input order), split and hash it, and hand it to
// the calling thread, which applies the blocks strictly in sequence and writes their output. So
// the answers never depend on N: the only state that changes (the filter or store) is touched by
// one thread, in input order. With N = 1 the calling thread does everything. For a filter and an
// anonymous store (nothing recorded once written), a writer thread gathers and writes the applied
// blocks in order, so the calling thread only applies: it was the bottleneck (the inserts) and
// also did the gathering copies and write() calls. With N = 2, for a filter, the producer also
// prefetches the table's buckets for the block taken next (BucketWarmer).
//
// Lines: a line ends at '\n'; its key is the line without the '\n' and one '\r' before it. A last
// line without '\n' gets a '\n' in the block (virtual); the output drops it again when the line
// is the last of the last input (a '\n' is added when more input follows it). Lines longer than a
// block are read whole (the block grows for them). Bytes are never decoded: NUL bytes and empty
// lines are keys like any other.
//
// POSIX only (read/write/poll on file descriptors), like the store; elsewhere the Python block path
// runs instead.
//
// The pipeline is split by concern under cuckoo/dedup/: block.hpp (options, inputs, blocks, lines
// and their hashes), pipeline.hpp (the ordered run and its threads), tables.hpp (through a filter
// or a store), exact.hpp (the in-memory key set in passes), counted.hpp (counts, keep-last and the
// selections by count, in two passes), windowed.hpp (within a window of records or of time).
// This header includes them all.
#pragma once

#include "cuckoo/dedup/block.hpp"
#include "cuckoo/dedup/pipeline.hpp"
#include "cuckoo/dedup/tables.hpp"
#include "cuckoo/dedup/exact.hpp"
#include "cuckoo/dedup/counted.hpp"
#include "cuckoo/dedup/windowed.hpp"
