import CepisHTTP
import CepisSupport

/// The engine of one iteration of a ``LookupStream`` (and of ``Client/lookupMany(_:)``): the
/// rows read and not yet answered, in order. Everything about CEPs — the memo, the asks, the
/// chunks — is ``LookupAsks``'s, which is not generic: compiled once, specialised, in this
/// module, so that a caller in another module (the command line, a user's code) runs only this
/// thin generic layer unspecialised.
///
/// Rows are read only inside ``next()``, so a consumer that stops asking stops the reading.
/// Each row read is answered at once (a malformed CEP, or an answer in the memo, when no row
/// is ahead of it), or held with the slot its answer will come from. A row leaves when it is
/// first in line and answered.
///
/// Bounds: rows held ≤ ``BulkOptions/readAhead``; asks ≤ rows held; memo ≤
/// ``BulkOptions/memoCapacity``; outcomes not yet applied ≤ ``BulkOptions/chunksInFlight``.
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
  // Unchecked exclusivity, as for the rows held below: `input` is accessed across the await
  // of every row's `next`, which otherwise costs a dynamic access record per row.
  @usableFromInline @exclusivity(unchecked) var input: Rows.AsyncIterator
  @usableFromInline @exclusivity(unchecked) var inputDone = false
  @usableFromInline @exclusivity(unchecked) var inputError: (any Error)?
  @usableFromInline @exclusivity(unchecked) var finished = false

  @usableFromInline @exclusivity(unchecked) var held: [Held] = []
  @usableFromInline @exclusivity(unchecked) var heldHead = 0
  @usableFromInline let asks: LookupAsks

  /// Rows read between two looks at cancellation and the mailbox.
  @usableFromInline static var pollInterval: Int { 64 }
  @usableFromInline @exclusivity(unchecked) var pollCountdown = 0

  /// What this iteration has spent so far.
  @usableFromInline
  var statistics: LookupStatistics { asks.statistics }

  /// An engine over `rows`; `expectedCEPs` (when the caller knows it) sets memo room aside.
  @usableFromInline
  init(
    client: Client, rows: Rows, key: CEPKey<Row>, options: BulkOptions,
    expectedCEPs: Int = 0, editionCheck: LookupAsks.EditionCheck = .refresh
  ) {
    self.key = key
    self.readAhead = options.readAhead
    self.input = rows.makeAsyncIterator()
    self.asks = LookupAsks(
      client: client, options: options, expectedCEPs: expectedCEPs, editionCheck: editionCheck)
  }

  /// The next row's answer, reading rows and sending chunks as needed, on `actor` (the
  /// caller's: no executor hop per row).
  @inlinable
  func next(isolation actor: isolated (any Actor)?) async throws -> LookupAnswer<Row>? {
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
      if !inputDone && held.count - heldHead < readAhead {
        do {
          if let row = try await input.next(isolation: actor) {
            let admission =
              switch key {
              case .text(let cep): asks.admit(cep(row), behindOthers: heldHead < held.count)
              case .number(let cep):
                asks.admit(number: cep(row), behindOthers: heldHead < held.count)
              }
            switch admission {
            case .answered(let result): return LookupAnswer(row: row, stored: result)
            case .held(let slot): held.append(Held(row: row, slot: slot, openedAsk: false))
            case .asked(let slot): held.append(Held(row: row, slot: slot, openedAsk: true))
            }
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
      if inputDone || !asks.isSent(held[heldHead].slot) {
        asks.sendChunks(partial: true)
      }
      if heldHead == held.count {
        // Every answer is out: the run ends once the cache has them all.
        await asks.finishStores()
        stop()
        if let error = inputError {
          inputError = nil
          throw error
        }
        return nil
      }
      precondition(asks.hasChunksInFlight, "a row waits for an ask that is neither queued nor sent")
      pollCountdown = 0
      await asks.waitForAnOutcome()
    }
  }

  /// Ends the iteration: cancels the requests in flight.
  @inlinable
  func stop() {
    finished = true
    asks.stop()
  }

  /// The first held row, when it is answered.
  @inlinable
  func popAnswered() -> LookupAnswer<Row>? {
    guard heldHead < held.count, let result = asks.take(held[heldHead].slot) else { return nil }
    let openedAsk = held[heldHead].openedAsk
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
}
