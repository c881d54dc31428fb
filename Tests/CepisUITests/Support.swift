import BrazilianDocuments
import CPFHub
import Cepis
import CepisMock
import CepisSupport
import CepisTestSupport
import CepisUI
import Foundation
import Testing

// MARK: - CEP

/// A fast CEP client for tests over the transport `kind`: tiny backoffs, short deadlines.
func makeCEPClient(
  _ baseURL: URL, _ kind: Transport.Kind = .urlSession, maxAttempts: Int = 2,
  timeout: TimeInterval = 5
) -> Client {
  guard let transport = Transport.make(kind) else {
    preconditionFailure("\(kind) is listed as available but cannot be made")
  }
  return Client(
    baseURL: baseURL, timeout: timeout, maxAttempts: maxAttempts, backoffBase: 0.01,
    backoffMax: 0.02, totalTimeout: 10, transport: transport, retryBudget: nil)
}

/// A base URL on 127.0.0.1 where nothing listens: port 1 (tcpmux). A stopped mock's port
/// would do only until a server that another test starts in parallel is given it again.
func closedPortURL() async throws -> URL {
  try #require(URL(string: "http://127.0.0.1:1"))
}

/// An 8-digit CEP the mock does not know, inside São Paulo's range (so `uf` is known offline).
func unknownCEP(_ server: MockServer) -> String {
  // Synthetic CEPs ending in 9 do not exist.
  var value = 19_999_999
  while server.dataset.address(for: String(value)) != nil { value -= 10 }
  return String(value)
}

/// The requests the server logged for single CEP lookups (`GET /{cep}`), oldest first.
func cepRequests(_ server: MockServer) -> [MockRequestRecord] {
  server.requests.filter { $0.route == .cep }
}

/// Waits, yielding to other tasks, until `condition` holds; records an issue and returns
/// `false` after `timeout` seconds.
@discardableResult
func eventually(
  isolation: isolated (any Actor)? = #isolation,
  timeout: TimeInterval = 10,
  sourceLocation: SourceLocation = #_sourceLocation,
  _ condition: () -> Bool
) async -> Bool {
  let deadline = Date().addingTimeInterval(timeout)
  while !condition() {
    guard Date() < deadline else {
      Issue.record("condition never held", sourceLocation: sourceLocation)
      return false
    }
    try? await Task.sleep(nanoseconds: 2_000_000)
  }
  return true
}

// MARK: - A clock the test moves by hand

/// A `Clock` whose time moves only when the test calls ``advance(by:)``: a debounce of any
/// length is waited out instantly, and "changed within the debounce" is exact.

@available(macOS 13, iOS 16, tvOS 16, watchOS 9, *)
final class ManualClock: Clock, Sendable {
  /// A point on the manual timeline.
  struct Instant: InstantProtocol {
    var offset: Duration
    func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
    func duration(to other: Instant) -> Duration { other.offset - offset }
    static func < (left: Instant, right: Instant) -> Bool { left.offset < right.offset }
  }

  private struct Sleeper: Sendable {
    var deadline: Instant
    var continuation: CheckedContinuation<Void, any Error>
  }

  private struct State: Sendable {
    var current = Instant(offset: .zero)
    var sleepers: [Int: Sleeper] = [:]
    var cancelled: Set<Int> = []
    var nextID = 0
  }

  private let state = LockedValue(State())

  var now: Instant { state.withLock { $0.current } }
  var minimumResolution: Duration { .zero }

  var sleeperCount: Int { state.withLock { $0.sleepers.count } }

  func sleep(until deadline: Instant, tolerance: Duration?) async throws {
    let id = state.withLock { state in
      state.nextID += 1
      return state.nextID
    }
    try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation {
        (continuation: CheckedContinuation<Void, any Error>) in
        let outcome: Result<Void, any Error>? = state.withLock { state in
          if state.cancelled.remove(id) != nil { return .failure(CancellationError()) }
          if deadline <= state.current { return .success(()) }
          state.sleepers[id] = Sleeper(deadline: deadline, continuation: continuation)
          return nil
        }
        if let outcome { continuation.resume(with: outcome) }
      }
    } onCancel: {
      let sleeper: Sleeper? = state.withLock { state in
        guard let sleeper = state.sleepers.removeValue(forKey: id) else {
          state.cancelled.insert(id)
          return nil
        }
        return sleeper
      }
      sleeper?.continuation.resume(throwing: CancellationError())
    }
  }

  func advance(by duration: Duration) {
    let due: [Sleeper] = state.withLock { state in
      state.current = state.current.advanced(by: duration)
      let ready = state.sleepers.filter { $0.value.deadline <= state.current }
      for id in ready.keys { state.sleepers.removeValue(forKey: id) }
      return Array(ready.values)
    }
    for sleeper in due { sleeper.continuation.resume() }
  }
}

// MARK: - CPF

/// A fast CPF client for tests over the transport named `transport`: tiny backoffs, short
/// deadlines, no reading of the real environment.
func makeClient(
  _ server: MockServer?,
  _ transport: Transport.Kind,
  apiKey: String? = testKey,
  baseURL: URL? = nil,
  timeout: TimeInterval = 2,
  maxAttempts: Int = 3,
  totalTimeout: TimeInterval? = 5
) -> CPFClient {
  guard let made = Transport.make(transport) else {
    preconditionFailure("\(transport) is listed as available but cannot be made")
  }
  return CPFClient(
    apiKey: apiKey,
    baseURL: baseURL ?? server?.baseURL ?? URL(string: "http://127.0.0.1:9")!,
    pathPrefix: "/cpf", timeout: timeout, maxAttempts: maxAttempts, backoffBase: 0.01,
    backoffMax: 0.05, totalTimeout: totalTimeout, userAgent: nil, transport: made,
    retryBudget: .standard, environment: [:])
}

/// The kind of the failure in `state` (`"server_error"`, `"network_error"`…), or `nil` when
/// it is not `.failed`.
@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
func failureKind(_ state: AddressFormModel.State) -> String? {
  guard case .failed(let error) = state else { return nil }
  return error.kind
}

/// A boolean that observation callbacks set from any thread.
final class Flag: Sendable {
  private let flag = LockedValue(false)
  var value: Bool { flag.withLock { $0 } }
  func set() { flag.withLock { $0 = true } }
}
