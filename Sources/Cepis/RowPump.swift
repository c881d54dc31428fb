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

/// Reads an asynchronous sequence of rows on a task of its own, at most `readAhead` rows ahead
/// of the engine's consumer: the reader takes one credit per row and waits when none is left;
/// the engine gives one back for each row it answers (see ``take(into:givingBack:)``).
///
/// Every row, the input's end and its error are left in one locked state; the engine is woken
/// through its ``ChunkMailbox`` when the buffer goes from empty to not (and at the end), so a
/// consumer faster than its input costs one wake-up per row, one slower costs none.
@usableFromInline
final class RowPump<Row: Sendable>: Sendable {
  private struct State: Sendable {
    var rows: [Row] = []
    var ended = false
    var error: (any Error)?
    var credit: Int
    var readerWaiter: CheckedContinuation<Void, Never>?
    var stopped = false
    var reader: Task<Void, Never>?
  }

  private let state: LockedValue<State>
  private let wake: ChunkMailbox

  /// Starts reading `rows`, at most `readAhead` of them not yet given back.
  init<Rows: AsyncSequence & Sendable>(reading rows: Rows, readAhead: Int, wake: ChunkMailbox)
  where Rows.Element == Row {
    self.state = LockedValue(State(credit: max(1, readAhead)))
    self.wake = wake
    let reader = Task { [self] in await self.read(rows) }
    let stoppedAlready = state.withLock { state in
      state.reader = reader
      return state.stopped
    }
    if stoppedAlready { reader.cancel() }
  }

  private func read<Rows: AsyncSequence>(_ rows: Rows) async where Rows.Element == Row {
    var iterator = rows.makeAsyncIterator()
    while true {
      let row: Row?
      do {
        row = try await iterator.next(isolation: nil)
      } catch {
        end(error)
        return
      }
      guard let row else {
        end(nil)
        return
      }
      guard await append(row) else { return }
    }
  }

  /// Leaves `row` for the engine; waits while no credit is left. `false` once stopped.
  private func append(_ row: Row) async -> Bool {
    let (stopped, wasEmpty, mustWait) = state.withLock { state in
      guard !state.stopped else { return (true, false, false) }
      state.rows.append(row)
      state.credit -= 1
      return (false, state.rows.count == 1, state.credit <= 0)
    }
    if stopped { return false }
    if wasEmpty { wake.interrupt() }
    guard mustWait else { return true }
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

  private func end(_ error: (any Error)?) {
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
