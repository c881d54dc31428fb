import CepisSupport

/// A file cache's memory front: the entries ``Client/lookup(_:)`` read or stored last, kept in
/// this process's memory so that a repeated lookup does not wait for the file (see
/// ``AddressCache/frontCapacity``).
///
/// An entry here is one of the file's, of its edition: the same DNE data whichever copy
/// answers, so it needs no check against the file; it is served only while its edition is the
/// live one, like the file's. A memory cache has no front: it is its own.
final class MemoryFront: Sendable {
  private let map: LockedValue<RecencyMap<CacheEntry>>
  private let capacity: Int

  /// A front of at most `capacity` CEPs, the least recently used forgotten first.
  init(capacity: Int) {
    self.capacity = capacity
    map = LockedValue(RecencyMap(capacity: capacity))
  }

  /// The entry of `edition` for `cep`: the front's when it holds one (`noteUsed` then tells
  /// the store of its use, without waiting for the file), else what `read` finds, then kept
  /// in front.
  func freshEntry(
    for cep: Int, edition: String, noteUsed: (Int) -> Void,
    read: () async -> CacheEntry?
  ) async -> CacheEntry? {
    if let entry = map.withLock({ $0.value(for: cep) }), entry.edition == edition {
      noteUsed(cep)
      return entry
    }
    guard let entry = await read() else { return nil }
    keep([entry])
    return entry
  }

  /// Keeps `entries`, each unless the front holds one that it does not replace
  /// (``CacheEntry/replaces(_:)``: a batch entry never replaces a single one of its edition).
  func keep(_ entries: [CacheEntry]) {
    map.withLock { map in
      for entry in entries {
        if let held = map.peek(entry.cep), !entry.replaces(held) { continue }
        map.set(entry, for: entry.cep)
      }
    }
  }

  /// Forgets every entry.
  func forgetAll() {
    map.withLock { $0 = RecencyMap(capacity: capacity) }
  }
}
