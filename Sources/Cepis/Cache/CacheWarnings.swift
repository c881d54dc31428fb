import CepisSupport

/// The warnings a cache issued, each once, and the caller's `onWarning` that hears them.
///
/// ``issue(_:)`` calls `onWarning` after its own lock is released, and every part of the
/// cache issues its warnings with none of its locks held: a caller's `onWarning` may call back
/// into the cache.
final class CacheWarnings: Sendable {
  /// The most warnings kept (and delivered): the rest are dropped.
  static let limit = 32

  private let issued = LockedValue(Issued())
  private let onWarning: (@Sendable (String) -> Void)?

  private struct Issued: Sendable {
    var seen: Set<String> = []
    var list: [String] = []
  }

  /// Warnings delivered to `onWarning`, if any.
  init(onWarning: (@Sendable (String) -> Void)?) {
    self.onWarning = onWarning
  }

  /// The warnings issued so far, oldest first.
  var list: [String] { issued.withLock { $0.list } }

  /// Keeps `message` and hands it to `onWarning`, unless it was issued before or the list is
  /// full; never call it with one of the cache's locks held.
  func issue(_ message: String) {
    let isNew = issued.withLock { state -> Bool in
      guard state.list.count < Self.limit, state.seen.insert(message).inserted else {
        return false
      }
      state.list.append(message)
      return true
    }
    if isNew { onWarning?(message) }
  }

  /// Issues that the cache could not do `what` because of `error`, and stepped aside for the
  /// call; nothing for an error its store reported already (a shared cache's outage: one
  /// warning for all of it).
  func stepAside(_ what: String, _ error: any Error) {
    if error is any ReportedCacheError { return }
    issue("the cache could not \(what) (\(error)); the network is asked instead")
  }
}
