import CepisSupport

/// Whoever listens to a client's events: the command line's log printer, or the
/// `Observability` trait's swift-log, swift-metrics and swift-distributed-tracing adapter.
///
/// A client without an observer creates no ``CallScope`` and records nothing.
package protocol ClientEventObserver: Sendable {
  /// Runs one public call's `body` (a span around it, a timer, its first and last log lines).
  ///
  /// Implementations must run `body` exactly once and rethrow what it throws.
  func observe<Value>(_ call: CallScope, _ body: () async throws -> Value) async throws -> Value
  /// One event of `call`.
  func record(_ event: ClientEvent, in call: CallScope)
  /// Whether anyone would hear a call starting now: when `false` the call runs as if nobody
  /// listened (no scope, no event). Read once per public call.
  var isListening: Bool { get }
}

extension ClientEventObserver {
  /// Always listening.
  package var isListening: Bool { true }
}

/// One public call being observed: what it is, its request id, and what its events said so far.
///
/// The scope is the task-local ``current`` while the call runs, so the HTTP core, the
/// fallbacks, the cache and the bulk engine report to it without being handed anything; a
/// task without a scope (nobody listens) pays one task-local read per attempt.
package final class CallScope: Sendable {
  /// The call the current task works for, if an observer listens.
  @TaskLocal package static var current: CallScope?

  /// The public call.
  package let operation: CallOperation
  /// The id every line of this call carries (a nested call, a chunk of `lookupMany`, keeps
  /// its parent's).
  package let requestID: String
  /// The host the call's requests go to (`server.address`).
  package let serverAddress: String
  /// The call this one runs within (`lookupMany` for its chunks), if any.
  package let parent: CallScope?
  /// Who listens.
  package let observer: any ClientEventObserver
  /// What the observer keeps for the call while it runs (the tracing adapter's span).
  package let attachment = LockedValue<(any Sendable)?>(nil)
  private let tally = LockedValue(CallSummary())

  /// Creates a scope; ``observe(_:server:observer:_:)`` is the usual way in.
  package init(
    operation: CallOperation, serverAddress: String, parent: CallScope?,
    observer: any ClientEventObserver
  ) {
    self.operation = operation
    self.serverAddress = serverAddress
    self.parent = parent
    self.observer = observer
    self.requestID = parent?.requestID ?? Self.newRequestID()
  }

  /// The kind of a thrown error, for logs, metrics and spans (`error.type`), never its
  /// message, which may quote a server's body: a ``KindedError``'s ``KindedError/kind``,
  /// `cancelled`, or `other`.
  package func errorKind(_ error: any Error) -> String {
    switch error {
    case let failure as any KindedError: return failure.kind
    case is CancellationError: return "cancelled"
    default: return "other"
    }
  }

  /// Records `event` for this call and hands it to the observer.
  package func record(_ event: ClientEvent) {
    tally.withLock { $0.add(event) }
    observer.record(event, in: self)
  }

  /// What the call's events said so far: attempts, the last status, the source, the cache.
  package var summary: CallSummary { tally.withLock { $0 } }

  /// Runs `body` as one observed call when `observer` is given and listening, as it is
  /// otherwise.
  package static func observe<Value>(
    _ operation: CallOperation,
    server: String,
    observer: (any ClientEventObserver)?,
    _ body: () async throws -> Value
  ) async throws -> Value {
    guard let observer, observer.isListening else { return try await body() }
    let scope = CallScope(
      operation: operation, serverAddress: server, parent: current, observer: observer)
    return try await $current.withValue(scope) {
      try await observer.observe(scope, body)
    }
  }

  /// Sixteen hex digits, random: unique enough to find one call's lines in a busy log.
  private static func newRequestID() -> String {
    let value = UInt64.random(in: 0...UInt64.max)
    let digits = String(value, radix: 16)
    return String(repeating: "0", count: 16 - digits.count) + digits
  }
}

/// What a call's events said so far.
package struct CallSummary: Sendable, Equatable {
  /// Attempts sent (a bulk run's chunks counted together).
  package var attempts = 0
  /// Retries scheduled.
  package var retries = 0
  /// The last HTTP status received.
  package var lastStatus: Int?
  /// The service that answered, when one did.
  package var source: String?
  /// The cache's answer, when the cache was asked.
  package var cacheResult: CacheResult?

  mutating func add(_ event: ClientEvent) {
    switch event {
    case .attemptStarted: attempts += 1
    case .attemptEnded(_, _, let status, _, _): if let status { lastStatus = status }
    case .retryScheduled: retries += 1
    case .answered(let name): source = name
    case .cache(let result, _): if cacheResult == nil || result == .stale { cacheResult = result }
    default: break
    }
  }
}

extension CallScope {
  /// Records the end of an attempt that threw `error` (a failure's kind, `timeout` for the
  /// attempt's deadline, `cancelled`), `since` the monotonic time it was sent.
  package func recordAttemptEnded(
    _ endpoint: String, _ attempt: Int, error: any Error, since sentAt: Double
  ) {
    let kind: String
    switch error {
    case let failure as HTTPFailure: kind = ClientEvent.kind(of: failure)
    case is AttemptTimedOut: kind = "timeout"
    case is CancellationError: kind = "cancelled"
    default: kind = "other"
    }
    record(
      .attemptEnded(
        endpoint: endpoint, attempt: attempt, status: nil, errorType: kind,
        seconds: monotonicSeconds() - sentAt))
  }
}

/// An error a public call throws whose ``kind`` names it in logs, metrics and spans: the
/// clients' own error types.
package protocol KindedError: Error {
  /// A stable name for the error's case (`server_error`, `invalid_cep`, …), never a message.
  var kind: String { get }
}
