/// A map of at most `capacity` integer keys that forgets the least recently used first: the
/// memory tier of ``AddressCache``. (The memo of a ``LookupStream``, `LookupMemo`, is the same
/// idea specialised for the engine's hot path: its links live in its entries.)
///
/// A dictionary finds an entry; recency is a doubly linked list through arrays of indices, so
/// an entry costs no allocation of its own and a full map reuses the slot it evicts.
/// `RecencyMapModelTests` hold it to a plain array-and-dictionary reference over seeded random
/// operations.
struct RecencyMap<Value> {
  /// The most keys kept (0 keeps nothing).
  package let capacity: Int
  private var slots: [Int: Int32] = [:]
  private var keys: [Int] = []
  private var values: [Value] = []
  private var order = RecencyList()

  /// A map of at most `capacity` keys.
  package init(capacity: Int) {
    self.capacity = min(max(0, capacity), Int(Int32.max))
  }

  /// How many keys are held.
  package var count: Int { keys.count }

  /// The value for `key`, now the most recently used.
  mutating func value(for key: Int) -> Value? {
    guard let slot = slots[key] else { return nil }
    order.touch(slot)
    return values[Int(slot)]
  }

  /// The value for `key`, its recency unchanged.
  func peek(_ key: Int) -> Value? {
    slots[key].map { values[Int($0)] }
  }

  /// Sets `value` for `key` as the most recently used; returns the key forgotten to make
  /// room, if any.
  @discardableResult
  package mutating func set(_ value: Value, for key: Int) -> Int? {
    guard capacity > 0 else { return nil }
    if let slot = slots[key] {
      values[Int(slot)] = value
      order.touch(slot)
      return nil
    }
    if keys.count < capacity {
      slots[key] = Int32(keys.count)
      keys.append(key)
      values.append(value)
      order.appendNewest()
      return nil
    }
    let slot = order.oldest
    let forgotten = keys[Int(slot)]
    slots[forgotten] = nil
    keys[Int(slot)] = key
    values[Int(slot)] = value
    slots[key] = slot
    order.touch(slot)
    return forgotten
  }

  /// The keys held, least recently used first.
  var keysOldestFirst: [Int] { order.oldestFirst.map { keys[Int($0)] } }

  /// The values held, least recently used first.
  package var valuesOldestFirst: [Value] {
    keysOldestFirst.compactMap { peek($0) }
  }
}

extension RecencyMap: Sendable where Value: Sendable {}

/// An order of recency over slots `0..<count`: a doubly linked list through an array of index
/// pairs (a slot's two links side by side, read together), so a slot costs no allocation of
/// its own. The list under ``RecencyMap``, which keeps its keys and values in arrays indexed
/// by the same slots. (`LookupMemo` keeps the same links inside each of its entries.)
struct RecencyList {
  static let none: Int32 = -1
  /// A slot's neighbours in the order: the next older and the next newer slot.
  private struct Links {
    var older: Int32
    var newer: Int32
  }

  private var links: [Links] = []
  /// The most recently used slot, or ``none``.
  private(set) var newest = none
  /// The least recently used slot, or ``none``.
  private(set) var oldest = none

  /// Adds the next slot (`count` before the call) as the most recently used.
  mutating func appendNewest() {
    let slot = Int32(links.count)
    links.append(Links(older: Self.none, newer: Self.none))
    pushNewest(slot)
  }

  /// Adds the next slot (`count` before the call), outside the order until
  /// ``insertNewest(_:)``.
  mutating func appendDetached() {
    links.append(Links(older: Self.none, newer: Self.none))
  }

  /// Puts `slot`, outside the order, in it as the most recently used.
  mutating func insertNewest(_ slot: Int32) { pushNewest(slot) }

  /// Takes `slot`, in the order, out of it.
  mutating func remove(_ slot: Int32) { unlink(slot) }

  /// Makes `slot` the most recently used.
  mutating func touch(_ slot: Int32) {
    guard slot != newest else { return }
    unlink(slot)
    pushNewest(slot)
  }

  /// The slots, least recently used first.
  var oldestFirst: [Int32] {
    var slots: [Int32] = []
    var cursor = oldest
    while cursor != Self.none {
      slots.append(cursor)
      cursor = links[Int(cursor)].newer
    }
    return slots
  }

  private mutating func unlink(_ slot: Int32) {
    let own = links[Int(slot)]
    if own.older != Self.none {
      links[Int(own.older)].newer = own.newer
    } else {
      oldest = own.newer
    }
    if own.newer != Self.none {
      links[Int(own.newer)].older = own.older
    } else {
      newest = own.older
    }
    links[Int(slot)] = Links(older: Self.none, newer: Self.none)
  }

  private mutating func pushNewest(_ slot: Int32) {
    links[Int(slot)] = Links(older: newest, newer: Self.none)
    if newest != Self.none { links[Int(newest)].newer = slot } else { oldest = slot }
    newest = slot
  }
}
