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
    let dialect = try DialectOptions(context)
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
    func write(_ answer: LookupAnswer<BatchRow>) {
      var result = CEPResult(input: answer.row.input, answer: answer.result)
      if answer.row.padded { result.markPadded(cep: answer.row.cep) }
      worst = max(worst, ToolStatus.of([result.status]))
      console.noteFailure(in: result.status)
      writer.write(
        text: result.textLine(bold: console.stdoutColor), json: result.appendJSON,
        csv: result.appendCSV)
      written += 1
      if written % Self.flushEvery == 0 { console.flush() }
    }
    do {
      if input.size == nil {
        let reader = StreamedLines.BlockReader(input: input)
        let first = try await Self.firstLine { try await reader.read() }
        let rows = try splitter(first, dialect: dialect, context: context, input: input)
        let stream = client.lookups(StreamedLines(reader: reader, rows: rows), cep: \.cep)
        for try await answer in stream { write(answer) }
      } else {
        let first = try await Self.firstLine { try input.read() }
        let rows = try splitter(first, dialect: dialect, context: context, input: input)
        var options = BulkOptions()
        options.expectedRows = input.estimatedLines()
        let lines = PulledRows(LineReader(input: input, rows: rows).next)
        for try await answer in client.lookups(lines, cep: \.cep, options: options) {
          write(answer)
        }
      }
    } catch let error as CSVError {
      writer.end()
      console.error("\(path): \(error); the rows before it were written")
      return .failure
    }
    writer.end()
    return worst
  }

  /// Reads the input up to the end of its first line (outside quotes), or all of it when it
  /// has none; `ended` when the input ended meanwhile.
  static func firstLine(
    _ read: () async throws -> [UInt8]
  ) async throws -> (bytes: [UInt8], ended: Bool) {
    var bytes: [UInt8] = []
    while bytes.count <= DialectDetection.headerLimit {
      let body = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? bytes.dropFirst(3) : bytes[...]
      if !body.isEmpty, DialectDetection.headerLineEnd(body) != nil { break }
      let chunk = try await read()
      if chunk.isEmpty { return (bytes, true) }
      bytes += chunk
    }
    return (bytes, false)
  }

  static func splitter(
    _ first: (bytes: [UInt8], ended: Bool), dialect: DialectOptions, context: Context,
    input: InputFile
  ) throws(UsageError) -> BatchSplitter {
    try BatchSplitter(
      prefix: first.bytes, ended: first.ended, options: dialect,
      column: context.parsed.value("column"),
      fileEncoding: input.size.flatMap { DialectDetection.encoding(ofFile: input.fd, size: $0) },
      file: input.path, path: context.path)
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
  let reader: BlockReader
  let rows: BatchSplitter

  func makeAsyncIterator() -> Iterator { Iterator(reader: reader, rows: rows) }

  struct Iterator: AsyncIteratorProtocol {
    let reader: BlockReader
    var rows: BatchSplitter

    /// The next row; `nil` at the end of the input.
    mutating func next() async throws -> BatchRow? {
      while true {
        if let row = try rows.next() { return row }
        if rows.atEnd { return nil }
        rows.feed(try await reader.read())
      }
    }
  }

  /// Reads blocks of an input on a thread of its own (at the program's priority: nice 0
  /// changes nothing), one block per `read()`. A reader stopped while the input is quiet
  /// leaves its thread waiting for the input's next bytes or end; the thread then ends.
  ///
  /// `@unchecked Sendable` is sound: its fields are constants, and `input` (an `InputFile`,
  /// not `Sendable`) is read only on `thread`, one block at a time, each `read()` waiting for
  /// the last.
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

/// The rows of a `batch` input, read as the `lookups` stream asks for them.
///
/// `@unchecked Sendable`: the stream needs a `Sendable` sequence; this reader is its state,
/// read only by the stream's one iterator, one call at a time.
final class LineReader: @unchecked Sendable {
  private let input: InputFile
  private var rows: BatchSplitter

  init(input: InputFile, rows: BatchSplitter) {
    self.input = input
    self.rows = rows
  }

  /// The next row; `nil` at the end of the input.
  func next() throws -> BatchRow? {
    while true {
      if let row = try rows.next() { return row }
      if rows.atEnd { return nil }
      rows.feed(try input.read())
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
    nextBytes().map { String(decoding: $0, as: UTF8.self) }
  }

  /// ``next()`` as the line's bytes.
  mutating func nextBytes() -> ArraySlice<UInt8>? {
    guard position < buffer.count else { return nil }
    if let newline = buffer[position...].firstIndex(of: 10) {
      var end = newline
      if end > position && buffer[end - 1] == 13 { end -= 1 }
      let line = buffer[position..<end]
      position = newline + 1
      return line
    }
    guard atEnd else { return nil }
    var end = buffer.count
    if end > position && buffer[end - 1] == 13 { end -= 1 }
    let line = buffer[position..<end]
    position = buffer.count
    return line
  }
}
