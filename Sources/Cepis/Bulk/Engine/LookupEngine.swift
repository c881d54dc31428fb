import CepisHTTP
import CepisSupport

/// The engine of one iteration of a ``LookupStream`` (and of ``Client/lookupMany(_:)``): the
/// rows read and not yet answered, in order. Everything about CEPs — the memo, the asks, the
/// chunks — is ``LookupAsks``'s, which is not generic: compiled once, specialised, in this
/// module, so that a caller in another module (the command line, a user's code) runs only this
/// thin generic layer unspecialised.
///
/// A plain sequence (``ReadInline``) is read only inside ``next()``, so a consumer that stops
/// asking stops the reading (an array by index, any other through its iterator). Any other
/// input is read by a ``RowPump`` on a task of its own, at most the read-ahead ahead of the
/// consumer, so that a pause of the input does not hold the answers of the rows already read;
/// rows that stop coming for ``BulkOptions/linger`` count as "nothing more to read now". Each
/// row read is answered at once (a malformed CEP, or an answer in the memo, when no row is
/// ahead of it), or held with the slot its answer will come from. A row leaves when it is
/// first in line and answered.
///
/// Bounds: rows read and not yet answered ≤ ``BulkOptions/readAhead``; asks ≤ rows held;
/// memo ≤ ``BulkOptions/memoCapacity``; outcomes not yet applied ≤
/// ``BulkOptions/chunksInFlight``.
///
/// `@inlinable` (with its state `@usableFromInline`): a caller in another module gets this
/// loop specialised for its row type instead of running it through generic metadata for
/// every row.
///
/// Not thread-safe, and need not be: an async iterator is advanced by one task at a time.
/// Requests run in tasks of their own that only post their outcome to a locked mailbox.
@usableFromInline
final class LookupEngine<Rows: AsyncSequence & Sendable> where Rows.Element: Sendable {
  @usableFromInline typealias Row = Rows.Element

  /// A row read and not yet answered to the consumer, and the slot its answer comes from.
  /// Small on purpose: rows are moved as the line advances.
  @usableFromInline
  struct Held {
    @usableFromInline var row: Row?
    @usableFromInline var slot: Int32
    @usableFromInline var openedAsk: Bool

    @inlinable
    init(row: Row?, slot: Int32, openedAsk: Bool) {
      self.row = row
      self.slot = slot
      self.openedAsk = openedAsk
    }
  }

  @usableFromInline let key: CEPKey<Row>
  @usableFromInline let readAhead: Int
  @usableFromInline let readsWithPlainNext: Bool
  // Unchecked exclusivity, as for the rows held below: `input` is accessed across the await
  // of every row's `next`, which otherwise costs a dynamic access record per row.
  // `nil` when a pump reads the rows.
  @usableFromInline @exclusivity(unchecked) var input: Rows.AsyncIterator?
  /// An array's rows (`lookupMany`, `lookups` over an array), read by index: no asynchronous
  /// call per row, whose return checks the caller's executor (`swift_task_switch`, counted:
  /// one a row). The input when there is neither a pump nor `input`; otherwise empty.
  @usableFromInline let rowArray: [Row]
  @usableFromInline @exclusivity(unchecked) var rowIndex = 0
  @usableFromInline @exclusivity(unchecked) var inputDone = false
  @usableFromInline @exclusivity(unchecked) var inputError: (any Error)?
  @usableFromInline @exclusivity(unchecked) var finished = false

  /// The rows held are `held[heldHead..<heldEnd]`. The entries outside it are spent (their
  /// rows moved out) and are overwritten rather than removed: removing them would destroy
  /// each through the row type's generic value witness, a cost a bulk run's profile shows
  /// (`e5deedb`).
  @usableFromInline @exclusivity(unchecked) var held: [Held] = []
  @usableFromInline @exclusivity(unchecked) var heldHead = 0
  @usableFromInline @exclusivity(unchecked) var heldEnd = 0
  @usableFromInline let asks: LookupAsks

  /// The reader of an input that can pause (`nil`: read inline), the rows taken from it and
  /// not yet admitted, and the rows answered since credit was last given back to it.
  @usableFromInline let pump: RowPump<Row>?
  /// The input, until the pump's reader starts reading it (with the first `next()`).
  @usableFromInline @exclusivity(unchecked) var unreadRows: Rows?
  @usableFromInline @exclusivity(unchecked) var pumped: [Row] = []
  @usableFromInline @exclusivity(unchecked) var pumpedHead = 0
  @usableFromInline @exclusivity(unchecked) var creditOwed = 0
  /// When rows last came from the pump (``monotonicSeconds()``), and the linger timer.
  @usableFromInline let linger: Double
  @usableFromInline @exclusivity(unchecked) var lastRowsAt: Double
  @usableFromInline @exclusivity(unchecked) var lingerTimer: Task<Void, Never>?
  @usableFromInline @exclusivity(unchecked) var lingerTimerDeadline = 0.0

  /// Rows read between two looks at cancellation and the mailbox.
  @usableFromInline static var pollInterval: Int { 64 }
  @usableFromInline @exclusivity(unchecked) var pollCountdown = 0

  /// What this iteration has spent so far.
  @usableFromInline
  var statistics: LookupStatistics { asks.statistics }

  /// An engine over `rows`. With `distinctRows`, the caller promises that no two rows have
  /// the same CEP (`lookupMany`, which de-duplicates first): nothing is kept in the memo, since
  /// no later row could use it (see ``LookupAsks``).
  @usableFromInline
  init(
    client: Client, rows: Rows, key: CEPKey<Row>, options: BulkOptions,
    distinctRows: Bool = false, editionCheck: LookupAsks.EditionCheck = .refresh
  ) {
    if case .row = key { precondition(Row.self == String.self, "CEPKey.row reads String rows") }
    if case .rowNumber = key {
      precondition(Row.self == Int.self, "CEPKey.rowNumber reads Int rows")
    }
    self.key = key
    self.readAhead = options.readAhead
    self.readsWithPlainNext = options.readsWithPlainNext
    self.linger = options.linger
    self.lastRowsAt = monotonicSeconds()
    let asks = LookupAsks(
      client: client, options: options, distinctRows: distinctRows, editionCheck: editionCheck)
    self.asks = asks
    if let array = (rows as? AsyncRows<[Row]>)?.base {
      self.rowArray = array
      self.input = nil
      self.pump = nil
    } else if rows is any ReadInline {
      self.rowArray = []
      self.input = rows.makeAsyncIterator()
      self.pump = nil
    } else {
      self.rowArray = []
      self.input = nil
      self.pump = RowPump(readAhead: options.readAhead, wake: asks.mailbox)
      self.unreadRows = rows
    }
  }

  deinit {
    pump?.stop()
    lingerTimer?.cancel()
  }

  /// The next row's answer, reading rows and sending chunks as needed, on `actor` (the
  /// caller's: no executor hop per row).
  @inlinable
  func next(isolation actor: isolated (any Actor)?) async throws -> LookupAnswer<Row>? {
    if unreadRows != nil { startReader() }
    if !asks.preloadConsidered { asks.startPreloadIfWorthIt() }
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
        asks.applyOutcomes()
      } else {
        pollCountdown -= 1
      }
      if let answer = popAnswered() { return answer }
      if !inputDone && heldEnd - heldHead < readAhead {
        let row: Row?
        if let pump {
          if pumpedHead == pumped.count && !takeRows(from: pump) {
            // No row for now (or the input just ended: the next turn sees it).
            if !inputDone, try await waitForAnswers(stalled: true) { return nil }
            continue
          }
          row = pumped[pumpedHead]
          pumpedHead += 1
        } else if input != nil {
          do {
            // `next(isolation:)` is a requirement only from the 2024 systems on; before them an
            // iterator has `next()` alone, which runs off the caller's actor, as a `for try await`
            // loop's does there. The iterator is moved out for the call and back after it: the
            // engine has one owner, which awaits the call, so nothing else touches it meanwhile.
            if #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *),
              !readsWithPlainNext
            {
              row = try await input!.next(isolation: actor)
            } else {
              nonisolated(unsafe) var iterator = input.take()!
              defer { input = iterator }
              row = try await iterator.next()
            }
          } catch {
            inputDone = true
            inputError = error
            continue
          }
        } else if rowIndex < rowArray.count {
          row = rowArray[rowIndex]
          rowIndex += 1
        } else {
          row = nil
        }
        guard let row else {
          inputDone = true
          continue
        }
        let behindOthers = heldHead < heldEnd
        let admission =
          switch key {
          case .text(let cep): asks.admit(cep(row), behindOthers: behindOthers)
          case .number(let cep): asks.admit(number: cep(row), behindOthers: behindOthers)
          // `Row` is `String`: a cast, one retain and release of the string per row.
          case .row: asks.admit(row as! String, behindOthers: behindOthers)
          // `Row` is `Int`: no call per row.
          case .rowNumber: asks.admit(number: row as? Int, behindOthers: behindOthers)
          }
        // The row is moved, not copied, into its answer or the line.
        switch admission {
        case .answered(let result):
          if pump != nil { creditOwed += 1 }
          return LookupAnswer(row: consume row, stored: result)
        case .held(let slot): hold(Held(row: consume row, slot: slot, openedAsk: false))
        case .asked(let slot): hold(Held(row: consume row, slot: slot, openedAsk: true))
        }
        continue
      }
      if try await waitForAnswers(stalled: false) { return nil }
    }
  }

  /// The first held row's answer when it is already in, and no look at cancellation or the
  /// mailbox is due: what ``next(isolation:)`` would return, without its asynchronous call
  /// (a frame from the task's allocator and an executor check, per row). `nil`: call
  /// ``next(isolation:)``.
  @inlinable
  func nextReady() -> LookupAnswer<Row>? {
    guard pollCountdown > 0, !finished, let answer = popAnswered() else { return nil }
    pollCountdown -= 1
    return answer
  }

  /// Starts the pump's reader: a task of its own (detached: not on the consumer's actor; at
  /// the consumer's priority) that reads the input into the pump until it ends, throws, or
  /// the stream stops.
  @inlinable
  func startReader() {
    guard let pump, let rows = unreadRows else { return }
    unreadRows = nil
    let reader = Task.detached(priority: Task.currentPriority) {
      var iterator = rows.makeAsyncIterator()
      while true {
        let row: Row?
        do {
          row = try await iterator.next()
        } catch {
          pump.end(error)
          return
        }
        guard let row else {
          pump.end(nil)
          return
        }
        switch pump.offer(row) {
        case .more: continue
        case .full: if await !pump.waitForCredit() { return }
        case .stopped: return
        }
      }
    }
    pump.attach(reader: reader)
  }

  /// Nothing more can be read now: sends what must go, and waits for an outcome (or, when
  /// `stalled`, rows). `true` when the run is over: every row answered and the input ended.
  ///
  /// At the end of the input, what waits must go, even in a partial chunk. With the
  /// read-ahead full, or the input stalled for ``BulkOptions/linger``, a partial chunk goes
  /// only when the first row waits for an ask no chunk carries (it would wait for ever, or
  /// for rows that do not come). Otherwise the rows ahead wait for a chunk in flight: a
  /// partial chunk now would cost a request that a full one could have saved.
  @inlinable
  nonisolated(nonsending) func waitForAnswers(stalled: Bool) async throws -> Bool {
    let firstUnsent = heldHead < heldEnd && !asks.isSent(held[heldHead].slot)
    if inputDone || (firstUnsent && (!stalled || lingerIsOver())) {
      asks.sendChunks(partial: true)
    } else if firstUnsent {
      armLinger()
    }
    if heldHead == heldEnd && inputDone {
      // Every answer is out: the run ends once the cache has them all.
      await asks.finishStores()
      stop()
      if let error = inputError {
        inputError = nil
        throw error
      }
      return true
    }
    precondition(
      stalled || asks.hasChunksInFlight, "a row waits for an ask that is neither queued nor sent")
    pollCountdown = 0
    await asks.waitForAnOutcome()
    return false
  }

  /// Takes the rows the pump has read; `false` when there are none (and, when the input has
  /// ended, marks it so). Gives back the credit of the rows answered since the last take.
  @usableFromInline
  func takeRows(from pump: RowPump<Row>) -> Bool {
    pumped.removeAll(keepingCapacity: true)
    pumpedHead = 0
    let (ended, error) = pump.take(into: &pumped, givingBack: creditOwed)
    creditOwed = 0
    if !pumped.isEmpty {
      lastRowsAt = monotonicSeconds()
      return true
    }
    if ended {
      inputDone = true
      inputError = error
    }
    return false
  }

  /// Whether no row has come for ``BulkOptions/linger``.
  @usableFromInline
  func lingerIsOver() -> Bool { monotonicSeconds() - lastRowsAt >= linger }

  /// Wakes the engine when the linger is over, unless a timer already will (one at a time).
  @usableFromInline
  func armLinger() {
    let now = monotonicSeconds()
    guard lingerTimer == nil || lingerTimerDeadline <= now else { return }
    let deadline = lastRowsAt + linger
    lingerTimerDeadline = deadline
    let mailbox = asks.mailbox
    let delay = UInt64(max(0, deadline - now) * 1_000_000_000)
    lingerTimer = Task {
      try? await Task.sleep(nanoseconds: delay)
      mailbox.interrupt()
    }
  }

  /// Ends the iteration: cancels the requests in flight.
  @inlinable
  func stop() {
    finished = true
    asks.stop()
    pump?.stop()
    lingerTimer?.cancel()
  }

  /// Puts `row` at the end of the line, over a spent entry when there is one.
  @inlinable
  func hold(_ row: consuming Held) {
    if heldEnd < held.count {
      held[heldEnd] = row
    } else {
      held.append(row)
    }
    heldEnd += 1
  }

  /// The first held row, when it is answered.
  @inlinable
  func popAnswered() -> LookupAnswer<Row>? {
    guard heldHead < heldEnd else { return nil }
    // The slot alone is read before `take`: reading it as the argument would copy (retain and
    // release) the whole held row around the call.
    let slot = held[heldHead].slot
    guard let result = asks.take(slot) else { return nil }
    let openedAsk = held[heldHead].openedAsk
    if pump != nil { creditOwed += 1 }
    // Moved out, not copied: the row is not retained twice.
    let row = held[heldHead].row.take()
    heldHead += 1
    if heldHead == heldEnd {
      heldHead = 0
      heldEnd = 0
    } else if heldHead >= 1_024 && heldHead * 2 >= heldEnd {
      // The rows held move to the front, the spent entries behind them (swapped: nothing is
      // destroyed, nothing retained).
      let (head, end) = (heldHead, heldEnd)
      held.withUnsafeMutableBufferPointer { held in
        for index in head..<end { held.swapAt(index - head, index) }
      }
      heldEnd -= heldHead
      heldHead = 0
    }
    guard let row else { preconditionFailure("a held row was answered twice") }
    return LookupAnswer(row: row, stored: result, openedAsk: openedAsk)
  }
}

/// How a ``LookupEngine`` finds a row's CEP: as text (the public API's), or as a number the
/// caller has already (`nil`: none; the command line's rows, parsed as they are read).
@usableFromInline
enum CEPKey<Row>: Sendable {
  /// The CEP as the row spells it (masked or not; malformed ones fail their row).
  case text(@Sendable (Row) -> String)
  /// The CEP's number, or `nil` when the row has none.
  case number(@Sendable (Row) -> Int?)
  /// The row is the CEP string itself (`Row` is `String`: a stream of CEP strings, and
  /// `lookupMany`). What `.text({ $0 })` means, without a call per row, nor the retain and
  /// release of the closure and of the string it returns.
  case row
  /// The row is the CEP's number itself (`Row` is `Int`: `lookupMany`'s distinct CEPs). What
  /// `.number({ $0 })` means, without a call per row.
  case rowNumber
}

extension CEPKey where Row == String {
  /// The key of rows that are CEP strings (``CEPKey/row``): only for `Row == String`.
  @usableFromInline static var cepStrings: CEPKey<String> { .row }
}
