import CepisSupport
import Foundation

/// A shared cache's view of its server: whether an outage is on, when the server may be tried
/// again, and the warnings that go with it — one when an outage starts (each outage after the
/// first says which it is), one for values of another format.
///
/// Pure bookkeeping with an injected clock, so that its rules are tested without a server.
final class ValkeyOutage: Sendable {
  private let state = LockedValue(State())
  private let prefix: String
  private let now: @Sendable () -> Date
  private let warn: @Sendable (String) -> Void

  private struct State: Sendable {
    /// When the current outage lets the server be tried again; `nil` while there is none.
    var retryAt: Date?
    /// Outages so far.
    var outages = 0
    /// Whether values of another format were warned about.
    var warnedUnreadable = false
  }

  /// Bookkeeping for the cache under `prefix`, warning through `warn` (never with a lock held).
  init(
    prefix: String, now: @escaping @Sendable () -> Date, warn: @escaping @Sendable (String) -> Void
  ) {
    self.prefix = prefix
    self.now = now
    self.warn = warn
  }

  /// Whether an outage is on.
  var isOut: Bool { state.withLock { $0.retryAt != nil } }

  /// Throws ``ValkeyUnavailable`` while an outage has not yet reached its retry time; past it,
  /// lets one operation try the server (and moves the retry time on, so that the operations
  /// meanwhile still fail at once).
  func admit(retryInterval: TimeInterval) throws(ValkeyUnavailable) {
    let now = self.now()
    let admitted = state.withLock { state -> Bool in
      guard let retryAt = state.retryAt else { return true }
      guard now >= retryAt else { return false }
      state.retryAt = now.addingTimeInterval(retryInterval)
      return true
    }
    if !admitted { throw ValkeyUnavailable() }
  }

  /// Ends the outage, if one is on.
  func succeeded() {
    state.withLock { $0.retryAt = nil }
  }

  /// Starts an outage for `error` (unless one is on: a probe that failed), issuing its one
  /// warning; returns the error to throw, which the cache does not warn about again.
  func failed(_ error: any Error, retryInterval: TimeInterval = 1) -> ValkeyUnavailable {
    if error is ValkeyUnavailable { return ValkeyUnavailable() }
    let now = self.now()
    let started = state.withLock { state -> Int? in
      if state.retryAt != nil {
        state.retryAt = now.addingTimeInterval(retryInterval)
        return nil
      }
      state.retryAt = now.addingTimeInterval(retryInterval)
      state.outages += 1
      return state.outages
    }
    if let started {
      let which = started == 1 ? "" : " (outage \(started))"
      warn(
        "the Valkey cache (keys \(prefix)*) stopped answering\(which): \(error); lookups ask "
          + "the network until it is back")
    }
    return ValkeyUnavailable()
  }

  /// Issues, once, that values under the prefix are of a format this Cepis does not read.
  func unreadableValues() {
    let first = state.withLock { state -> Bool in
      defer { state.warnedUnreadable = true }
      return !state.warnedUnreadable
    }
    if first {
      warn(
        "the Valkey cache (keys \(prefix)*) holds values of a format this Cepis does not read "
          + "(another program's, or a newer Cepis's): they are read as misses")
    }
  }
}

/// A shared cache's server is in an outage, already reported: the cache asks the network
/// without another warning.
struct ValkeyUnavailable: ReportedCacheError, CustomStringConvertible {
  var description: String { "the Valkey cache is unavailable" }
}

/// An error a store has already reported through its own warnings: ``AddressCache`` steps
/// aside for the call without a warning of its own.
protocol ReportedCacheError: Error {}

/// Why a Valkey store's operation failed (never with a value or a key's CEP).
enum ValkeyStoreFailure: Error, CustomStringConvertible {
  /// The server did not answer within the operation's deadline.
  case timedOut(TimeInterval)
  /// The server answered what a Cepis cache never writes (a wrong type, an error).
  case unexpectedReply
  /// The client failed.
  case client(String)

  var description: String {
    switch self {
    case .timedOut(let seconds):
      return "no answer within \(Int((seconds * 1_000).rounded())) ms"
    case .unexpectedReply: return "the server answered with an unexpected type"
    case .client(let message): return message
    }
  }
}
