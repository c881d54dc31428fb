import CepisHTTP
import CepisSupport

/// The engine of one iteration of a ``LookupStream`` (and of ``Client/lookupMany(_:)``).
///
/// Rows are read only inside ``next()``, so a consumer that stops asking stops the reading.
/// Each row read is answered at once (a malformed CEP, or an answer in the memo), joins the
/// *ask* already open for its CEP, or opens a new ask, queued for the next chunk — one hash
/// probe of the memo, which also holds the open asks. Asks are sent ``Client/maxBatch`` at a
/// time; a chunk's answers are keyed by each row's own CEP (see `Client.decodeBatchRows`) and
/// land on its asks, and from there on every row that waits for them. A row leaves when it is
/// first in line and answered.
///
/// Bounds: rows held ≤ ``BulkOptions/readAhead``; asks ≤ rows held; memo ≤
/// ``BulkOptions/memoCapacity``; outcomes not yet applied ≤ ``BulkOptions/chunksInFlight``.
///
/// Not thread-safe, and need not be: an async iterator is advanced by one task at a time.
/// Requests run in tasks of their own that only post their outcome to a locked mailbox.
final class LookupEngine<Rows: AsyncSequence & Sendable> where Rows.Element: Sendable {
  typealias Row = Rows.Element

  /// A row read and not yet answered to the consumer, and the slot its answer comes from.
  /// Small on purpose: rows are moved as the line advances.
  private struct Held {
    var row: Row?
    var slot: Int32
  }

  /// One answer, or one CEP asked in one chunk, and how many held rows read it. A row
  /// answered at once (malformed, or from the memo) behind a row still waiting gets a slot
  /// of its own, already answered. Slots live in one array and are reused once every row
  /// that reads them has left: no allocation and no hashing per row.
  private struct Slot {
    var cep: Int
    var waiting: Int32
    /// Whether a chunk carries this ask (or it needs none: it is answered).
    var sent: Bool
    var answer: Result<Address?, CepisError>?
  }

  private let client: Client
  private let cep: @Sendable (Row) -> String
  private let options: BulkOptions
  private var input: Rows.AsyncIterator
  private var inputDone = false
  private var inputError: (any Error)?
  private var finished = false

  private var held: [Held] = []
  private var heldHead = 0
  private var slots: [Slot] = []
  private var freeSlots: [Int32] = []
  private var unsent: [Int32] = []
  private var unsentHead = 0
  private var memo: LookupMemo

  /// Rows read between two looks at cancellation and the mailbox.
  private static var pollInterval: Int { 64 }
  private var pollCountdown = 0

  private var chunks: [Int: Task<Void, Never>] = [:]
  private var nextChunk = 0
  /// What this iteration has spent so far.
  var statistics: LookupStatistics {
    LookupStatistics(requests: nextChunk, memoEvictions: memo.evictions)
  }
  private let mailbox = ChunkMailbox()

  /// An engine over `rows`; `expectedCEPs` (when the caller knows it) sets memo room aside.
  init(
    client: Client, rows: Rows, cep: @escaping @Sendable (Row) -> String, options: BulkOptions,
    expectedCEPs: Int = 0
  ) {
    self.client = client
    self.cep = cep
    self.options = options
    self.input = rows.makeAsyncIterator()
    self.memo = LookupMemo(capacity: options.memoCapacity, reserving: expectedCEPs)
  }

  deinit {
    for task in chunks.values { task.cancel() }
  }

  /// The next row's answer, reading rows and sending chunks as needed.
  func next() async throws -> LookupAnswer<Row>? {
    while true {
      guard !finished else { return nil }
      // Cancellation and the mailbox (a lock) are looked at every few rows, not every row:
      // a chunk's answers wait at most that long, and a cancelled task stops as soon.
      if pollCountdown == 0 {
        pollCountdown = Self.pollInterval
        if Task.isCancelled {
          stop()
          throw CancellationError()
        }
        for outcome in mailbox.take() { apply(outcome) }
      } else {
        pollCountdown -= 1
      }
      if let answer = popAnswered() { return answer }
      if !inputDone && held.count - heldHead < options.readAhead {
        do {
          if let row = try await input.next() {
            if let answer = admit(row) { return answer }
            sendChunks(partial: false)
          } else {
            inputDone = true
          }
        } catch {
          inputDone = true
          inputError = error
        }
        continue
      }
      // Nothing more can be read now. At the end of the input, what waits must go, even in a
      // partial chunk; with the read-ahead full, a partial chunk goes only when the first row
      // waits for an ask no chunk carries (it would wait for ever). Otherwise the rows ahead
      // wait for a chunk in flight: a partial chunk now would cost a request that a full one
      // could have saved.
      if inputDone || !slots[Int(held[heldHead].slot)].sent {
        sendChunks(partial: true)
      }
      if heldHead == held.count {
        stop()
        if let error = inputError {
          inputError = nil
          throw error
        }
        return nil
      }
      precondition(!chunks.isEmpty, "a row waits for an ask that is neither queued nor sent")
      pollCountdown = 0
      if !mailbox.isEmpty || Task.isCancelled { continue }
      await withTaskCancellationHandler {
        await mailbox.wait()
      } onCancel: { [mailbox] in
        mailbox.interrupt()
      }
    }
  }

  /// Ends the iteration: cancels the requests in flight.
  private func stop() {
    finished = true
    for task in chunks.values { task.cancel() }
    chunks.removeAll()
  }

  // MARK: - Rows

  /// Takes in a row read: its answer at once when it is known and no row is ahead of it,
  /// `nil` when it is held (answered or waiting for its ask).
  private func admit(_ row: Row) -> LookupAnswer<Row>? {
    let text = cep(row)
    guard let number = cepNumber(ofField: text) else {
      let error: CepisError
      do {
        _ = try normalizeCEP(text)
        error = .invalidCEP("invalid CEP")
      } catch let invalid as CepisError {
        error = invalid
      } catch {
        // normalizeCEP throws CepisError only.
        preconditionFailure("normalizeCEP threw \(error)")
      }
      return hold(row, answered: .failure(error))
    }
    let slot: Int32
    // The slot a new ask would take: the memo notes it in the same probe that finds the CEP.
    let vacant = freeSlots.last ?? Int32(slots.count)
    switch memo.state(of: number, orWaitFor: vacant) {
    case .answered(let known):
      // The address's `cep` is the 8 digits of `number`, however this row spells it.
      return hold(row, answered: .success(known))
    case .waiting(let ask):
      slot = ask
      slots[Int(slot)].waiting += 1
    case .unknown:
      slot = newSlot(Slot(cep: number, waiting: 1, sent: false, answer: nil))
      assert(slot == vacant)
      unsent.append(slot)
    }
    held.append(Held(row: row, slot: slot))
    return nil
  }

  /// A row whose answer is known: answered now if no row is ahead of it, else held.
  private func hold(_ row: Row, answered result: Result<Address?, CepisError>)
    -> LookupAnswer<Row>?
  {
    if heldHead == held.count { return LookupAnswer(row: row, result: result) }
    let slot = newSlot(Slot(cep: -1, waiting: 1, sent: true, answer: result))
    held.append(Held(row: row, slot: slot))
    return nil
  }

  private func newSlot(_ slot: Slot) -> Int32 {
    if let free = freeSlots.popLast() {
      slots[Int(free)] = slot
      return free
    }
    slots.append(slot)
    return Int32(slots.count - 1)
  }

  /// The first held row, when it is answered.
  private func popAnswered() -> LookupAnswer<Row>? {
    guard heldHead < held.count else { return nil }
    let index = Int(held[heldHead].slot)
    guard slots[index].answer != nil else { return nil }
    slots[index].waiting -= 1
    let answer: Result<Address?, CepisError>?
    if slots[index].waiting == 0 {
      // The last row that reads this slot: the answer is moved out, not copied.
      answer = slots[index].answer.take()
      freeSlots.append(Int32(index))
    } else {
      answer = slots[index].answer
    }
    guard let result = answer else { preconditionFailure("an answered slot lost its answer") }
    // Moved out, not copied: the row is not retained twice.
    let row = held[heldHead].row.take()
    heldHead += 1
    if heldHead == held.count {
      held.removeAll(keepingCapacity: true)
      heldHead = 0
    } else if heldHead >= 1_024 && heldHead * 2 >= held.count {
      held.removeFirst(heldHead)
      heldHead = 0
    }
    guard let row else { preconditionFailure("a held row was answered twice") }
    return LookupAnswer(row: row, result: result)
  }

  // MARK: - Requests

  private func sendChunks(partial: Bool) {
    while chunks.count < options.chunksInFlight {
      let available = unsent.count - unsentHead
      guard available >= Client.maxBatch || (partial && available > 0) else { return }
      let ids = Array(unsent[unsentHead..<unsentHead + min(available, Client.maxBatch)])
      unsentHead += ids.count
      if unsentHead == unsent.count {
        unsent.removeAll(keepingCapacity: true)
        unsentHead = 0
      }
      send(ids)
    }
  }

  private func send(_ ids: [Int32]) {
    for id in ids { slots[Int(id)].sent = true }
    let ceps = ids.map { cepString(slots[Int($0)].cep) }
    let chunk = nextChunk
    nextChunk += 1
    let client = self.client
    let mailbox = self.mailbox
    chunks[chunk] = Task {
      let answers: Result<[Address?], CepisError>
      do {
        answers = .success(try await client.fetchChunk(positionsOf: ceps))
      } catch let error as CepisError {
        answers = .failure(error)
      } catch is CancellationError {
        answers = .failure(.networkError(message: "cancelled"))
      } catch {
        answers = .failure(.networkError(message: "\(error)"))
      }
      mailbox.post(ChunkOutcome(chunk: chunk, asks: ids, answers: answers))
    }
  }

  private func apply(_ outcome: ChunkOutcome) {
    chunks[outcome.chunk] = nil
    var answers: [Address?] = []
    if case .success(let received) = outcome.answers { answers = received }
    for (position, id) in outcome.asks.enumerated() {
      let index = Int(id)
      let cep = slots[index].cep
      // The ask closes: a row read from now on is answered by the memo, or asks again.
      switch outcome.answers {
      case .success:
        // Moved out of the chunk's array, not copied.
        var answer: Address?
        swap(&answer, &answers[position])
        memo.keep(answer, for: cep)
        slots[index].answer = .success(answer)
      case .failure(let error):
        // Not kept: a later row with this CEP asks again.
        memo.stopWaiting(for: cep)
        slots[index].answer = .failure(error)
      }
    }
  }
}

/// What one iteration of a ``LookupStream`` has spent so far (`package`: the command line's
/// summary reports it).
package struct LookupStatistics: Sendable, Hashable {
  /// Batch requests sent (one per chunk; a request's retries are not counted).
  package var requests: Int
  /// CEPs the memo forgot to make room.
  package var memoEvictions: Int

  /// Figures of an iteration (nothing spent by default).
  package init(requests: Int = 0, memoEvictions: Int = 0) {
    self.requests = requests
    self.memoEvictions = memoEvictions
  }
}

/// What one chunk's request ended with.
struct ChunkOutcome: Sendable {
  var chunk: Int
  var asks: [Int32]
  var answers: Result<[Address?], CepisError>
}

/// Where chunk requests leave their outcomes for the engine: a locked list, and one waiter.
final class ChunkMailbox: Sendable {
  private struct State: Sendable {
    var outcomes: [ChunkOutcome] = []
    var waiter: CheckedContinuation<Void, Never>?
    var interrupted = false
  }

  private let state = LockedValue(State())

  /// Leaves an outcome, waking the waiter.
  func post(_ outcome: ChunkOutcome) {
    let waiter = state.withLock { state in
      state.outcomes.append(outcome)
      defer { state.waiter = nil }
      return state.waiter
    }
    waiter?.resume()
  }

  /// Whether no outcome waits to be taken.
  var isEmpty: Bool { state.withLock { $0.outcomes.isEmpty } }

  /// The outcomes left so far, removed.
  func take() -> [ChunkOutcome] {
    state.withLock { state in
      defer { state.outcomes.removeAll() }
      return state.outcomes
    }
  }

  /// Returns once an outcome is waiting, or after ``interrupt()``.
  func wait() async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      let now = state.withLock { state in
        if !state.outcomes.isEmpty || state.interrupted {
          state.interrupted = false
          return true
        }
        state.waiter = continuation
        return false
      }
      if now { continuation.resume() }
    }
  }

  /// Wakes the waiter (or the next one to wait): the waiting task was cancelled.
  func interrupt() {
    let waiter = state.withLock { state in
      defer { state.waiter = nil }
      if state.waiter == nil { state.interrupted = true }
      return state.waiter
    }
    waiter?.resume()
  }
}
