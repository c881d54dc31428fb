import CepisHTTP
import CepisSupport

/// An observer that keeps every call's events, for tests of the clients' event path.
package final class EventRecorder: ClientEventObserver {
  /// One thing a call reported.
  package enum Entry: Sendable, Equatable {
    /// The call began.
    case started(CallOperation)
    /// An event.
    case event(ClientEvent)
    /// The call ended: `error` is the thrown error's kind, `nil` on success.
    case ended(CallOperation, error: String?)
  }

  private let log = LockedValue<[(requestID: String, entry: Entry)]>([])

  /// An empty recorder.
  package init() {}

  package func observe<Value>(
    _ call: CallScope, _ body: () async throws -> Value
  ) async throws -> Value {
    append(call, .started(call.operation))
    do {
      let value = try await body()
      append(call, .ended(call.operation, error: nil))
      return value
    } catch {
      append(call, .ended(call.operation, error: call.errorKind(error)))
      throw error
    }
  }

  package func record(_ event: ClientEvent, in call: CallScope) {
    append(call, .event(event))
  }

  /// Everything recorded, in order.
  package var entries: [Entry] { log.withLock { $0.map(\.entry) } }

  /// The request ids of the entries, in order.
  package var requestIDs: [String] { log.withLock { $0.map(\.requestID) } }

  /// The events recorded, in order, with attempts' durations set to 0 (they vary).
  package var events: [ClientEvent] {
    entries.compactMap { entry -> ClientEvent? in
      guard case .event(let event) = entry else { return nil }
      if case .attemptEnded(let endpoint, let attempt, let status, let errorType, _) = event {
        return .attemptEnded(
          endpoint: endpoint, attempt: attempt, status: status, errorType: errorType, seconds: 0)
      }
      if case .retryScheduled(let endpoint, let attempt, _, let reason) = event {
        return .retryScheduled(endpoint: endpoint, attempt: attempt, wait: 0, reason: reason)
      }
      return event
    }
  }

  private func append(_ call: CallScope, _ entry: Entry) {
    log.withLock { $0.append((call.requestID, entry)) }
  }
}
