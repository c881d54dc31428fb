import Cepis
import CepisSupport
import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// One run of `enrich`: reads the header, opens (or resumes) the output, then writes every
/// row, in input order and with its exact input bytes, as the `lookups` stream answers it.
///
/// The stream does the rest — each distinct CEP asked once while its memo (`--memo`) holds
/// the answer, full chunks of ``Client/maxBatch`` while rows keep coming, a read-ahead of
/// `--window` rows — so memory is bounded by the memo and the read-ahead, not by the length
/// of the file.
///
/// `@unchecked Sendable`: ``run()`` hands the job to one consumer task and waits for it;
/// nothing else touches the job meanwhile (the signal handler only cancels that task).
final class EnrichJob: @unchecked Sendable {
  struct Options {
    var outputPath: String?
    var resume: Bool
    var window: Int
    var memo: Int
    var column: String?
    var failFast: Bool
    var quiet: Bool
    var progress: Bool
    var jsonSummary: Bool
    var dialect = DialectOptions()
  }

  private let context: Context
  private let client: Client
  private let input: InputFile
  private let reader: EnrichReader
  private let options: Options
  private var console: Console { context.console }
  private var sink: OutputSink?
  private var progress: Progress?

  // The summary.
  private var tally = EnrichTally()
  private var dialect = CSVDialect(
    delimiter: UInt8(ascii: ","), encoding: .utf8, outputEncoding: .utf8)
  private var appended = EnrichAnswer(delimiter: UInt8(ascii: ","), encoding: .utf8)
  private var statistics = LookupStatistics()
  private var inputError: String?

  private enum Ending {
    case finished
    case interrupted
    case failFast(line: Int, message: String)
    case writeFailed(String)
  }

  init(context: Context, client: Client, input: InputFile, options: Options) {
    self.context = context
    self.client = client
    self.input = input
    self.reader = EnrichReader(input: input)
    self.options = options
  }

  // MARK: - The run

  func run() async throws -> ToolStatus {
    let started = Date()
    let header: CSVRecord
    do {
      dialect = try reader.prepare(options.dialect)
      guard let first = try reader.nextRecord() else {
        console.error("'\(input.path)' is empty: a header row is needed")
        return .failure
      }
      header = first
    } catch {
      console.error(inputMessage(error))
      return .failure
    }
    if dialect.encoding == .utf8 && dialect.outputEncoding == .windows1252 {
      throw UsageError(
        message:
          "'\(input.path)' is UTF-8: --output-encoding windows-1252 converts no UTF-8 input",
        path: context.path)
    }
    if dialect.detectedWindows1252 {
      console.note(
        "'\(input.path)' is not UTF-8: read as Windows-1252, and written so"
          + (dialect.transcodesInput ? " (converted to UTF-8 by --output-encoding)" : ""))
    }
    appended = EnrichAnswer(delimiter: dialect.delimiter, encoding: dialect.outputEncoding)
    reader.column = try CEPColumn.find(
      in: header.fields, named: options.column, file: input.path, path: context.path)
    var headerBytes: [UInt8] = reader.sawByteOrderMark ? [0xEF, 0xBB, 0xBF] : []
    appendInput(header.rawBytes, to: &headerBytes)
    headerBytes += appended.headerColumns
    let headerRow = headerBytes
    headerBytes += header.terminator

    let sink: OutputSink
    do {
      sink = try openOutput(headerRow: headerRow, headerBytes: headerBytes)
    } catch let error as UsageError {
      throw error
    } catch {
      console.error("\(error)")
      return .failure
    }
    self.sink = sink
    defer { sink.close() }
    do {
      for _ in 0..<tally.skipped {
        guard try reader.nextRecord() != nil else {
          console.error(
            "'\(options.outputPath ?? "")' has more rows than '\(input.path)': it is not an enrich of it"
          )
          return .usage
        }
      }
    } catch {
      console.error(inputMessage(error))
      return .failure
    }

    let progress = Progress(
      console: console, total: input.size,
      enabled: !options.quiet && (console.stderrIsTTY || options.progress))
    self.progress = progress
    // The rows are written by a task of their own, so that Ctrl-C can cancel it: the rows
    // already answered are written, the run exits 130; a second Ctrl-C exits at once.
    let interrupted = AtomicFlag()
    let consumer = Task { await self.writeRows() }
    let signals = SignalWaiter(signals: [SIGINT]) { _, before in
      if before >= 1 { _exit(130) }
      interrupted.raise()
      consumer.cancel()
    }
    defer { signals.cancel() }
    var ending = await withTaskCancellationHandler {
      await consumer.value
    } onCancel: {
      consumer.cancel()
    }
    if case .finished = ending, interrupted.isRaised { ending = .interrupted }

    var status = ToolStatus.success
    var finalWrite: String?
    do { try sink.flush() } catch { finalWrite = "\(error)" }
    progress.finish()
    switch ending {
    case .writeFailed(let message):
      console.error(message)
      return .unavailable
    case .failFast(let line, let message):
      if let finalWrite {
        console.error(finalWrite)
        return .unavailable
      }
      console.error("stopping at input line \(line) (--fail-fast): \(message)")
      summary(started: started)
      return .unavailable
    case .finished, .interrupted:
      break
    }
    if let finalWrite {
      console.error(finalWrite)
      return .unavailable
    }
    if let inputError {
      console.error("\(inputError); the rows before it were written")
      status = .failure
    }
    summary(started: started)
    if tally.errors > 0 { status = max(status, .unavailable) }
    if tally.notFound > 0 || tally.invalid > 0 || tally.unencodable > 0 {
      status = max(status, .failure)
    }
    if tally.unencodable > 0 {
      console.note(
        "\(tally.unencodable) found rows were marked 'unencodable', their address left out: it holds "
          + "characters Windows-1252 has not; --output-encoding utf-8 writes them")
    }
    if case .interrupted = ending {
      console.note(
        "interrupted: \(tally.rows + tally.skipped) rows written; run again with --resume to finish"
      )
      return .interrupted
    }
    return status
  }

  /// Writes each row as the stream answers it, until the input ends, a write fails,
  /// `--fail-fast` meets a failed row, or the task is cancelled (Ctrl-C).
  private func writeRows() async -> Ending {
    guard let sink, let progress else { return .finished }
    var bulk = BulkOptions(memoCapacity: options.memo, readAhead: options.window)
    bulk.expectedRows = input.estimatedLines()
    let stream = client.lookups(PulledRows(reader.nextRow), cepNumber: \.cep, options: bulk)
    var answers = stream.makeAsyncIterator()
    defer { statistics = answers.statistics }
    // While the run waits on the API's rate limit no row comes: a ticker keeps the line
    // moving, with how long the wait still is.
    let gate = answers.rateGate
    let ticker = Task { [progress] in
      while progress.enabled, !Task.isCancelled {
        try? await Task.sleep(nanoseconds: UInt64(progress.interval * 1e9))
        let rateLimit = gate.statistics
        if rateLimit.pauseLeft > 0 { progress.update(rateLimit: rateLimit) }
      }
    }
    defer { ticker.cancel() }
    // Progress (redrawn at most a few times a second) and the flush are looked at every
    // `rowsPerCheck` rows, and after the first.
    var sinceCheck = Self.rowsPerCheck
    while true {
      let answer: LookupAnswer<EnrichRow>?
      do {
        answer = try await answers.next()
      } catch is CancellationError {
        return .interrupted
      } catch {
        inputError = inputMessage(error)
        return .finished
      }
      guard let answer else { return .finished }
      let row = answer.row
      if answer.openedAsk, let cep = row.cep { reader.noteOpenedAsk(cep) }
      var status = EnrichStatus.found
      if row.isBlank {
        status = .blank
        sink.buffer.append(contentsOf: row.terminator)
      } else {
        let stored = answer.stored
        if row.cep != nil, let error = stored.error {
          if case .networkError = error { console.noteNetworkFailure() }
          // The failed row is not written: the rows before it are.
          if options.failFast { return .failFast(line: row.line, message: error.message) }
        }
        if dialect.transcodesInput {
          Windows1252.appendUTF8(of: row.bytes, to: &sink.buffer)
        } else {
          sink.buffer.append(contentsOf: row.bytes)
        }
        if row.cep == nil {
          status = .invalid
          sink.buffer.append(contentsOf: appended.invalid)
        } else {
          if row.padded { tally.padded += 1 }
          switch stored {
          case .failed(let failure):
            status = .failed
            sink.buffer.append(contentsOf: appended.failure(failure.error))
          case .notFound:
            status = .notFound
            sink.buffer.append(contentsOf: row.padded ? appended.notFoundPadded : appended.notFound)
          case .found(let address):
            if !appended.appendFound(address, padded: row.padded, to: &sink.buffer) {
              status = .unencodable
              sink.buffer.append(contentsOf: appended.unencodable)
            }
          }
        }
        sink.buffer.append(contentsOf: row.terminator)
      }
      tally.count(status)
      sinceCheck += 1
      if sinceCheck >= Self.rowsPerCheck || sink.pendingCount >= Self.flushBytes {
        sinceCheck = 0
        if sink.pendingCount >= Self.flushBytes {
          do { try sink.flush() } catch { return .writeFailed("\(error)") }
        }
        progress.update(
          rows: tally.rows + tally.skipped, bytes: reader.bytesRead, rateLimit: gate.statistics)
      }
    }
  }

  /// Rows between two looks at the progress line and the output's pending bytes.
  static let rowsPerCheck = 1_024
  /// Output bytes held before they are written out.
  static let flushBytes = 1 << 20

  /// Appends input bytes to the output: as they are, or converted to UTF-8
  /// (`--output-encoding utf-8` over a Windows-1252 input).
  private func appendInput(_ bytes: [UInt8], to out: inout [UInt8]) {
    if dialect.transcodesInput {
      Windows1252.appendUTF8(of: bytes, to: &out)
    } else {
      out += bytes
    }
  }

  private func inputMessage(_ error: Error) -> String {
    guard let error = error as? CSVError else { return "\(error)" }
    var message = "\(input.path): \(error)"
    if error.reason == .invalidUTF8 && options.dialect.encoding == nil {
      message += " (a Windows-1252 file? say so with --encoding windows-1252)"
    }
    return message
  }

  // MARK: - Header, output, summary

  private func openOutput(headerRow: [UInt8], headerBytes: [UInt8]) throws -> OutputSink {
    guard let outputPath = options.outputPath else {
      let sink = OutputSink(fd: 1, name: "stdout", owned: false)
      sink.buffer.append(contentsOf: headerBytes)
      return sink
    }
    if options.resume, access(outputPath, F_OK) == 0 {
      let (count, offset, header) = try EnrichCommand.completeRecords(
        in: outputPath, delimiter: dialect.delimiter, encoding: dialect.outputEncoding)
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
        tally.skipped = count - 1
        return OutputSink(fd: fd, name: outputPath, owned: true)
      }
    }
    let fd = open(outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    guard fd >= 0 else {
      throw OutputSink.WriteError(
        description: "cannot create '\(outputPath)': \(String(cString: strerror(errno)))")
    }
    let sink = OutputSink(fd: fd, name: outputPath, owned: true)
    sink.buffer.append(contentsOf: headerBytes)
    return sink
  }

  private func summary(started: Date) {
    let summary = EnrichSummary(
      tally: tally, statistics: statistics, distinct: reader.distinct, memoCapacity: options.memo,
      cached: client.cache != nil, elapsed: Date().timeIntervalSince(started))
    if options.jsonSummary {
      let text = summary.json.rendered + "\n"
      if options.outputPath != nil {
        console.out(text)
      } else {
        console.err(text)
      }
      return
    }
    guard !options.quiet else { return }
    console.note(summary.line)
  }
}
