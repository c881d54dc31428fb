import Cepis
import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// `--key value` options and positionals of one subcommand.
struct Arguments {
  var options: [String: String] = [:]
  var positionals: [String] = []

  init(_ raw: ArraySlice<String>) {
    var iterator = raw.makeIterator()
    while let item = iterator.next() {
      if item.hasPrefix("--") {
        let key = String(item.dropFirst(2))
        if let eq = key.firstIndex(of: "=") {
          options[String(key[..<eq])] = String(key[key.index(after: eq)...])
        } else {
          options[key] = iterator.next() ?? ""
        }
      } else {
        positionals.append(item)
      }
    }
  }

  func int(_ key: String, _ fallback: Int) -> Int {
    guard let text = options[key] else { return fallback }
    guard let value = Int(text.replacingOccurrences(of: "_", with: "")) else {
      fail("--\(key) needs an integer, not '\(text)'")
    }
    return value
  }

  func double(_ key: String, _ fallback: Double) -> Double {
    guard let text = options[key] else { return fallback }
    guard let value = Double(text) else { fail("--\(key) needs a number, not '\(text)'") }
    return value
  }

  func string(_ key: String) -> String {
    guard let value = options[key] else { fail("missing --\(key)") }
    return value
  }
}

func fail(_ message: String) -> Never {
  FileHandle.standardError.write(Data("cepis-bench: \(message)\n".utf8))
  exit(2)
}

/// Prints a machine-readable `key=value` line (flushed at once).
func report(_ key: String, _ value: CustomStringConvertible) {
  print("\(key)=\(value)")
  fflush(nil)
}

/// Monotonic nanoseconds.
@inline(__always)
func nowNanos() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

/// User + system CPU seconds of this process so far.
func processCPUSeconds() -> Double {
  var usage = rusage()
  getrusage(RUSAGE_SELF.rawValue, &usage)
  func seconds(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
  return seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

/// Peak resident set size of this process, in MiB.
func peakRSSMiB() -> Double {
  var usage = rusage()
  getrusage(RUSAGE_SELF.rawValue, &usage)
  return Double(usage.ru_maxrss) / 1024
}

/// Keeps a value alive in the optimizer's eyes.
@inline(never)
func blackhole<T>(_ value: T) {
  withExtendedLifetime(value) {}
}

func percentile(_ sorted: [Double], _ p: Double) -> Double {
  guard !sorted.isEmpty else { return .nan }
  let rank = p / 100 * Double(sorted.count - 1)
  let low = Int(rank.rounded(.down))
  let high = min(low + 1, sorted.count - 1)
  let fraction = rank - Double(low)
  return sorted[low] + (sorted[high] - sorted[low]) * fraction
}

func format(_ value: Double, _ digits: Int = 4) -> String {
  String(format: "%.\(digits)f", value)
}

/// Writes `text` to `path`, replacing it.
func writeFile(_ path: String, _ bytes: [UInt8]) {
  guard FileManager.default.createFile(atPath: path, contents: Data(bytes)) else {
    fail("cannot write \(path)")
  }
}

/// Streams bytes to a file through a large buffer.
final class FileWriter {
  private let handle: UnsafeMutablePointer<FILE>
  init(_ path: String) {
    guard let handle = fopen(path, "wb") else { fail("cannot open \(path) for writing") }
    self.handle = handle
    setvbuf(handle, nil, _IOFBF, 1 << 20)
  }
  func write(_ bytes: [UInt8]) {
    _ = bytes.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, handle) }
  }
  func write(_ text: String) {
    var text = text
    text.withUTF8 { _ = fwrite($0.baseAddress, 1, $0.count, handle) }
  }
  func close() { fclose(handle) }
}

/// Reads a whole file as lines (no trailing empty line).
func readLines(_ path: String) -> [String] {
  guard let data = FileManager.default.contents(atPath: path) else { fail("cannot read \(path)") }
  return String(decoding: data, as: UTF8.self).split(
    separator: "\n", omittingEmptySubsequences: false
  )
  .map(String.init).filter { !$0.isEmpty }
}

/// The resident set size now, in MiB (Linux: /proc/self/statm; 0 elsewhere).
func currentRSSMiB() -> Double {
  guard let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8),
    let pages = statm.split(separator: " ").dropFirst().first.flatMap({ Double(String($0)) })
  else { return 0 }
  return pages * Double(sysconf(Int32(_SC_PAGESIZE))) / 1_048_576
}

/// `concurrency` tasks calling `request` back to back for `seconds`, then the figures every
/// single-request measure prints: requests, rps, p50/p99 latency, client CPU per request.
func reportRequestLoop(
  concurrency: Int, seconds: Double, _ request: @escaping @Sendable () async throws -> Void
) async {
  for _ in 0..<concurrency { try? await request() }  // warm the connections
  let cpu0 = processCPUSeconds()
  let start = nowNanos()
  let deadline = start + UInt64(seconds * 1e9)
  let perTask: [[Double]] = await withTaskGroup(of: [Double].self) { group in
    for _ in 0..<concurrency {
      group.addTask {
        var latencies: [Double] = []
        latencies.reserveCapacity(1 << 16)
        while nowNanos() < deadline {
          let t0 = nowNanos()
          do { try await request() } catch { fail("request: \(error)") }
          latencies.append(Double(nowNanos() - t0) / 1e6)
        }
        return latencies
      }
    }
    var all: [[Double]] = []
    for await latencies in group { all.append(latencies) }
    return all
  }
  let elapsed = Double(nowNanos() - start) / 1e9
  let cpu = processCPUSeconds() - cpu0
  let latencies = perTask.flatMap { $0 }.sorted()
  report("requests", latencies.count)
  report("rps", format(Double(latencies.count) / elapsed, 1))
  report("p50_ms", format(percentile(latencies, 50), 4))
  report("p99_ms", format(percentile(latencies, 99), 4))
  report("cpu_us_per_request", format(cpu / Double(max(1, latencies.count)) * 1e6, 1))
}

/// Runs `fetch` over every URL, 4 in flight (as curl's `--parallel-max 4`), handing each
/// result to `take` as it comes.
func forEachFourInFlight<Result: Sendable>(
  _ urls: [String], _ fetch: @escaping @Sendable (String) async -> Result,
  _ take: (String, Result) -> Void
) async {
  await withTaskGroup(of: (String, Result).self) { group in
    var next = 0
    func add() {
      guard next < urls.count else { return }
      let url = urls[next]
      next += 1
      group.addTask { (url, await fetch(url)) }
    }
    for _ in 0..<4 { add() }
    while let (url, result) = await group.next() {
      take(url, result)
      add()
    }
  }
}

/// With `CEPIS_BENCH_MARK` set, says "measuring" on standard error and waits a second: for a
/// profiler attached then (`perf record -p`, `perf stat -p`), the measured part starts after.
func markForProfiler() async {
  guard ProcessInfo.processInfo.environment["CEPIS_BENCH_MARK"] != nil else { return }
  FileHandle.standardError.write(Data("measuring\n".utf8))
  try? await Task.sleep(nanoseconds: 1_000_000_000)
}

/// `fetch` over every URL, 4 in flight, then the bulk ceiling's figures (wall, CPU per CEP).
func reportBulkFetch(
  urls: [String], ceps: Int, _ fetch: @escaping @Sendable (String) async -> Int
) async {
  _ = await fetch(urls[0])  // warm the connection
  await markForProfiler()
  let cpu0 = processCPUSeconds()
  let t0 = nowNanos()
  var bodyBytes = 0
  await forEachFourInFlight(urls, fetch) { _, bytes in bodyBytes += bytes }
  let wall = Double(nowNanos() - t0) / 1e9
  let cpu = processCPUSeconds() - cpu0
  report("requests", urls.count)
  report("body_bytes", bodyBytes)
  report("wall_s", format(wall))
  report("cpu_s", format(cpu))
  report("cpu_us_per_cep", format(cpu / Double(ceps) * 1e6, 3))
}

/// CEP strings as an asynchronous sequence that never waits (a fast cursor): what
/// `lookups(_:options:)` reads through its reader task.
struct AsyncCEPs: AsyncSequence, Sendable {
  typealias Element = String
  let ceps: [String]

  func makeAsyncIterator() -> Iterator { Iterator(ceps: ceps) }

  struct Iterator: AsyncIteratorProtocol {
    let ceps: [String]
    var index = 0

    mutating func next() async -> String? {
      guard index < ceps.count else { return nil }
      defer { index += 1 }
      return ceps[index]
    }
  }
}

/// The addresses a `lookups` stream resolves, counted as a server or a command-line tool reads
/// the stream: in a nonisolated function. The benchmark's top-level code runs on the main
/// actor, where each turn of a `for try await` loop checks the executor twice on the way in
/// and out of the iterator (the caller's isolation and not the stream's work: two
/// `swift_task_switch` calls a row, none in a nonisolated loop; its cost is the diagnostic row
/// `lookups CPU, main actor` of Benchmarks/RESULTS.md).
func countResolved<Rows>(_ stream: LookupStream<Rows>) async -> Int {
  var resolved = 0
  do {
    for try await answer in stream {
      switch answer.result {
      case .success(let address): if address != nil { resolved += 1 }
      case .failure(let error): fail("lookups: row \(answer.row): \(error)")
      }
    }
  } catch { fail("lookups: \(error)") }
  return resolved
}
