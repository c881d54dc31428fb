/// A map of at most `capacity` integer keys that forgets the least recently used first: the
/// memory tier of ``AddressCache``. (The memo of a ``LookupStream``, `LookupMemo`, is the same
/// list specialised for the engine's hot path.)
///
/// A dictionary finds an entry; recency is a doubly linked list through arrays of indices, so
/// an entry costs no allocation of its own and a full map reuses the slot it evicts.
/// `RecencyMapModelTests` hold it to a plain array-and-dictionary reference over seeded random
/// operations.
package struct RecencyMap<Value> {
  /// The most keys kept (0 keeps nothing).
  package let capacity: Int
  private static var none: Int32 { -1 }
  private var slots: [Int: Int32] = [:]
  private var keys: [Int] = []
  private var values: [Value] = []
  private var older: [Int32] = []
  private var newer: [Int32] = []
  private var newest: Int32 = -1
  private var oldest: Int32 = -1

  /// A map of at most `capacity` keys.
  package init(capacity: Int) {
    self.capacity = min(max(0, capacity), Int(Int32.max))
  }

  /// How many keys are held.
  package var count: Int { keys.count }

  /// The value for `key`, now the most recently used.
  package mutating func value(for key: Int) -> Value? {
    guard let slot = slots[key] else { return nil }
    touch(slot)
    return values[Int(slot)]
  }

  /// The value for `key`, its recency unchanged.
  package func peek(_ key: Int) -> Value? {
    slots[key].map { values[Int($0)] }
  }

  /// Sets `value` for `key` as the most recently used; returns the key forgotten to make
  /// room, if any.
  @discardableResult
  package mutating func set(_ value: Value, for key: Int) -> Int? {
    guard capacity > 0 else { return nil }
    if let slot = slots[key] {
      values[Int(slot)] = value
      touch(slot)
      return nil
    }
    if keys.count < capacity {
      let slot = Int32(keys.count)
      keys.append(key)
      values.append(value)
      older.append(Self.none)
      newer.append(Self.none)
      slots[key] = slot
      pushNewest(slot)
      return nil
    }
    let slot = oldest
    let forgotten = keys[Int(slot)]
    unlink(slot)
    slots[forgotten] = nil
    keys[Int(slot)] = key
    values[Int(slot)] = value
    slots[key] = slot
    pushNewest(slot)
    return forgotten
  }

  /// The keys held, least recently used first.
  package var keysOldestFirst: [Int] {
    var result: [Int] = []
    var cursor = oldest
    while cursor != Self.none {
      result.append(keys[Int(cursor)])
      cursor = newer[Int(cursor)]
    }
    return result
  }

  /// The values held, least recently used first.
  package var valuesOldestFirst: [Value] {
    keysOldestFirst.compactMap { peek($0) }
  }

  private mutating func touch(_ slot: Int32) {
    guard slot != newest else { return }
    unlink(slot)
    pushNewest(slot)
  }

  private mutating func unlink(_ slot: Int32) {
    let before = older[Int(slot)]
    let after = newer[Int(slot)]
    if before != Self.none { newer[Int(before)] = after } else { oldest = after }
    if after != Self.none { older[Int(after)] = before } else { newest = before }
    older[Int(slot)] = Self.none
    newer[Int(slot)] = Self.none
  }

  private mutating func pushNewest(_ slot: Int32) {
    older[Int(slot)] = newest
    newer[Int(slot)] = Self.none
    if newest != Self.none { newer[Int(newest)] = slot } else { oldest = slot }
    newest = slot
  }
}

extension RecencyMap: Sendable where Value: Sendable {}
