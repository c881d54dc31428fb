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

/// One run of `enrich`.
///
/// Rows stream in; each row's CEP is answered from the run-wide ``EnrichMemo``, joins a CEP
/// already waiting for its answer, or is queued as a new distinct CEP. Only full chunks of
/// ``Client/maxBatch`` go out while reading (``concurrency`` in flight); a partial chunk goes
/// out only at the end of the input, or when the read-ahead cap is reached and the oldest
/// row waiting is waiting for it. A row is written, in input order and with its exact input
/// bytes, as soon as every row before it is answered: rows behind a row still waiting are
/// held in one byte buffer, each waiting row marking the place its answer goes.
///
/// Memory is bounded by the memo's capacity and the read-ahead caps (rows, bytes, CEPs), not
/// by the length of the file.
final class EnrichJob {
  /// Requests in flight at once.
  static let concurrency = 4
  /// Held input bytes that also stop the read-ahead, whatever the row cap.
  static let readAheadBytes = 4 << 20
  /// Distinct CEPs waiting, or answered but not yet written, that also stop the read-ahead:
  /// 16 chunks. Past that, a slow request holds back what would only pile up behind it.
  static let readAheadCEPs = 16 * Client.maxBatch

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
  }

  private let context: Context
  private let client: Client
  private let input: InputFile
  private let options: Options
  private var console: Console { context.console }

  // Input.
  private var reader = CSVReader(keepRawBytes: true)
  private var inputDone = false
  private var inputError: String?
  private var bytesRead = 0
  private var columnIndex = 0
  private var stopReading = false

  // Answers.
  private var memo: EnrichMemo
  /// CEPs seen in this run that the memo no longer holds (evicted, or failed): with the
  /// memo's, they make the run's distinct count, and so its minimum of requests.
  private let seen = CEPSet()
  private var records: [Pending] = []
  private var freeRecords: [Int32] = []
  private var liveRecords = 0
  private var waiting: [Int: Int32] = [:]
  private var unsent: [Int32] = []
  private var unsentHead = 0
  private var inFlight = 0
  private var failures: [CepisError] = []
  private let mailbox = ChunkMailbox()

  // Output: rows behind a row still waiting for its answer.
  private var sink: OutputSink?
  private var held: [UInt8] = []
  private var heldBase = 0
  private var heldRows = 0
  private var segments: [Segment] = []
  private var segmentHead = 0

  // The summary.
  private var rows = 0
  private var found = 0
  private var notFound = 0
  private var invalid = 0
  private var errors = 0
  private var blank = 0
  private var requests = 0
  private var distinct = 0
  private var skipped = 0

  /// A distinct CEP waiting for (or holding) its answer, with the rows that wait for it.
  private struct Pending {
    var cep: Int
    var holes: Int32 = 0
    var sent = false
    var status: EnrichStatus?
    var failure: Int32 = -1
    var appended: [UInt8] = []
  }

  /// A held row still waiting for its answer, and the known rows after it.
  private struct Segment {
    /// Where the row's bytes start, in the held stream.
    var rowStart: Int
    /// Where its answer goes: after its input bytes, before its line end.
    var holeAt: Int
    var record: Int32
    var line: Int
    var found: Int32 = 0
    var notFound: Int32 = 0
    var invalid: Int32 = 0
    var blank: Int32 = 0
  }

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
    self.options = options
    self.memo = EnrichMemo(capacity: options.memo)
  }

  // MARK: - The run

  func run() async throws -> ToolStatus {
    let started = Date()
    let header: CSVRecord
    do {
      guard let first = try nextRecord() else {
        console.error("'\(input.path)' is empty: a header row is needed")
        return .failure
      }
      header = first
    } catch {
      console.error(inputMessage(error))
      return .failure
    }
    columnIndex = try findColumn(in: header.fields)
    var headerBytes: [UInt8] = reader.sawByteOrderMark ? [0xEF, 0xBB, 0xBF] : []
    headerBytes += header.rawBytes
    for name in EnrichCommand.appendedColumns {
      headerBytes.append(UInt8(ascii: ","))
      headerBytes += Array(name.utf8)
    }
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
      for _ in 0..<skipped {
        guard try nextRecord() != nil else {
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

    // Ctrl-C: stop reading, write every row already answered, exit 130; a second Ctrl-C
    // exits at once.
    let interrupted = AtomicFlag()
    let mailbox = self.mailbox
    let signals = SignalWaiter(signals: [SIGINT]) { _, before in
      if before >= 1 { _exit(130) }
      interrupted.raise()
      mailbox.wake()
    }
    defer { signals.cancel() }

    let progress = Progress(
      console: console, total: input.size,
      enabled: !options.quiet && (console.stderrIsTTY || options.progress))
    let ending = await withTaskGroup(of: Void.self) { group in
      let ending = await pump(&group, interrupted: interrupted, progress: progress)
      group.cancelAll()
      return ending
    }
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
    if errors > 0 { status = max(status, .unavailable) }
    if notFound > 0 || invalid > 0 { status = max(status, .failure) }
    if case .interrupted = ending {
      console.note(
        "interrupted: \(rows + skipped) rows written; run again with --resume to finish")
      return .interrupted
    }
    return status
  }

  /// Reads, sends and writes until the input is done and every row is written.
  private func pump(
    _ group: inout TaskGroup<Void>, interrupted: AtomicFlag, progress: Progress
  ) async -> Ending {
    while true {
      let outcomes = mailbox.drain()
      for outcome in outcomes { apply(outcome) }
      // A task group keeps each finished child until it is taken out: take out one child for
      // each outcome (it has posted, so it is finishing), so that a run of 2,000 requests
      // does not keep 2,000 finished tasks.
      for _ in outcomes { await group.next() }
      if let ending = flushHead() { return ending }
      if interrupted.isRaised { return .interrupted }
      if canRead {
        readSome(&group)
        if let ending = writeOut(atLeast: 1 << 20) { return ending }
        progress.update(rows: rows + skipped, bytes: bytesRead)
        continue
      }
      // Reading is blocked: the input is done, or the read-ahead is full.
      if inputDone {
        send(&group, partial: true)
      } else if segmentHead < segments.count, !records[Int(segments[segmentHead].record)].sent {
        // The oldest row waits for a CEP no request carries yet: only a partial chunk can
        // move the output on.
        sendOne(&group)
      }
      send(&group, partial: false)
      if inFlight == 0 {
        if segmentHead == segments.count && (inputDone || stopReading) { return .finished }
        if segmentHead == segments.count { continue }
        if unsent.count == unsentHead {
          // Nothing in flight, nothing to send, and a row still waiting: cannot happen; stop
          // rather than spin.
          return .writeFailed("internal error: a row waits for an answer no request carries")
        }
      }
      if let ending = writeOut(atLeast: 1) { return ending }
      progress.update(rows: rows + skipped, bytes: bytesRead)
      await mailbox.wait()
    }
  }

  private var heldBytes: Int {
    segmentHead < segments.count ? heldBase + held.count - segments[segmentHead].rowStart : 0
  }

  private var canRead: Bool {
    // A full chunk waiting for a free request is enough read-ahead: reading on would only
    // hold more rows.
    !inputDone && !stopReading && heldRows < options.window && heldBytes < Self.readAheadBytes
      && liveRecords < Self.readAheadCEPs
      && (inFlight < Self.concurrency || unsent.count - unsentHead < Client.maxBatch)
  }

  private func writeOut(atLeast threshold: Int) -> Ending? {
    guard let sink, sink.pendingCount >= threshold else { return nil }
    do {
      try sink.flush()
    } catch {
      return .writeFailed("\(error)")
    }
    return nil
  }

  // MARK: - Reading

  private func readSome(_ group: inout TaskGroup<Void>) {
    var budget = 1_024
    while budget > 0, canRead {
      let record: CSVRecord?
      do {
        record = try nextRecord()
      } catch {
        inputError = inputMessage(error)
        inputDone = true
        reader = CSVReader(keepRawBytes: true)
        return
      }
      guard let record else {
        inputDone = true
        return
      }
      process(record)
      budget -= 1
      // A chunk goes out the moment it is full (when a request may start).
      if unsent.count - unsentHead >= Client.maxBatch { send(&group, partial: false) }
    }
  }

  private func inputMessage(_ error: Error) -> String {
    error is CSVError ? "\(input.path): \(error)" : "\(error)"
  }

  /// The next input record, reading more input as needed.
  private func nextRecord() throws -> CSVRecord? {
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

  private func process(_ record: CSVRecord) {
    if record.rawBytes.isEmpty && record.isBlank {
      emitKnown(record, .blank, [])
      return
    }
    let field = columnIndex < record.fields.count ? record.fields[columnIndex] : ""
    guard let cep = cepNumber(ofField: field) else {
      emitKnown(record, .invalid, Self.invalidAnswer)
      return
    }
    if let entry = memo.recall(cep) {
      if segmentHead == segments.count, let sink {
        sink.buffer.append(contentsOf: record.rawBytes)
        let status = memo.appendAnswer(entry, to: &sink.buffer)
        sink.buffer.append(contentsOf: record.terminator)
        countWritten(status)
      } else {
        held.append(contentsOf: record.rawBytes)
        let status = memo.appendAnswer(entry, to: &held)
        held.append(contentsOf: record.terminator)
        countHeld(status)
      }
      return
    }
    if let id = waiting[cep] {
      emitWaiting(record, id)
      return
    }
    if !seen.contains(cep) { distinct += 1 }
    let id = newRecord(cep)
    waiting[cep] = id
    unsent.append(id)
    emitWaiting(record, id)
  }

  /// The appended fields of a row whose CEP is malformed: never sent, never memoised.
  static let invalidAnswer = Array(",,,,,,,invalid".utf8)

  /// The appended fields of every row of a chunk that failed with `error`: empty address
  /// fields and `error: <kind>` for the status.
  static func failureAnswer(_ error: CepisError) -> [UInt8] {
    var appended = Array(",,,,,,".utf8)
    appendCSVField("error: \(error.kind)", to: &appended)
    return appended
  }

  private func emitKnown(_ record: CSVRecord, _ status: EnrichStatus, _ appended: [UInt8]) {
    if segmentHead == segments.count, let sink {
      sink.buffer.append(contentsOf: record.rawBytes)
      sink.buffer.append(contentsOf: appended)
      sink.buffer.append(contentsOf: record.terminator)
      countWritten(status)
    } else {
      held.append(contentsOf: record.rawBytes)
      held.append(contentsOf: appended)
      held.append(contentsOf: record.terminator)
      countHeld(status)
    }
  }

  private func emitWaiting(_ record: CSVRecord, _ id: Int32) {
    if segmentHead == segments.count {
      // Nothing is held: start the held stream afresh.
      heldBase += held.count
      held.removeAll(keepingCapacity: true)
      segments.removeAll(keepingCapacity: true)
      segmentHead = 0
    }
    let rowStart = heldBase + held.count
    held.append(contentsOf: record.rawBytes)
    segments.append(
      Segment(rowStart: rowStart, holeAt: heldBase + held.count, record: id, line: record.line))
    held.append(contentsOf: record.terminator)
    records[Int(id)].holes += 1
    heldRows += 1
  }

  private func countWritten(_ status: EnrichStatus) {
    rows += 1
    switch status {
    case .found: found += 1
    case .notFound: notFound += 1
    case .invalid: invalid += 1
    case .failed: errors += 1
    case .blank: blank += 1
    }
  }

  private func countHeld(_ status: EnrichStatus) {
    heldRows += 1
    let last = segments.count - 1
    switch status {
    case .found: segments[last].found += 1
    case .notFound: segments[last].notFound += 1
    case .invalid: segments[last].invalid += 1
    case .blank: segments[last].blank += 1
    case .failed: break  // a known row is never a failure
    }
  }

  private func newRecord(_ cep: Int) -> Int32 {
    liveRecords += 1
    if let id = freeRecords.popLast() {
      records[Int(id)] = Pending(cep: cep)
      return id
    }
    records.append(Pending(cep: cep))
    return Int32(records.count - 1)
  }

  // MARK: - Requests

  /// Sends full chunks (and, with `partial`, the rest) while fewer than ``concurrency`` are
  /// in flight.
  private func send(_ group: inout TaskGroup<Void>, partial: Bool) {
    while inFlight < Self.concurrency {
      let available = unsent.count - unsentHead
      guard available >= Client.maxBatch || (partial && available > 0) else { return }
      sendOne(&group)
    }
  }

  /// Sends the next chunk (up to ``Client/maxBatch`` CEPs), if a request may start.
  private func sendOne(_ group: inout TaskGroup<Void>) {
    let available = unsent.count - unsentHead
    guard inFlight < Self.concurrency, available > 0 else { return }
    let ids = Array(unsent[unsentHead..<unsentHead + min(available, Client.maxBatch)])
    unsentHead += ids.count
    if unsentHead == unsent.count {
      unsent.removeAll(keepingCapacity: true)
      unsentHead = 0
    } else if unsentHead >= 4_096 && unsentHead * 2 >= unsent.count {
      unsent.removeFirst(unsentHead)
      unsentHead = 0
    }
    var numbers: [Int] = []
    numbers.reserveCapacity(ids.count)
    for id in ids {
      records[Int(id)].sent = true
      numbers.append(records[Int(id)].cep)
    }
    requests += 1
    inFlight += 1
    let client = self.client
    let mailbox = self.mailbox
    group.addTask {
      let answers: Result<[Address?], CepisError>
      do {
        answers = .success(try await client.lookupChunk(numbers: numbers))
      } catch let error as CepisError {
        answers = .failure(error)
      } catch {
        answers = .failure(.networkError(message: "\(error)"))
      }
      mailbox.post(ChunkOutcome(records: ids, answers: answers))
    }
  }

  private func apply(_ outcome: ChunkOutcome) {
    inFlight -= 1
    switch outcome.answers {
    case .success(let answers):
      for (position, id) in outcome.records.enumerated() {
        let index = Int(id)
        let cep = records[index].cep
        waiting[cep] = nil
        let address = position < answers.count ? answers[position] : nil
        var appended: [UInt8] = []
        memo.insert(cep, address, appendingTo: &appended) { seen.insert($0) }
        records[index].appended = appended
        records[index].status = address == nil ? .notFound : .found
      }
    case .failure(let error):
      if case .networkError = error { console.noteNetworkFailure() }
      let failure = Int32(failures.count)
      failures.append(error)
      let appended = Self.failureAnswer(error)
      for id in outcome.records {
        let index = Int(id)
        let cep = records[index].cep
        // Not memoised: a later row asks again.
        waiting[cep] = nil
        seen.insert(cep)
        records[index].appended = appended
        records[index].status = .failed
        records[index].failure = failure
      }
      if options.failFast { stopReading = true }
    }
  }

  // MARK: - Writing

  /// Writes the held rows whose answers are known, in order, up to the first still waiting.
  private func flushHead() -> Ending? {
    guard let sink else { return nil }
    while segmentHead < segments.count {
      let segment = segments[segmentHead]
      let id = Int(segment.record)
      guard let status = records[id].status else { break }
      if status == .failed && options.failFast {
        let failure = Int(records[id].failure)
        let message = failure >= 0 ? failures[failure].message : "request failed"
        return .failFast(line: segment.line, message: message)
      }
      let end =
        segmentHead + 1 < segments.count
        ? segments[segmentHead + 1].rowStart : heldBase + held.count
      do {
        try sink.write(held[(segment.rowStart - heldBase)..<(segment.holeAt - heldBase)])
        try sink.write(records[id].appended[...])
        try sink.write(held[(segment.holeAt - heldBase)..<(end - heldBase)])
      } catch {
        return .writeFailed("\(error)")
      }
      countWritten(status)
      found += Int(segment.found)
      notFound += Int(segment.notFound)
      invalid += Int(segment.invalid)
      blank += Int(segment.blank)
      let trailing = Int(segment.found + segment.notFound + segment.invalid + segment.blank)
      rows += trailing
      heldRows -= 1 + trailing
      records[id].holes -= 1
      if records[id].holes == 0 {
        records[id].appended = []
        freeRecords.append(segment.record)
        liveRecords -= 1
      }
      segmentHead += 1
    }
    if segmentHead == segments.count {
      heldBase += held.count
      held.removeAll(keepingCapacity: true)
      segments.removeAll(keepingCapacity: true)
      segmentHead = 0
      heldRows = 0
    } else {
      if segmentHead >= 4_096 && segmentHead * 2 >= segments.count {
        segments.removeFirst(segmentHead)
        segmentHead = 0
      }
      let cut = segments[segmentHead].rowStart - heldBase
      if cut >= 1 << 16 && cut * 2 >= held.count {
        held.removeFirst(cut)
        heldBase += cut
      }
    }
    return nil
  }

  // MARK: - Header, output, summary

  private func findColumn(in header: [String]) throws(UsageError) -> Int {
    let wanted = options.column ?? "cep"
    if let index = header.firstIndex(of: wanted) { return index }
    let folded = wanted.trimmingCharacters(in: .whitespaces).lowercased()
    if let index = header.firstIndex(where: {
      $0.trimmingCharacters(in: .whitespaces).lowercased() == folded
    }) {
      return index
    }
    let names = header.map { "'\($0)'" }.joined(separator: ", ")
    var message = "no column '\(wanted)' in the header of '\(input.path)' (columns: \(names))"
    if options.column == nil { message += "; name the CEP column with --column NAME" }
    throw UsageError(message: message, path: context.path)
  }

  private func openOutput(headerRow: [UInt8], headerBytes: [UInt8]) throws -> OutputSink {
    guard let outputPath = options.outputPath else {
      let sink = OutputSink(fd: 1, name: "stdout", owned: false)
      sink.buffer.append(contentsOf: headerBytes)
      return sink
    }
    if options.resume, access(outputPath, F_OK) == 0 {
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
    sink.buffer.append(contentsOf: headerBytes)
    return sink
  }

  /// The fewest requests the rows read could have cost: ⌈distinct valid CEPs ÷ 500⌉.
  private var minimumRequests: Int { (distinct + Client.maxBatch - 1) / Client.maxBatch }

  private func summary(started: Date) {
    let elapsed = Date().timeIntervalSince(started)
    if options.jsonSummary {
      var fields: [(String, JSONValue)] = [
        ("rows", .int(rows)), ("found", .int(found)), ("not_found", .int(notFound)),
        ("invalid", .int(invalid)), ("errors", .int(errors)), ("blank", .int(blank)),
        ("requests", .int(requests)), ("minimum_requests", .int(minimumRequests)),
        ("distinct_ceps", .int(distinct)), ("memo_capacity", .int(memo.capacity)),
        ("memo_evictions", .int(memo.evictions)),
        ("seconds", .double((elapsed * 1_000).rounded() / 1_000)),
      ]
      if skipped > 0 { fields.append(("resumed_after", .int(skipped))) }
      let text = JSONValue.object([("enrich", .object(fields))]).rendered + "\n"
      if options.outputPath != nil {
        console.out(text)
      } else {
        console.err(text)
      }
      return
    }
    guard !options.quiet else { return }
    var line =
      "enrich: \(rows) rows, \(found) found, \(notFound) not found, \(invalid) invalid, "
      + "\(errors) errors"
    if blank > 0 { line += ", \(blank) blank" }
    line += ", requests \(requests) (minimum \(minimumRequests))"
    line += ", \(String(format: "%.1f", elapsed)) s"
    if skipped > 0 { line += " (resumed after \(skipped) rows)" }
    console.note(line)
  }
}

/// The answers of one chunk, as its request's task posts them.
struct ChunkOutcome: Sendable {
  /// The pending records of the chunk's CEPs, in the chunk's order.
  var records: [Int32]
  /// An address (or `nil`: not found) per CEP, or the chunk's failure after its retries.
  var answers: Result<[Address?], CepisError>
}

/// Where chunk tasks leave their outcomes for the run loop, which takes them between rows
/// without waiting, or sleeps until one arrives (or a signal wakes it).
///
/// Its state lives in one ``LockedValue``, the package's lock type; a continuation is resumed
/// after the lock is released, exactly once (it is taken out of `waiter` under the lock by
/// whoever resumes it).
final class ChunkMailbox: Sendable {
  private struct State {
    var outcomes: [ChunkOutcome] = []
    var waiter: CheckedContinuation<Void, Never>?
    var woken = false
  }

  private let state = LockedValue(State())

  /// Leaves an outcome and wakes the run loop.
  func post(_ outcome: ChunkOutcome) {
    let continuation = state.withLock { state in
      state.outcomes.append(outcome)
      defer { state.waiter = nil }
      return state.waiter
    }
    continuation?.resume()
  }

  /// Wakes the run loop without an outcome (a signal arrived).
  func wake() {
    let continuation = state.withLock { state in
      state.woken = true
      defer { state.waiter = nil }
      return state.waiter
    }
    continuation?.resume()
  }

  /// Takes every outcome left so far.
  func drain() -> [ChunkOutcome] {
    state.withLock { state in
      guard !state.outcomes.isEmpty else { return [] }
      defer { state.outcomes.removeAll() }
      return state.outcomes
    }
  }

  /// Returns when an outcome is waiting (at once if one already is) or after ``wake()``.
  func wait() async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      let ready = state.withLock { state -> Bool in
        if !state.outcomes.isEmpty || state.woken {
          state.woken = false
          return true
        }
        state.waiter = continuation
        return false
      }
      if ready { continuation.resume() }
    }
  }
}
