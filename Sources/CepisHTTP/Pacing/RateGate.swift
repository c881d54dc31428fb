import CepisSupport
import Foundation

/// The senders of one bulk run, held to what a rate-limited API allows (see ``SendWindow``
/// for the rules): every attempt of the run's requests is admitted here first, and reports
/// here how it ended.
///
/// Made by each run; ``HTTPExecutor/perform(_:gate:isFinal:)`` uses it. A 429 under a gate is
/// not an attempt spent and costs no retry budget: the request waits and is asked again,
/// until only 429s have come for the window's ``SendWindow/patience``.
package final class RateGate: Sendable {
  /// A request admitted: what it must report back, once.
  package struct Ticket: Sendable {
    let sentAt: Double
  }

  /// What the run has met so far.
  package struct Statistics: Sendable, Hashable {
    /// 429s received.
    package var refusals = 0
    /// Pauses begun.
    package var pauses = 0
    /// Seconds paused in all.
    package var pausedSeconds = 0.0
    /// Seconds left of the pause under way (0 when none is).
    package var pauseLeft = 0.0
    /// The pace set (requests a second), `nil` when no 429 has come.
    package var pace: Double?

    /// Figures of a run that met no 429.
    package init() {}

    /// The figures given.
    package init(
      refusals: Int, pauses: Int, pausedSeconds: Double, pauseLeft: Double, pace: Double?
    ) {
      self.refusals = refusals
      self.pauses = pauses
      self.pausedSeconds = pausedSeconds
      self.pauseLeft = pauseLeft
      self.pace = pace
    }
  }

  private struct State: Sendable {
    var window: SendWindow
    var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
    var nextWaiter = 0
    var lastRefusal: HTTPResponse?
    var lastRetryAfter: TimeInterval?
  }

  private let state: LockedValue<State>
  private let now: @Sendable () -> Double
  private let sleep: @Sendable (TimeInterval) async throws -> Void

  /// A gate for at most `maxInFlight` requests at once that gives up after `patience`
  /// seconds of nothing but 429s; `now` and `sleep` are injectable for tests.
  package init(
    maxInFlight: Int, patience: TimeInterval,
    now: @escaping @Sendable () -> Double = { monotonicSeconds() },
    sleep: @escaping @Sendable (TimeInterval) async throws -> Void = { try await sleepSeconds($0) }
  ) {
    self.now = now
    self.sleep = sleep
    self.state = LockedValue(
      State(window: SendWindow(maxWindow: maxInFlight, patience: patience, now: now())))
  }

  /// What the run has met so far.
  package var statistics: Statistics {
    let at = now()
    return state.withLock { state in
      let window = state.window
      return Statistics(
        refusals: window.refusals, pauses: window.pauses, pausedSeconds: window.pausedSeconds,
        pauseLeft: max(0, window.pauseUntil - at), pace: window.pace)
    }
  }

  /// Waits until a request may start, and admits it.
  ///
  /// - Parameter deadline: the call's deadline (a ``monotonicSeconds()`` instant), if any: a
  ///   wait that would end after it fails at once.
  /// - Throws: ``HTTPFailure/rateLimited(retryAfter:response:)`` (the last 429) when the
  ///   gate's patience or the deadline runs out while only 429s come; `CancellationError`.
  package func admit(deadline: TimeInterval?) async throws -> Ticket {
    while true {
      try Task.checkCancellation()
      let at = now()
      switch state.withLock({ $0.window.admit(now: at) }) {
      case .send(let sentAt):
        return Ticket(sentAt: sentAt)
      case .expired:
        throw refusal()
      case .wait(let until):
        if let deadline, until > deadline { throw refusal() }
        try await sleep(until - at)
      case .waitForSlot:
        try await waitForSlot()
      }
    }
  }

  /// The request of `ticket` was refused with a 429 (`response`, asking for `retryAfter`).
  package func refused(_ ticket: Ticket, retryAfter: TimeInterval?, response: HTTPResponse) {
    let at = now()
    wake {
      $0.window.refused(sentAt: ticket.sentAt, retryAfter: retryAfter, now: at)
      $0.lastRefusal = response
      $0.lastRetryAfter = retryAfter
    }
  }

  /// The request of `ticket` was answered (any status but 429).
  package func answered(_ ticket: Ticket) {
    let at = now()
    wake { $0.window.answered(sentAt: ticket.sentAt, now: at) }
  }

  /// The request of `ticket` ended without an answer.
  package func released(_ ticket: Ticket) {
    let at = now()
    wake { $0.window.released(now: at) }
  }

  /// Changes the state, then wakes every sender waiting for a slot (each asks again).
  private func wake(_ change: (inout State) -> Void) {
    let waiters = state.withLock { state in
      change(&state)
      defer { state.waiters.removeAll() }
      return Array(state.waiters.values)
    }
    for waiter in waiters { waiter.resume() }
  }

  /// Returns once a slot may be free, or at once when the task is cancelled.
  private func waitForSlot() async throws {
    let id = state.withLock { state in
      defer { state.nextWaiter += 1 }
      return state.nextWaiter
    }
    await withTaskCancellationHandler {
      await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        let now = state.withLock { state in
          if state.window.hasFreeSlot || Task.isCancelled { return true }
          state.waiters[id] = continuation
          return false
        }
        if now { continuation.resume() }
      }
    } onCancel: {
      state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
    }
    try Task.checkCancellation()
  }

  /// The failure of a request that cannot wait any longer: the last 429.
  private func refusal() -> HTTPFailure {
    let (response, retryAfter) = state.withLock { ($0.lastRefusal, $0.lastRetryAfter) }
    return .rateLimited(
      retryAfter: retryAfter,
      response: response ?? HTTPResponse(status: 429, headers: [:], body: Data()))
  }
}
