import Cepis
import CepisSupport
import Foundation

/// `cepis batch [FILE|-]`: CEPs one per line, answered in order through the `lookups` stream
/// (each distinct CEP asked once per run while the stream's memo holds it, chunks of 500),
/// through the address cache unless `--no-cache`.
///
/// An input that can pause — a pipe, a terminal, a socket (`producer | cepis batch`) — is read
/// on a thread of its own (``StreamedLines``), so the stream answers the lines already read
/// while the producer is quiet, and output is flushed at most ``flushInterval`` after an
/// answer is written. A regular file is read inline, the fast path.
enum BatchCommand {
  /// Rows written between two flushes of the output.
  static let flushEvery = 2_000
  /// The longest an answer written waits in the output buffer.
  static let flushInterval = 0.1

  static func run(_ context: Context) async throws -> ToolStatus {
    let format = try context.format()
    let client = try context.client(cached: true)
    let path = context.parsed.positionals.first ?? "-"
    let input: InputFile
    do {
      input = try InputFile(path: path)
    } catch {
      context.console.error("\(error)")
      return .failure
    }
    defer { input.close() }
    let console = context.console
    var writer = RecordWriter(format: format, console: console, csvHeader: CEPResult.csvHeader)
    writer.begin()
    var worst = ToolStatus.success
    var written = 0
    let flusher = PeriodicFlush(console, every: Self.flushInterval)
    defer { flusher.stop() }
    func write(_ answer: LookupAnswer<String>) {
      let result = CEPResult(input: answer.row, answer: answer.result)
      worst = max(worst, ToolStatus.of([result.status]))
      console.noteFailure(in: result.status)
      writer.write(
        text: result.textLine(bold: console.stdoutColor), json: result.appendJSON,
        csv: result.appendCSV)
      written += 1
      if written % Self.flushEvery == 0 { console.flush() }
    }
    if input.size == nil {
      for try await answer in client.lookups(StreamedLines(input: input)) { write(answer) }
    } else {
      var options = BulkOptions()
      options.expectedRows = input.estimatedLines()
      let lines = PulledRows(LineReader(input: input).next)
      for try await answer in client.lookups(lines, options: options) {
        write(answer)
      }
    }
    writer.end()
    return worst
  }
}

/// Flushes a console's stdout every `interval` seconds, on a thread of its own, until
/// stopped: an answer written never waits in the buffer for the next ones, however long the
/// input pauses. The flush takes the console's lock, so output stays in order.
final class PeriodicFlush: Sendable {
  private let stopped = LockedValue(false)

  init(_ console: Console, every interval: Double) {
    let stopped = self.stopped
    let thread = Thread {
      while !stopped.withLock({ $0 }) {
        Thread.sleep(forTimeInterval: interval)
        console.flush()
      }
    }
    thread.name = "cepis-flush"
    thread.start()
  }

  /// Ends the flushing (the thread exits within one interval).
  func stop() { stopped.withLock { $0 = true } }
}

/// The lines of an input that can pause (a pipe, a terminal, a socket), as an asynchronous
/// sequence the `lookups` stream reads through its reader task (it is not ``ReadInline``).
/// Each `read(2)` — which blocks while the producer is quiet — runs on a thread of its own,
/// never on one of Swift's concurrency pool, which the stream's requests need meanwhile.
///
/// `@unchecked Sendable`: its iterator is made and advanced by the stream's one reader task.
struct StreamedLines: AsyncSequence, @unchecked Sendable {
  let input: InputFile

  func makeAsyncIterator() -> Iterator { Iterator(reader: BlockReader(input: input)) }

  struct Iterator: AsyncIteratorProtocol {
    let reader: BlockReader
    var lines = LineSplitter()

    /// The next line without its line end; `nil` at the end of the input.
    mutating func next() async throws -> String? {
      while true {
        if let line = lines.next() { return line }
        if lines.atEnd { return nil }
        lines.feed(try await reader.read())
      }
    }
  }

  /// Reads blocks of an input on a thread of its own (at the program's priority: nice 0
  /// changes nothing), one block per `read()`. A reader stopped while the input is quiet
  /// leaves its thread waiting for the input's next bytes or end; the thread then ends.
  final class BlockReader: @unchecked Sendable {
    private let input: InputFile
    private let thread = LowPriorityThread(name: "cepis-stdin", niceValue: 0)

    init(input: InputFile) { self.input = input }

    /// The next bytes available (empty at the end of the input).
    func read() async throws -> [UInt8] {
      try await withCheckedThrowingContinuation { continuation in
        thread.async { continuation.resume(with: Result { try self.input.read() }) }
      }
    }
  }
}

/// The lines of a `batch` input, read as the `lookups` stream asks for them.
///
/// `@unchecked Sendable`: the stream needs a `Sendable` sequence; this reader is its state,
/// read only by the stream's one iterator, one call at a time.
final class LineReader: @unchecked Sendable {
  private let input: InputFile
  private var lines = LineSplitter()

  init(input: InputFile) {
    self.input = input
  }

  /// The next line, without its line end; `nil` at the end of the input.
  func next() throws -> String? {
    while true {
      if let line = lines.next() { return line }
      if lines.atEnd { return nil }
      lines.feed(try input.read())
    }
  }
}

/// Splits bytes into lines (LF or CRLF), keeping memory bounded by the longest line.
struct LineSplitter {
  private var buffer: [UInt8] = []
  private var position = 0
  /// Whether the input has ended (an empty read was fed).
  private(set) var atEnd = false

  /// Takes the bytes of one read: empty is the end of the input.
  mutating func feed(_ bytes: [UInt8]) {
    if bytes.isEmpty {
      finish()
    } else {
      append(bytes)
    }
  }

  private mutating func append(_ bytes: [UInt8]) {
    if position > 0 {
      buffer.removeSubrange(0..<position)
      position = 0
    }
    buffer.append(contentsOf: bytes)
  }

  private mutating func finish() { atEnd = true }

  /// The next complete line without its terminator, or `nil` when more input is needed.
  mutating func next() -> String? {
    guard position < buffer.count else { return nil }
    if let newline = buffer[position...].firstIndex(of: 10) {
      var end = newline
      if end > position && buffer[end - 1] == 13 { end -= 1 }
      let line = String(decoding: buffer[position..<end], as: UTF8.self)
      position = newline + 1
      return line
    }
    guard atEnd else { return nil }
    var end = buffer.count
    if end > position && buffer[end - 1] == 13 { end -= 1 }
    let line = String(decoding: buffer[position..<end], as: UTF8.self)
    position = buffer.count
    return line
  }
}
