import CepisSupport
import Foundation

/// What a ``MockServer`` has been told to do and what it has seen: the scripted and
/// persistent faults, the chaos sequence, the rate limits, the `/health` flags, the request
/// log and the counters read by ``MockServer/requests``, ``MockServer/faultCounts``,
/// ``MockServer/requestCount``, ``MockServer/peakConcurrentRequests(on:)`` and the rate
/// limits' counts (``MockServer/rateLimitedCount(on:)`` and its siblings).
///
/// Everything sits under one lock, so that admitting a request (logging it, counting it and
/// picking its faults) takes that lock once.
final class RequestLedger: Sendable {
  /// The ledger's mutable state (always accessed under ``RequestLedger/state``'s lock).
  struct State {
    var scripts: [MockRoute: [MockFault]] = [:]
    var modes: [MockRoute: [MockFault]] = [:]
    var degraded: Bool
    /// The DNE edition `/health` names.
    var edition: String
    var log: [MockRequestRecord] = []
    /// How many records were ever removed from the front of `log` (trimmed or cleared), so
    /// that `logDropped + index` names one record for good.
    var logDropped = 0
    var faultCounts: [String: Int] = [:]
    var requestCount = 0
    var chaosIndex = 0
    /// Requests of each route being answered now (from their logging until their answer starts
    /// to be written, delays included), and the most at once since the start or the last reset.
    var answering: [MockRoute: Int] = [:]
    var peakAnswering: [MockRoute: Int] = [:]
    /// Each limited route's limit and its buckets and window.
    var limiters: [MockRoute: RateLimiter]
    /// Per route, the requests let through and refused since the start or the last reset.
    var limitCounts: [MockRoute: RateLimitCounts] = [:]
  }

  /// What a route's rate limit did (every routed request counts in exactly one).
  struct RateLimitCounts {
    var accepted = 0
    var rateLimited = 0
    var blocked = 0
  }

  /// What admitting a request decided.
  struct Admission {
    /// The faults to apply, in order (modes, chaos, script), only those that apply.
    var faults: [MockFault]
    /// Whether `/health` is degraded.
    var degraded: Bool
    /// The DNE edition `/health` names.
    var edition: String
    /// The request's position in the log, counting dropped records (see ``markClientClosed(_:)``).
    var logIndex: Int
    /// The route's rate limit refused the request: its answer, in place of the route's (no
    /// faults then).
    var refusal: RateRefusal? = nil
  }

  let state: LockedValue<State>
  private let configuredDegraded: Bool
  private let configuredEdition: String
  private let chaos: MockChaos?
  private let maxLogEntries: Int
  private let configuredRateLimits: [MockRoute: MockRateLimit]
  /// The rate limits' clock: monotonic seconds.
  let clock: @Sendable () -> Double

  /// Creates a ledger; `clock` (monotonic seconds) drives the rate limits.
  init(
    configuration: MockServer.Configuration,
    clock: @escaping @Sendable () -> Double = monotonicSeconds
  ) {
    configuredDegraded = configuration.degraded
    configuredEdition = configuration.edition
    chaos = configuration.chaos
    maxLogEntries = configuration.maxLogEntries
    configuredRateLimits = configuration.rateLimits.filter { !$0.value.isEmpty }
    self.clock = clock
    state = LockedValue(
      State(
        degraded: configuration.degraded, edition: configuration.edition,
        limiters: configuredRateLimits.mapValues(RateLimiter.init)))
  }

  // MARK: Scripting

  /// Queues faults for a route (see ``MockServer/script(_:_:)``).
  func script(_ route: MockRoute, _ faults: [MockFault]) {
    state.withLock { $0.scripts[route, default: []].append(contentsOf: faults) }
  }

  /// Sets a route's persistent faults (see ``MockServer/setMode(_:_:)``).
  func setMode(_ route: MockRoute, _ faults: [MockFault]) {
    state.withLock { $0.modes[route] = faults }
  }

  /// Makes `/health` degraded or healthy.
  func setDegraded(_ degraded: Bool) {
    state.withLock { $0.degraded = degraded }
  }

  /// Makes `/health` name another DNE edition.
  func setEdition(_ edition: String) {
    state.withLock { $0.edition = edition }
  }

  // MARK: Reading

  /// The records kept, in arrival order.
  var log: [MockRequestRecord] { state.withLock { $0.log } }

  /// The faults injected so far, by ``MockFault/name``.
  var faultCounts: [String: Int] { state.withLock { $0.faultCounts } }

  /// How many requests were received.
  var requestCount: Int { state.withLock { $0.requestCount } }

  /// The most requests on `route` answered at once since the start or the last ``reset()``.
  func peakConcurrentRequests(on route: MockRoute) -> Int {
    state.withLock { $0.peakAnswering[route] ?? 0 }
  }

  // MARK: Clearing

  /// Empties the log.
  func clearLog() {
    state.withLock { state in
      state.logDropped += state.log.count
      state.log.removeAll()
    }
  }

  /// Clears scripts, modes, the log and the counters, restarts the chaos sequence and restores
  /// the configured degraded flag, edition and rate limits (their buckets full again).
  func reset() {
    let limiters = configuredRateLimits.mapValues(RateLimiter.init)
    state.withLock { state in
      state.scripts.removeAll()
      state.modes.removeAll()
      state.logDropped += state.log.count
      state.log.removeAll()
      state.faultCounts.removeAll()
      state.requestCount = 0
      state.chaosIndex = 0
      state.peakAnswering = state.answering.filter { $0.value > 0 }
      state.degraded = configuredDegraded
      state.edition = configuredEdition
      state.limiters = limiters
      state.limitCounts.removeAll()
    }
  }

  // MARK: Answering

  /// Logs and counts a request, puts it to the route's rate limit, and picks the faults of a
  /// request the limit lets through: modes, then chaos, then the scripted fault, so the most
  /// explicit one is applied last. A routed request counts as being answered until
  /// ``answered(_:)``.
  func admit(_ request: MockHTTPRequest, route: MockRoute?, arrival: Date) -> Admission {
    let chaos = self.chaos
    let maxLog = maxLogEntries
    return state.withLock { state -> Admission in
      state.requestCount += 1
      let logIndex = state.logDropped + state.log.count
      state.log.append(
        MockRequestRecord(
          method: request.method, path: request.path, query: request.query,
          headers: request.headers, arrival: arrival, route: route))
      if state.log.count > maxLog {
        let dropped = min(state.log.count, max(state.log.count - maxLog, maxLog / 2))
        state.log.removeFirst(dropped)
        state.logDropped += dropped
      }
      guard let route else {
        return Admission(
          faults: [], degraded: state.degraded, edition: state.edition, logIndex: logIndex)
      }
      let answering = state.answering[route, default: 0] + 1
      state.answering[route] = answering
      state.peakAnswering[route] = max(state.peakAnswering[route] ?? 0, answering)
      if let refusal = Self.refusal(&state, route: route, now: clock, wallClock: arrival) {
        return Admission(
          faults: [], degraded: state.degraded, edition: state.edition, logIndex: logIndex,
          refusal: refusal)
      }
      var faults = state.modes[route] ?? []
      if let chaos, !route.isFallbackProvider {
        let index = state.chaosIndex
        state.chaosIndex += 1
        if let fault = chaos.fault(forRequestIndex: index) { faults.append(fault) }
      }
      if var queue = state.scripts[route], !queue.isEmpty {
        faults.append(queue.removeFirst())
        state.scripts[route] = queue
      }
      faults.removeAll { !$0.applies(to: route) }
      for fault in faults { state.faultCounts[fault.name, default: 0] += 1 }
      return Admission(
        faults: faults, degraded: state.degraded, edition: state.edition, logIndex: logIndex)
    }
  }

  /// A request admitted on `route` stops counting as being answered: its answer starts to be
  /// written.
  func answered(_ route: MockRoute) {
    state.withLock { $0.answering[route, default: 1] -= 1 }
  }

  /// Marks the record at `logIndex` (see ``Admission/logIndex``) as cancelled by the client,
  /// if it is still kept.
  func markClientClosed(_ logIndex: Int) {
    state.withLock { state in
      let position = logIndex - state.logDropped
      if state.log.indices.contains(position) { state.log[position].clientClosed = true }
    }
  }
}
