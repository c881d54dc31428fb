import CepisHTTP
import CepisSupport

/// The CEP side of a ``LookupEngine``, not generic: the run-wide memo, the asks (one per CEP
/// asked, shared by every row that waits for it), the chunks in flight and their mailbox.
///
/// Each row's CEP is answered at once (malformed, or in the memo), joins the *ask* already
/// open for its CEP, or opens a new ask, queued for the next chunk — one hash probe of the
/// memo, which also holds the open asks. Asks are sent ``Client/maxBatch`` at a time; a
/// chunk's answers are keyed by each row's own CEP (see `Client.decodeBatchRows`) and land on
/// its asks, and from there on every row that reads them.
///
/// Not thread-safe, and need not be: its engine is advanced by one task at a time.
@usableFromInline
final class LookupAsks {
  /// The outcome of ``admit(_:behindOthers:)``.
  @usableFromInline
  enum Admission {
    /// The row's answer, now (no row is ahead of it).
    case answered(LookupResult)
    /// The slot the row's answer comes from.
    case held(Int32)
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
    var answer: LookupResult?
  }

  private let client: Client
  private let chunksInFlight: Int
  private var slots: [Slot] = []
  private var freeSlots: [Int32] = []
  private var unsent: [Int32] = []
  private var unsentHead = 0
  private var memo: LookupMemo
  private var chunks: [Int: Task<Void, Never>] = [:]
  private var nextChunk = 0
  private let mailbox = ChunkMailbox()

  @usableFromInline
  init(client: Client, options: BulkOptions, expectedCEPs: Int) {
    self.client = client
    self.chunksInFlight = options.chunksInFlight
    self.memo = LookupMemo(capacity: options.memoCapacity, reserving: expectedCEPs)
  }

  deinit {
    for task in chunks.values { task.cancel() }
  }

  /// What the iteration has spent so far.
  @usableFromInline
  var statistics: LookupStatistics {
    LookupStatistics(requests: nextChunk, memoEvictions: memo.evictions)
  }

  /// Whether a chunk's request is running (its outcome will come).
  @usableFromInline
  var hasChunksInFlight: Bool { !chunks.isEmpty }

  /// Cancels the requests in flight.
  @usableFromInline
  func stop() {
    for task in chunks.values { task.cancel() }
    chunks.removeAll()
  }

  // MARK: - Rows

  /// Takes in the CEP of a row read: its answer at once when it is known and no row is ahead
  /// of it (`behindOthers` false), else the slot its answer comes from.
  @usableFromInline
  func admit(_ text: String, behindOthers: Bool) -> Admission {
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
      return known(LookupResult(failure: error), behindOthers: behindOthers)
    }
    // The slot a new ask would take: the memo notes it in the same probe that finds the CEP.
    let vacant = freeSlots.last ?? Int32(slots.count)
    switch memo.state(of: number, orWaitFor: vacant) {
    case .answered(let answer):
      // The address's `cep` is the 8 digits of `number`, however this row spells it.
      return known(answer, behindOthers: behindOthers)
    case .waiting(let ask):
      slots[Int(ask)].waiting += 1
      return .held(ask)
    case .unknown:
      let slot = newSlot(Slot(cep: number, waiting: 1, sent: false, answer: nil))
      assert(slot == vacant)
      unsent.append(slot)
      sendChunks(partial: false)
      return .held(slot)
    }
  }

  /// A row whose answer is known: answered now if no row is ahead of it, else held.
  private func known(_ result: LookupResult, behindOthers: Bool) -> Admission {
    guard behindOthers else { return .answered(result) }
    return .held(newSlot(Slot(cep: -1, waiting: 1, sent: true, answer: result)))
  }

  private func newSlot(_ slot: Slot) -> Int32 {
    if let free = freeSlots.popLast() {
      slots[Int(free)] = slot
      return free
    }
    slots.append(slot)
    return Int32(slots.count - 1)
  }

  /// Whether a chunk carries the ask of `slot` (or it needs none).
  @usableFromInline
  func isSent(_ slot: Int32) -> Bool { slots[Int(slot)].sent }

  /// The answer of `slot` for one row that reads it, or `nil` while it is not answered.
  @usableFromInline
  func take(_ slot: Int32) -> LookupResult? {
    let index = Int(slot)
    guard let answer = slots[index].answer else { return nil }
    slots[index].waiting -= 1
    if slots[index].waiting == 0 {
      slots[index].answer = nil
      freeSlots.append(slot)
    }
    return answer
  }

  // MARK: - Requests

  /// Sends full chunks (and, with `partial`, what is left) while fewer than the limit are in
  /// flight.
  @usableFromInline
  func sendChunks(partial: Bool) {
    while chunks.count < chunksInFlight {
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

  /// Applies the outcomes the chunks have posted so far.
  @usableFromInline
  func applyOutcomes() {
    for outcome in mailbox.take() { apply(outcome) }
  }

  /// Returns once a chunk has posted its outcome (at once if one already has), or when the
  /// task is cancelled.
  @usableFromInline
  func waitForAnOutcome() async {
    if !mailbox.isEmpty || Task.isCancelled { return }
    await withTaskCancellationHandler {
      await mailbox.wait()
    } onCancel: { [mailbox] in
      mailbox.interrupt()
    }
  }

  private func apply(_ outcome: ChunkOutcome) {
    chunks[outcome.chunk] = nil
    switch outcome.answers {
    case .success(let answers):
      for (position, id) in outcome.asks.enumerated() {
        let index = Int(id)
        // The ask closes: a row read from now on is answered by the memo, or asks again.
        let answer = answers[position].map(LookupResult.init(found:)) ?? .notFound
        memo.keep(answer, for: slots[index].cep)
        slots[index].answer = answer
      }
    case .failure(let error):
      let failure = LookupResult(failure: error)
      for id in outcome.asks {
        let index = Int(id)
        // Not kept: a later row with this CEP asks again.
        memo.stopWaiting(for: slots[index].cep)
        slots[index].answer = failure
      }
    }
  }
}

/// What one iteration of a ``LookupStream`` has spent so far (`package`: the command line's
/// summary reports it).
@usableFromInline
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
