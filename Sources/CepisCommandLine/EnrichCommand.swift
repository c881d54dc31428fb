import Cepis
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
/// Reads the input in 64 KiB chunks, a window of rows at a time; resolves the window's
/// distinct CEPs through the batch endpoint (chunks of 500, a few in flight, one failing
/// chunk only marking its own rows); writes each row as its exact input bytes plus the
/// appended fields and its own line end; flushes; moves on. Memory is bounded by the window.
enum EnrichCommand {
  /// The columns appended to every row.
  static let appendedColumns = [
    "logradouro", "complemento", "bairro", "localidade", "uf", "ibge", "cepis_status",
  ]

  static func run(_ context: Context) async throws -> ExitStatus {
    let client = try context.client()
    let path = context.path
    let window = try context.integer("window", range: 1...100_000) ?? 2_000
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
    var job = EnrichJob(
      context: context, resolver: Resolver(client: client), input: input,
      outputPath: outputPath, resume: resume, window: window,
      column: context.parsed.value("column"), failFast: context.parsed.flag("fail-fast"))
    return try await job.run()
  }

  static func sameFile(_ a: String, _ b: String) -> Bool {
    var first = stat()
    var second = stat()
    guard stat(a, &first) == 0, stat(b, &second) == 0 else { return false }
    return first.st_dev == second.st_dev && first.st_ino == second.st_ino
  }

  /// The appended part of a row: `,logradouro,…,cepis_status`, quoted per RFC 4180.
  static func appended(_ resolution: Resolution) -> [UInt8] {
    let fields: [String]
    switch resolution {
    case .found(let a):
      fields = [a.logradouro, a.complemento, a.bairro, a.localidade, a.uf, a.ibge, "ok"]
    case .notFound: fields = ["", "", "", "", "", "", "not_found"]
    case .invalid: fields = ["", "", "", "", "", "", "invalid"]
    case .failed(let error): fields = ["", "", "", "", "", "", "error: \(error.kind)"]
    }
    var bytes: [UInt8] = []
    for field in fields {
      bytes.append(UInt8(ascii: ","))
      bytes.append(contentsOf: csvField(field).utf8)
    }
    return bytes
  }

  /// Counts the complete records of an earlier run's output: how many, and the byte offset
  /// just after the last one. A trailing partial record (no line end, a quote left open, a
  /// line end cut between CR and LF) does not count.
  static func completeRecords(in path: String) throws -> (
    count: Int, offset: Int, header: CSVRecord?
  ) {
    let file = try InputFile(path: path)
    defer { file.close() }
    let size = file.size ?? Int.max
    var reader = CSVReader(keepRawBytes: true)
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
  private var buffer: [UInt8] = []
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

  func write(_ bytes: [UInt8]) { buffer.append(contentsOf: bytes) }

  func flush() throws {
    guard !buffer.isEmpty else { return }
    let ok = writeAll(fd, buffer)
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

/// One run of `enrich`.
struct EnrichJob {
  let context: Context
  let resolver: Resolver
  let input: InputFile
  let outputPath: String?
  let resume: Bool
  let window: Int
  let column: String?
  let failFast: Bool

  private var reader = CSVReader(keepRawBytes: true)
  private var inputDone = false
  private var bytesRead = 0

  // Statistics for the summary line.
  private var rows = 0
  private var found = 0
  private var notFound = 0
  private var invalid = 0
  private var errors = 0
  private var blank = 0
  private var requests = 0
  private var skipped = 0

  init(
    context: Context, resolver: Resolver, input: InputFile, outputPath: String?, resume: Bool,
    window: Int, column: String?, failFast: Bool
  ) {
    self.context = context
    self.resolver = resolver
    self.input = input
    self.outputPath = outputPath
    self.resume = resume
    self.window = window
    self.column = column
    self.failFast = failFast
  }

  private var console: Console { context.console }

  /// The next input record, reading more input as needed.
  private mutating func nextRecord() throws -> CSVRecord? {
    while true {
      if let record = try reader.next() {
        bytesRead += record.rawBytes.count + record.terminator.count
        return record
      }
      if inputDone { return nil }
      let chunk = try input.read()
      if chunk.isEmpty {
        reader.finish()
        inputDone = true
      } else {
        reader.append(chunk)
      }
    }
  }

  private func findColumn(in header: [String]) throws(UsageError) -> Int {
    let wanted = column ?? "cep"
    if let index = header.firstIndex(of: wanted) { return index }
    let folded = wanted.trimmingCharacters(in: .whitespaces).lowercased()
    if let index = header.firstIndex(where: {
      $0.trimmingCharacters(in: .whitespaces).lowercased() == folded
    }) {
      return index
    }
    let names = header.map { "'\($0)'" }.joined(separator: ", ")
    var message = "no column '\(wanted)' in the header of '\(input.path)' (columns: \(names))"
    if column == nil { message += "; name the CEP column with --column NAME" }
    throw UsageError(message: message, path: context.path)
  }

  mutating func run() async throws -> ExitStatus {
    let started = Date()
    // The header.
    let header: CSVRecord
    do {
      guard let first = try nextRecord() else {
        console.error("'\(input.path)' is empty: a header row is needed")
        return .failure
      }
      header = first
    } catch let error as CSVError {
      console.error("\(input.path): \(error)")
      return .failure
    }
    let columnIndex = try findColumn(in: header.fields)
    var headerBytes: [UInt8] = reader.sawByteOrderMark ? [0xEF, 0xBB, 0xBF] : []
    headerBytes += header.rawBytes
    for name in EnrichCommand.appendedColumns {
      headerBytes.append(UInt8(ascii: ","))
      headerBytes += Array(name.utf8)
    }
    let headerRow = headerBytes
    headerBytes += header.terminator

    // The output, fresh or resumed.
    let sink: OutputSink
    do {
      sink = try openOutput(headerRow: headerRow, headerBytes: headerBytes)
    } catch let error as UsageError {
      throw error
    } catch {
      console.error("\(error)")
      return .failure
    }
    defer { sink.close() }
    if skipped > 0 {
      do {
        for _ in 0..<skipped {
          guard try nextRecord() != nil else {
            console.error(
              "'\(outputPath ?? "")' has more rows than '\(input.path)': it is not an enrich of it")
            return .usage
          }
        }
      } catch let error as CSVError {
        console.error("\(input.path): \(error)")
        return .failure
      }
    }

    // Ctrl-C: finish the window, flush, exit 130; a second Ctrl-C exits at once.
    let interrupted = AtomicFlag()
    let signals = SignalWaiter(signals: [SIGINT]) { _, before in
      if before >= 1 { _exit(130) }
      interrupted.raise()
    }
    defer { signals.cancel() }

    let progress = Progress(
      console: console, total: input.size,
      enabled: !context.parsed.flag("quiet")
        && (console.stderrIsTTY || context.parsed.flag("progress")))
    var worst = ExitStatus.success
    var inputError: CSVError?
    while !interrupted.isRaised {
      var records: [CSVRecord] = []
      records.reserveCapacity(window)
      do {
        while records.count < window, let record = try nextRecord() {
          records.append(record)
        }
      } catch let error as CSVError {
        inputError = error
      }
      if records.isEmpty { break }
      var ceps: [String] = []
      var positions: [Int] = []
      for (index, record) in records.enumerated() where !isBlankLine(record) {
        positions.append(index)
        ceps.append(columnIndex < record.fields.count ? record.fields[columnIndex] : "")
      }
      let outcome = await resolver.resolve(ceps)
      requests += outcome.requests
      var resolutions = [Resolution?](repeating: nil, count: records.count)
      for (position, resolution) in zip(positions, outcome.results) {
        resolutions[position] = resolution
      }
      var failedAt: Int?
      for (index, record) in records.enumerated() {
        guard let resolution = resolutions[index] else {
          sink.write(record.terminator)
          blank += 1
          rows += 1
          continue
        }
        if failFast, case .failed = resolution {
          failedAt = index
          break
        }
        sink.write(record.rawBytes)
        sink.write(EnrichCommand.appended(resolution))
        sink.write(record.terminator)
        rows += 1
        count(resolution)
      }
      do {
        try sink.flush()
      } catch {
        console.error("\(error)")
        progress.finish()
        return .unavailable
      }
      progress.update(rows: rows + skipped, bytes: bytesRead)
      if let failedAt, case .failed(let error) = resolutions[failedAt] {
        progress.finish()
        console.error(
          "stopping at input line \(records[failedAt].line) (--fail-fast): \(error.message)")
        summary(started: started)
        return .unavailable
      }
      if inputError != nil { break }
    }
    progress.finish()
    if let inputError {
      console.error("\(input.path): \(inputError); the rows before it were written")
      worst = .failure
    }
    summary(started: started)
    if errors > 0 { worst = max(worst, .unavailable) }
    if notFound > 0 || invalid > 0 { worst = max(worst, .failure) }
    if interrupted.isRaised {
      console.note("interrupted: \(rows + skipped) rows written; run again with --resume to finish")
      return .interrupted
    }
    return worst
  }

  private func isBlankLine(_ record: CSVRecord) -> Bool {
    record.rawBytes.isEmpty && record.isBlank
  }

  private mutating func count(_ resolution: Resolution) {
    switch resolution {
    case .found: found += 1
    case .notFound: notFound += 1
    case .invalid: invalid += 1
    case .failed: errors += 1
    }
  }

  private mutating func openOutput(headerRow: [UInt8], headerBytes: [UInt8]) throws -> OutputSink {
    guard let outputPath else {
      let sink = OutputSink(fd: 1, name: "stdout", owned: false)
      sink.write(headerBytes)
      return sink
    }
    if resume, access(outputPath, F_OK) == 0 {
      let (count, offset, header) = try EnrichCommand.completeRecords(in: outputPath)
      if count > 0 {
        guard let header else { throw UsageError(message: "unreadable output", path: []) }
        let bom: [UInt8] = reader.sawByteOrderMark ? [0xEF, 0xBB, 0xBF] : []
        guard bom + header.rawBytes == headerRow else {
          throw UsageError(
            message:
              "cannot resume: the header of '\(outputPath)' is not the enriched header of '\(input.path)'",
            path: context.path)
        }
        let fd = open(outputPath, O_WRONLY)
        guard fd >= 0, ftruncate(fd, off_t(offset)) == 0, lseek(fd, 0, SEEK_END) >= 0 else {
          throw OutputSink.WriteError(
            description: "cannot reopen '\(outputPath)': \(String(cString: strerror(errno)))")
        }
        skipped = count - 1
        return OutputSink(fd: fd, name: outputPath, owned: true)
      }
    }
    let fd = open(outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    guard fd >= 0 else {
      throw OutputSink.WriteError(
        description: "cannot create '\(outputPath)': \(String(cString: strerror(errno)))")
    }
    let sink = OutputSink(fd: fd, name: outputPath, owned: true)
    sink.write(headerBytes)
    return sink
  }

  private func summary(started: Date) {
    guard !context.parsed.flag("quiet") else { return }
    let elapsed = Date().timeIntervalSince(started)
    var line =
      "enrich: \(rows) rows, \(found) found, \(notFound) not found, \(invalid) invalid, "
      + "\(errors) errors"
    if blank > 0 { line += ", \(blank) blank" }
    line += ", \(requests) requests, \(String(format: "%.1f", elapsed)) s"
    if skipped > 0 { line += " (resumed after \(skipped) rows)" }
    console.note(line)
  }
}

/// Progress on stderr: rows done, percentage and ETA when the input's size is known, rows
/// per second. Redrawn in place on a terminal; one line a second otherwise.
final class Progress {
  let console: Console
  let total: Int?
  let enabled: Bool
  private let start = Date()
  private var last = Date.distantPast
  private var drawn = false

  init(console: Console, total: Int?, enabled: Bool) {
    self.console = console
    self.total = total
    self.enabled = enabled
  }

  func update(rows: Int, bytes: Int) {
    guard enabled else { return }
    let now = Date()
    let interval = console.stderrIsTTY ? 0.2 : 1.0
    guard now.timeIntervalSince(last) >= interval else { return }
    last = now
    let elapsed = max(0.001, now.timeIntervalSince(start))
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
    if console.stderrIsTTY {
      console.err("\r\u{1B}[K" + text)
      drawn = true
    } else {
      console.err("cepis: " + text + "\n")
    }
  }

  func finish() {
    if drawn {
      console.err("\r\u{1B}[K")
      drawn = false
    }
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
