import Cepis
import CepisSupport

/// `cepis batch [FILE|-]`: CEPs one per line, answered in order through the `lookups` stream
/// (each distinct CEP asked once per run while the stream's memo holds it, chunks of 500),
/// through the address cache unless `--no-cache`.
enum BatchCommand {
  /// Rows written between two flushes of the output.
  static let flushEvery = 2_000

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
    for try await answer in client.lookups(PulledRows(LineReader(input: input).next)) {
      let result = CEPResult(input: answer.row, answer: answer.result)
      worst = max(worst, ToolStatus.of([result.status]))
      console.noteFailure(in: result.status)
      writer.write(
        text: result.textLine(bold: console.stdoutColor), json: result.json, csv: result.csvFields)
      written += 1
      if written % Self.flushEvery == 0 { console.flush() }
    }
    writer.end()
    return worst
  }
}

/// The lines of a `batch` input, read as the `lookups` stream asks for them.
///
/// `@unchecked Sendable`: the stream needs a `Sendable` sequence; this reader is its state,
/// read only by the stream's one iterator, one call at a time.
final class LineReader: @unchecked Sendable {
  private let input: InputFile
  private var lines = LineSplitter()
  private var done = false

  init(input: InputFile) {
    self.input = input
  }

  /// The next line, without its line end; `nil` at the end of the input.
  func next() throws -> String? {
    while true {
      if let line = lines.next() { return line }
      if done { return nil }
      let chunk = try input.read()
      if chunk.isEmpty {
        lines.finish()
        done = true
      } else {
        lines.append(chunk)
      }
    }
  }
}

/// Splits bytes into lines (LF or CRLF), keeping memory bounded by the longest line.
struct LineSplitter {
  private var buffer: [UInt8] = []
  private var position = 0
  private var atEnd = false

  mutating func append(_ bytes: [UInt8]) {
    if position > 0 {
      buffer.removeSubrange(0..<position)
      position = 0
    }
    buffer.append(contentsOf: bytes)
  }

  mutating func finish() { atEnd = true }

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
