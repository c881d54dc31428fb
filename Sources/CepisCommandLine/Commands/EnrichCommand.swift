import Cepis
import CepisSupport
import Dispatch
import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// `cepis enrich INPUT.csv [-o OUTPUT.csv]`: the bulk job.
///
/// Streams the input (64 KiB reads) through `Client.lookups` — full chunks of 500 while
/// reading, each distinct CEP asked at most once per run while the stream's memo holds it —
/// and writes each row as its exact input bytes plus the appended fields and its own line
/// end, in input order. See ``EnrichJob``.
enum EnrichCommand {
  /// The columns appended to every row.
  static let appendedColumns = [
    "logradouro", "complemento", "bairro", "localidade", "uf", "ibge", "cepis_status",
  ]

  /// Distinct CEPs the `lookups` stream's memo keeps by default (an answer kept costs about
  /// 140 bytes — its row of the batch answer, an entry and a slot of the memo's table: about
  /// 55 MB at the bound).
  static let defaultMemo = 400_000
  /// Rows read ahead of the oldest row still waiting for its answer, by default.
  static let defaultWindow = 20_000

  static func run(_ context: Context) async throws -> ToolStatus {
    let client = try context.client(cached: true)
    let path = context.path
    let window = try context.integer("window", range: 1...10_000_000) ?? defaultWindow
    let memo = try context.integer("memo", range: 0...100_000_000) ?? defaultMemo
    let format = try context.format()
    guard format == .text || format == .json else {
      throw UsageError(
        message: "enrich writes its summary as text or json, not '\(format.rawValue)'", path: path)
    }
    let inputPath = context.parsed.positionals[0]
    var outputPath = context.parsed.value("output")
    if outputPath == "-" { outputPath = nil }
    let resume = context.parsed.flag("resume")
    if resume && outputPath == nil {
      throw UsageError(message: "'--resume' needs an output file (-o OUTPUT.csv)", path: path)
    }
    if let outputPath, inputPath != "-", sameFile(inputPath, outputPath) {
      throw UsageError(
        message: "the output '\(outputPath)' is the input file; write somewhere else", path: path)
    }
    let input: InputFile
    do {
      input = try InputFile(path: inputPath)
    } catch {
      context.console.error("\(error)")
      return .failure
    }
    defer { input.close() }
    let options = EnrichJob.Options(
      outputPath: outputPath, resume: resume, window: window, memo: memo,
      column: context.parsed.value("column"), failFast: context.parsed.flag("fail-fast"),
      quiet: context.parsed.flag("quiet"), progress: context.parsed.flag("progress"),
      jsonSummary: format == .json, dialect: try DialectOptions(context))
    let job = EnrichJob(context: context, client: client, input: input, options: options)
    return try await job.run()
  }

  static func sameFile(_ a: String, _ b: String) -> Bool {
    var first = stat()
    var second = stat()
    guard stat(a, &first) == 0, stat(b, &second) == 0 else { return false }
    return first.st_dev == second.st_dev && first.st_ino == second.st_ino
  }

  /// Counts the complete records of an earlier run's output: how many, and the byte offset
  /// just after the last one. A trailing partial record (no line end, a quote left open, a
  /// line end cut between CR and LF) does not count.
  static func completeRecords(
    in path: String, delimiter: UInt8 = UInt8(ascii: ","), encoding: CSVEncoding = .utf8
  ) throws -> (
    count: Int, offset: Int, header: CSVRecord?
  ) {
    let file = try InputFile(path: path)
    defer { file.close() }
    let size = file.size ?? Int.max
    var reader = CSVReader(separator: delimiter, keepRawBytes: true, encoding: encoding)
    var count = 0
    var offset = 0
    var header: CSVRecord?
    var done = false
    var started = false
    scanning: while true {
      let record: CSVRecord?
      do {
        record = try reader.next()
      } catch {
        break scanning  // a cut-off tail: stop at the last complete record
      }
      if let record {
        if !started {
          started = true
          if reader.sawByteOrderMark { offset = 3 }
        }
        let end = offset + record.rawBytes.count + record.terminator.count
        if record.terminator.isEmpty || (record.terminator == [13] && end >= size) {
          break scanning
        }
        if header == nil { header = record }
        count += 1
        offset = end
        continue
      }
      if done { break }
      let chunk = try file.read()
      if chunk.isEmpty {
        reader.finish()
        done = true
      } else {
        reader.append(chunk)
      }
    }
    return (count, offset, header)
  }
}

/// Writes bytes to a descriptor through a buffer, flushed explicitly.
final class OutputSink {
  let fd: Int32
  let name: String
  /// Bytes not yet written (appended to directly by the writer).
  var buffer: [UInt8] = []
  private let owned: Bool

  struct WriteError: Error, CustomStringConvertible {
    var description: String
  }

  init(fd: Int32, name: String, owned: Bool) {
    self.fd = fd
    self.name = name
    self.owned = owned
    buffer.reserveCapacity(1 << 20)
  }

  /// How many bytes wait to be written.
  var pendingCount: Int { buffer.count }

  /// Appends `bytes`, writing the buffer out once it holds 1 MiB; a large run of bytes is
  /// written straight from where it is, never copied into the buffer.
  func write(_ bytes: ArraySlice<UInt8>) throws {
    if bytes.count >= 1 << 16 {
      try flush()
      let ok = bytes.withUnsafeBytes { writeAll(fd, $0) }
      if !ok {
        throw WriteError(description: "cannot write '\(name)': \(String(cString: strerror(errno)))")
      }
      return
    }
    buffer.append(contentsOf: bytes)
    if buffer.count >= 1 << 20 { try flush() }
  }

  func flush() throws {
    guard !buffer.isEmpty else { return }
    let ok = buffer.withUnsafeBytes { writeAll(fd, $0) }
    buffer.removeAll(keepingCapacity: true)
    if !ok {
      throw WriteError(description: "cannot write '\(name)': \(String(cString: strerror(errno)))")
    }
  }

  func close() {
    if owned {
      #if canImport(Glibc)
        _ = Glibc.close(fd)
      #elseif canImport(Musl)
        _ = Musl.close(fd)
      #else
        _ = Darwin.close(fd)
      #endif
    }
  }
}

/// Writes all of `bytes` to `fd`, retrying short writes and `EINTR`; `false` when the
/// descriptor refuses (a closed pipe, a full disk).
private func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
  guard var cursor = bytes.baseAddress else { return true }
  var left = bytes.count
  while left > 0 {
    #if canImport(Glibc)
      let written = Glibc.write(fd, cursor, left)
    #elseif canImport(Musl)
      let written = Musl.write(fd, cursor, left)
    #else
      let written = Darwin.write(fd, cursor, left)
    #endif
    if written < 0 {
      if errno == EINTR { continue }
      return false
    }
    cursor += written
    left -= written
  }
  return true
}

/// Progress on stderr: rows done, percentage and ETA when the input's size is known, rows
/// per second, and, while the run waits on the API's rate limit, how long it still waits.
/// Redrawn in place on a terminal; one line a second otherwise.
///
/// Safe to call from two tasks: the job's, as rows are written, and a ticker's, which keeps
/// the line moving while no row comes (a pause for a 429).
final class Progress: Sendable {
  private struct State {
    var last = Date.distantPast
    var drawn = false
    var rows = 0
    var bytes = 0
  }

  let console: Console
  let total: Int?
  let enabled: Bool
  private let start = Date()
  private let state = LockedValue(State())

  init(console: Console, total: Int?, enabled: Bool) {
    self.console = console
    self.total = total
    self.enabled = enabled
  }

  /// Seconds between two redraws.
  var interval: Double { console.stderrIsTTY ? 0.2 : 1.0 }

  /// Redraws the line (at most every ``interval``) with `rows` and `bytes` done, or those
  /// last given, and the run's rate-limit figures.
  func update(rows: Int? = nil, bytes: Int? = nil, rateLimit: RateGate.Statistics? = nil) {
    guard enabled else { return }
    let now = Date()
    let interval = self.interval
    state.withLock { state in
      if let rows { state.rows = rows }
      if let bytes { state.bytes = bytes }
      guard now.timeIntervalSince(state.last) >= interval else { return }
      state.last = now
      let text = Self.line(
        rows: state.rows, bytes: state.bytes, total: total,
        elapsed: max(0.001, now.timeIntervalSince(start)), rateLimit: rateLimit)
      if console.stderrIsTTY {
        console.err("\r\u{1B}[K" + text)
        state.drawn = true
      } else {
        console.err("cepis: " + text + "\n")
      }
    }
  }

  /// The progress line's text.
  static func line(
    rows: Int, bytes: Int, total: Int?, elapsed: Double, rateLimit: RateGate.Statistics?
  ) -> String {
    var text = "\(rows) rows"
    if let total, total > 0 {
      let fraction = min(1, Double(bytes) / Double(total))
      text += String(format: " (%.0f%%)", fraction * 100)
      if fraction > 0 {
        let remaining = elapsed / fraction - elapsed
        text += ", ETA \(Self.clock(remaining))"
      }
    }
    text += String(format: ", %.0f rows/s", Double(rows) / elapsed)
    if let rateLimit, rateLimit.refusals > 0 {
      text += ", \(rateLimit.refusals) rate limited (429)"
      if rateLimit.pauseLeft > 0 {
        text += String(
          format: ", waiting %.0f s for the API's rate limit", rateLimit.pauseLeft.rounded(.up))
      }
    }
    return text
  }

  func finish() {
    let drawn = state.withLock { state in
      defer { state.drawn = false }
      return state.drawn
    }
    if drawn { console.err("\r\u{1B}[K") }
  }

  static func clock(_ seconds: Double) -> String {
    let total = Int(max(0, seconds).rounded())
    let hours = total / 3600
    let minutes = (total % 3600) / 60
    let secs = total % 60
    return hours > 0
      ? String(format: "%d:%02d:%02d", hours, minutes, secs)
      : String(format: "%d:%02d", minutes, secs)
  }
}
