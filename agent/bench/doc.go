// Package bench is `ecagent bench`: it runs the real-time cycle exactly as
// `ecagent run` would (same configuration, same cycle process, the
// simulated segment in another process or a real interface) for a number
// of cycles, and reports what users of EtherCAT masters measure.
//
// # Report
//
// Report holds, for the whole run: the target cycle, cycles run and
// samples lost to ring drops, the duration; cycle time (period between
// consecutive wake-ups) min/avg/max/stddev/p99/p99.9; jitter (cycle time −
// target) signed extremes and the p99, p99.9 and max of its absolute value;
// wake-up latency (wake − deadline), job time (end − wake) and its CPU load
// (job time / target), frame round trip; lost frames, WKC errors, overruns
// and skipped deadlines; the real-time settings the host applied or
// refused; the cycle-time distribution in bins of jitter whose edges grow
// in 1-2-5 steps either side of the target, from about the median
// |jitter| out to the shortest and the longest cycle, with counts and
// percentages (equal-width bins between the extremes would put all but a
// stall's cycle in the first), and the interval target ± h holding 95 %
// of cycles (the way IgH EtherCAT master write-ups publish it); and the
// wake-up latency in 1 µs bins, as cyclictest's histogram. WriteText
// prints it for people.
//
// Percentiles are nearest-rank over every cycle (exact) up to
// MaxExactValues cycles per quantity, from a uniform sample beyond.
//
// # JSON
//
// Report.JSON writes one file that is a cyclictest --json report of the
// wake-up latency (one thread, 1 µs histogram, same keys, order and
// layout as cyclictest 2.40) with the full report added under the extra
// top-level key "ecagent". JSON readers ignore keys they do not know, so
// scripts written for cyclictest output, and stats.ParseCyclictestJSON,
// read it unchanged (a test proves the latter); one file therefore
// serves both, and no second file is needed.
//
// # Comparison with cyclictest
//
// RunInterleaved compares the cycle with Debian's cyclictest (package
// rt-tests) fairly on a shared host: blocks of equal length alternate
// between a cycle process and cyclictest in ABBA order (BlockOrder), both
// with the same interval, priority, core, locked memory and 1 µs
// histogram of the same range, one at a time, so that both sides sample
// the same stretches of the host's noise. A run of each, one after the
// other, does not: their ratio then measures the difference between two
// noise windows as much as the two programs. CompareBlocks reports the
// wake-up latency p50, p99, p99.9 and max over the union of each side's
// blocks (merged histograms, whole µs, truncated on both sides as
// cyclictest records its samples), the ratio of the unions, and the
// minimum, median and maximum of the ratio over the block pairs, and
// checks the targets p99 ≤ 1.2× and p99.9 ≤ 1.5× on the unions.
//
// # Telemetry
//
// With Options.Telemetry, the bench process does beside the cycle what a
// running agent does: every sample goes through the Prometheus consumer
// (histograms and window statistics), and the registry is served on a
// loopback port and scraped every second. The cycle is then measured
// under the agent's real load, and turning it off measures the cost of
// telemetry.
package bench
