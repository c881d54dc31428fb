import CepisHTTP
import CepisSupport

/// The engine of one iteration of a ``LookupStream``.
///
/// Rows are read only inside ``next()``, so a consumer that stops asking stops the reading.
/// Each row read is answered at once (a malformed CEP, or an answer in the memo), joins the
/// *ask* already open for its CEP, or opens a new ask, queued for the next chunk. Asks are
/// sent ``Client/maxBatch`` at a time; a chunk's answers are keyed by each row's own CEP (see
/// `Client.decodeBatchRows`) and land on its asks, and from there on every row that waits
/// for them. A row leaves when it is first in line and answered.
///
/// Bounds: rows held ≤ ``BulkOptions/readAhead``; asks ≤ rows held; memo ≤
/// ``BulkOptions/memoCapacity``; outcomes not yet applied ≤ ``BulkOptions/chunksInFlight``.
///
/// Not thread-safe, and need not be: an async iterator is advanced by one task at a time.
/// Requests run in tasks of their own that only post their outcome to a locked mailbox.
final class LookupEngine<Rows: AsyncSequence & Sendable> where Rows.Element: Sendable {
  typealias Row = Rows.Element

  private enum State {
    case answered(Result<Address?, CepisError>)
    case waiting(ask: Int)
  }

  private struct Held {
    var row: Row
    var state: State
  }

  /// One CEP asked in one chunk, and how many held rows wait for its answer.
  private struct Ask {
    var cep: Int
    var waiting = 0
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
  private var asks: [Int: Ask] = [:]
  private var nextAsk = 0
  /// The ask still open (unsent or in flight) for each CEP.
  private var openAsks: [Int: Int] = [:]
  private var unsent: [Int] = []
  private var unsentHead = 0
  private var memo: LookupMemo

  private var chunks: [Int: Task<Void, Never>] = [:]
  private var nextChunk = 0
  private let mailbox = ChunkMailbox()

  init(
    client: Client, rows: Rows, cep: @escaping @Sendable (Row) -> String, options: BulkOptions
  ) {
    self.client = client
    self.cep = cep
    self.options = options
    self.input = rows.makeAsyncIterator()
    self.memo = LookupMemo(capacity: options.memoCapacity)
  }

  deinit {
    for task in chunks.values { task.cancel() }
  }

  /// The next row's answer, reading rows and sending chunks as needed.
  func next() async throws -> LookupAnswer<Row>? {
    while true {
      guard !finished else { return nil }
      if Task.isCancelled {
        stop()
        throw CancellationError()
      }
      for outcome in mailbox.take() { apply(outcome) }
      if let answer = popAnswered() { return answer }
      if !inputDone && held.count - heldHead < options.readAhead {
        do {
          if let row = try await input.next() {
            admit(row)
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
      // Nothing more can be read now: what waits must go, even in a partial chunk.
      sendChunks(partial: true)
      if heldHead == held.count {
        stop()
        if let error = inputError {
          inputError = nil
          throw error
        }
        return nil
      }
      precondition(!chunks.isEmpty, "a row waits for an ask that is neither queued nor sent")
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

  private func admit(_ row: Row) {
    let text = cep(row)
    guard let number = cepNumber(text.utf8) ?? (try? normalizeCEP(text)).flatMap({ Int($0) })
    else {
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
      held.append(Held(row: row, state: .answered(.failure(error))))
      return
    }
    if let known = memo.answer(for: number) {
      // The address's `cep` is the 8 digits of `number`, however this row spells it.
      held.append(Held(row: row, state: .answered(.success(known))))
      return
    }
    let ask: Int
    if let open = openAsks[number] {
      ask = open
    } else {
      ask = nextAsk
      nextAsk += 1
      asks[ask] = Ask(cep: number)
      openAsks[number] = ask
      unsent.append(ask)
    }
    asks[ask]?.waiting += 1
    held.append(Held(row: row, state: .waiting(ask: ask)))
  }

  /// The first held row, when it is answered.
  private func popAnswered() -> LookupAnswer<Row>? {
    guard heldHead < held.count else { return nil }
    let first = held[heldHead]
    let result: Result<Address?, CepisError>
    switch first.state {
    case .answered(let known):
      result = known
    case .waiting(let id):
      guard let ask = asks[id], let answer = ask.answer else { return nil }
      result = answer
      if ask.waiting == 1 { asks[id] = nil } else { asks[id]?.waiting -= 1 }
    }
    heldHead += 1
    if heldHead == held.count {
      held.removeAll(keepingCapacity: true)
      heldHead = 0
    } else if heldHead >= 1_024 && heldHead * 2 >= held.count {
      held.removeFirst(heldHead)
      heldHead = 0
    }
    return LookupAnswer(row: first.row, result: result)
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

  private func send(_ ids: [Int]) {
    let ceps = ids.map { cepString(asks[$0]!.cep) }
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
    for (position, id) in outcome.asks.enumerated() {
      guard let cep = asks[id]?.cep else { continue }
      if openAsks[cep] == id { openAsks[cep] = nil }
      switch outcome.answers {
      case .success(let answers):
        let answer = answers[position]
        memo.keep(answer, for: cep)
        asks[id]?.answer = .success(answer)
      case .failure(let error):
        // Not kept: a later row with this CEP asks again.
        asks[id]?.answer = .failure(error)
      }
    }
  }
}

/// What one chunk's request ended with.
struct ChunkOutcome: Sendable {
  var chunk: Int
  var asks: [Int]
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
