import CepisSupport

// The reader of a `LookupStream` whose rows come from an asynchronous sequence.
//
// Such an input can pause: rows from a queue, a socket, a user's form submissions. Read on the
// consumer's task, a pause held every answer already received until the next row came, and a
// partial chunk waited for rows that did not come. So the rows are read on a task of the
// stream's own, into a locked buffer the engine takes whole; the engine then sees a pause as
// "no row now" and can still answer the rows it holds (and, after ``BulkOptions/linger``,
// send the partial chunk they wait for). A plain `Sequence` (``AsyncRows``) cannot pause and
// is still read inline, with no hand-off per row.

/// Input that never suspends for long (a plain `Sequence`, a file read synchronously): a
/// ``LookupEngine`` reads it on the consumer's task instead of through a ``RowPump``.
package protocol ReadInline {}

extension AsyncRows: ReadInline {}

/// Where a reader task leaves the rows of an asynchronous sequence, at most `readAhead` rows
/// ahead of the engine's consumer: the reader takes one credit per row and waits when none is
/// left; the engine gives one back for each row it answers (see ``take(into:givingBack:)``).
/// The reader's loop is the engine's (``LookupEngine/startReader()``), so that it is
/// specialised for the input's type in the caller's module: here, a generic loop paid a
/// frame allocation and metadata look-ups per row.
///
/// Every row, the input's end and its error are left in one locked state; the engine is woken
/// through its ``ChunkMailbox`` when the buffer goes from empty to not (and at the end), so a
/// consumer faster than its input costs one wake-up per row, one slower costs none.
@usableFromInline
final class RowPump<Row: Sendable>: Sendable {
  @usableFromInline
  struct State: Sendable {
    @usableFromInline var rows: [Row] = []
    @usableFromInline var ended = false
    @usableFromInline var error: (any Error)?
    @usableFromInline var credit: Int
    @usableFromInline var readerWaiter: CheckedContinuation<Void, Never>?
    @usableFromInline var stopped = false
    @usableFromInline var reader: Task<Void, Never>?
  }

  @usableFromInline let state: LockedValue<State>
  @usableFromInline let wake: ChunkMailbox

  /// A pump that lets its reader read at most `readAhead` rows not yet given back; the
  /// reader itself is started by the engine (``attach(reader:)``), in code specialised for
  /// the input's type.
  init(readAhead: Int, wake: ChunkMailbox) {
    self.state = LockedValue(State(credit: max(1, readAhead)))
    self.wake = wake
  }

  /// Keeps the reader's task, to cancel it on ``stop()`` (at once when stopped already).
  @usableFromInline
  func attach(reader: Task<Void, Never>) {
    let stoppedAlready = state.withLock { state in
      state.reader = reader
      return state.stopped
    }
    if stoppedAlready { reader.cancel() }
  }

  /// What the reader does after offering a row.
  @usableFromInline
  enum Offer {
    /// Read the next row.
    case more
    /// Wait for credit (``waitForCredit()``) before reading another.
    case full
    /// Stop reading: the stream is over.
    case stopped
  }

  /// Leaves `row` for the engine, waking it when the buffer was empty. Inlinable: called for
  /// every row by the reader's loop, specialised for the input's type in the caller's module,
  /// it locks and appends with no generic call (unspecialised, each call looked up the
  /// metadata of `State` and of its closure's result; Benchmarks/RESULTS.md, row
  /// `lookups CPU, async sequence (AHC)`).
  @inlinable
  func offer(_ row: Row) -> Offer {
    let (offer, wasEmpty) = state.withLock { state -> (Offer, Bool) in
      guard !state.stopped else { return (.stopped, false) }
      state.rows.append(row)
      state.credit -= 1
      return (state.credit > 0 ? .more : .full, state.rows.count == 1)
    }
    if wasEmpty { wake.interrupt() }
    return offer
  }

  /// Returns once the engine has given credit back (`true`) or the stream is over (`false`).
  @usableFromInline
  func waitForCredit() async -> Bool {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      let now = state.withLock { state in
        if state.stopped || state.credit > 0 { return true }
        state.readerWaiter = continuation
        return false
      }
      if now { continuation.resume() }
    }
    return state.withLock { !$0.stopped }
  }

  /// The input ended (`error`: it threw).
  @usableFromInline
  func end(_ error: (any Error)?) {
    state.withLock { state in
      state.ended = true
      state.error = error
    }
    wake.interrupt()
  }

  /// Hands the rows read so far to the engine (`buffer` must be empty; it comes back holding
  /// them, and the pump keeps the old buffer's storage), after taking back `credit` rows the
  /// engine answered. `ended` (with the input's error, if it threw) only once no row is left:
  /// every row is taken before the end is seen.
  @usableFromInline
  func take(into buffer: inout [Row], givingBack credit: Int) -> (ended: Bool, error: (any Error)?)
  {
    let (waiter, ended, error) = state.withLock {
      state -> (CheckedContinuation<Void, Never>?, Bool, (any Error)?) in
      state.credit += credit
      swap(&buffer, &state.rows)
      let waiter = state.credit > 0 ? state.readerWaiter : nil
      if waiter != nil { state.readerWaiter = nil }
      let ended = buffer.isEmpty && state.ended
      return (waiter, ended, ended ? state.error : nil)
    }
    waiter?.resume()
    return (ended, error)
  }

  /// Stops the reading: the reader's task is cancelled, and reads no row after the one it may
  /// be waiting for.
  @usableFromInline
  func stop() {
    let (waiter, reader) = state.withLock { state in
      state.stopped = true
      defer { state.readerWaiter = nil }
      return (state.readerWaiter, state.reader)
    }
    waiter?.resume()
    reader?.cancel()
  }
}
