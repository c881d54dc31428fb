import CepisHTTP
import CepisSupport
import Dispatch
import Foundation

/// Which DNE edition cep.is serves, as far as a cache knows: the last mark `/health` gave
/// (``EditionMark``), when it was asked, the back-off after it failed, and the one check in
/// flight that concurrent callers share.
///
/// A file cache shares its mark with every process using the file: the tracker reads the
/// file's mark when its own is not recent, and records each mark it learns, through the
/// ``SharedMark`` its caller hands it.
final class EditionTracker: Sendable {
  /// How long, in seconds, an edition learnt from `/health` is trusted before it is asked
  /// again.
  let revalidateEvery: TimeInterval
  /// How long `/health` is not asked again after it failed, in seconds.
  let retryAfterFailure: TimeInterval
  private let now: @Sendable () -> Date
  private let state = LockedValue(State())

  private struct State: Sendable {
    var mark: EditionMark?
    var lastFailure: Date?
    var inFlight: Task<String?, Never>?
  }

  /// Where the mark shared with other processes is read and kept (the cache's store); each
  /// closure degrades an error of the store to `nil` or to nothing.
  struct SharedMark: Sendable {
    /// The mark the store keeps, if any.
    var read: @Sendable () async -> EditionMark?
    /// Keeps a mark just learnt.
    var record: @Sendable (EditionMark) async -> Void
    /// For a store that processes check through at the same moment (a server): claims the
    /// check for this process for ``EditionTracker/fleetCheckSeconds``, `true` when this
    /// process is to ask (and when the store cannot be reached). `nil`: every process asks.
    var claimCheck: (@Sendable () async -> Bool)? = nil
    /// Gives up the claim on the check.
    var releaseCheck: @Sendable () async -> Void = {}
  }

  /// How long a process's claim on the fleet's `/health` check holds (seconds): the others
  /// wait at most this long for its mark before they ask themselves. It covers a check with
  /// its retries; a process whose check fails gives the claim up at once.
  static let fleetCheckSeconds = 10

  /// A tracker trusting a mark for `revalidateEvery` seconds (0 when negative or NaN), on the
  /// clock `now`.
  init(revalidateEvery: TimeInterval, now: @escaping @Sendable () -> Date) {
    self.revalidateEvery = revalidateEvery
    self.retryAfterFailure = min(revalidateEvery, 60)
    self.now = now
  }

  /// The edition cep.is serves, asking `client.health()` when the last check is older than
  /// ``revalidateEvery`` (or another process's check, read through `shared`, is). `nil` while
  /// no edition was ever seen. `shared` is made only when the tracker's own mark is not
  /// recent.
  func liveEdition(using client: Client, shared: @autoclosure () -> SharedMark) async -> String? {
    let now = self.now()
    if let mark = state.withLock({ $0.mark }), isRecent(mark.checkedAt, now: now) {
      return mark.edition
    }
    if let sharedMark = await shared().read() {
      let adopted = state.withLock { state -> EditionMark in
        if let mark = state.mark, mark.checkedAt > sharedMark.checkedAt { return mark }
        state.mark = sharedMark
        return sharedMark
      }
      if isRecent(adopted.checkedAt, now: now) { return adopted.edition }
    }
    let backingOff = state.withLock { state -> Bool in
      guard let failure = state.lastFailure else { return false }
      let elapsed = now.timeIntervalSince(failure)
      return elapsed >= 0 && elapsed < retryAfterFailure
    }
    if backingOff { return state.withLock { $0.mark?.edition } }
    return await refresh(using: client, shared: shared(), unlessLearntSince: now)
  }

  /// Asks `client.health()` for the live edition now, whatever the interval, and records it
  /// (in the tracker and through `shared`); concurrent callers share one request, and so do
  /// processes sharing a server's store (see `fleetCheck`). When `/health` fails, the last
  /// edition seen (`nil` if none) is returned.
  ///
  /// With `since`, a check that ended after that moment (or is still recent at it) is used
  /// instead: a caller that found no recent check, and then waited (to read the file, or to
  /// be scheduled) while another caller's check ended, does not ask again.
  func refresh(
    using client: Client, shared: @autoclosure () -> SharedMark, unlessLearntSince since: Date?
  ) async -> String? {
    let task = state.withLock { state -> Task<String?, Never>? in
      if let running = state.inFlight { return running }
      if let since, let mark = state.mark,
        mark.checkedAt >= since || isRecent(mark.checkedAt, now: since)
      {
        return nil
      }
      let shared = shared()
      let task = Task<String?, Never> { [self] in
        let learnt: EditionMark?
        let checkedAt: Date
        switch await fleetCheck(shared) {
        case .adopt(let mark):
          learnt = mark
          checkedAt = mark.checkedAt
        case .ask(let claimed):
          let health = try? await client.health()
          checkedAt = now()
          learnt = health.flatMap {
            $0.dne.isEmpty ? nil : EditionMark(edition: $0.dne, checkedAt: checkedAt)
          }
          if let learnt { await shared.record(learnt) }
          if claimed { await shared.releaseCheck() }
        }
        let previous = self.state.withLock { $0.mark?.edition }
        if let learnt, let previous, previous != learnt.edition {
          Client.record(.editionChanged(from: previous, to: learnt.edition))
        }
        return self.state.withLock { state -> String? in
          state.inFlight = nil
          if let learnt {
            state.mark = learnt
            state.lastFailure = nil
          } else {
            state.lastFailure = checkedAt
          }
          return state.mark?.edition
        }
      }
      state.inFlight = task
      return task
    }
    guard let task else { return state.withLock { $0.mark?.edition } }
    return await task.value
  }

  /// Of processes that check through one store at once, which asks `/health`.
  private enum FleetCheck {
    /// This process asks; `claimed` when it holds the store's claim on the check.
    case ask(claimed: Bool)
    /// Another process asked: its mark, recorded while this one waited.
    case adopt(EditionMark)
  }

  /// Claims the check in `shared`'s store, unless another process checked within the last
  /// ``fleetCheckSeconds`` (runs of a fleet that start together share one check). While
  /// another process holds the claim, waits for the mark it records (newer than the one kept
  /// now), polling every 50 ms, until its claim is given up or expires (this process then
  /// claims it) or ``fleetCheckSeconds`` pass.
  private func fleetCheck(_ shared: SharedMark) async -> FleetCheck {
    guard let claimCheck = shared.claimCheck else { return .ask(claimed: false) }
    let kept = await shared.read()
    if let kept {
      let age = now().timeIntervalSince(kept.checkedAt)
      if age >= 0, age < min(Double(Self.fleetCheckSeconds), revalidateEvery) {
        return .adopt(kept)
      }
    }
    func recorded() async -> EditionMark? {
      guard let mark = await shared.read() else { return nil }
      return kept.map { mark.checkedAt > $0.checkedAt } ?? true ? mark : nil
    }
    let deadline =
      DispatchTime.now().uptimeNanoseconds + UInt64(Self.fleetCheckSeconds + 1) * 1_000_000_000
    while true {
      if await claimCheck() {
        // A check that ended between the first read and the claim.
        guard let mark = await recorded() else { return .ask(claimed: true) }
        await shared.releaseCheck()
        return .adopt(mark)
      }
      if let mark = await recorded() { return .adopt(mark) }
      guard DispatchTime.now().uptimeNanoseconds < deadline, !Task.isCancelled else {
        return .ask(claimed: false)
      }
      try? await Task.sleep(nanoseconds: 50_000_000)
    }
  }

  /// Forgets the mark and any failure (a check in flight still ends as it would).
  func forget() {
    state.withLock { state in
      state.mark = nil
      state.lastFailure = nil
    }
  }

  private func isRecent(_ date: Date, now: Date) -> Bool {
    let age = now.timeIntervalSince(date)
    // A check "from the future" (a clock set back) is not trusted.
    return age >= 0 && age < revalidateEvery
  }
}
