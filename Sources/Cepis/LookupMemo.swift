/// The run-wide memo of a ``LookupStream``: the answer (an address, or "does not exist") of
/// at most `capacity` CEPs, the least recently used forgotten first.
///
/// A Swift dictionary finds an entry; the order of recency is a doubly linked list through
/// two arrays, so that an entry costs no allocation of its own and a full memo reuses the
/// entry it evicts. `LookupMemoTests` holds it to a plain reference over millions of seeded
/// operations.
struct LookupMemo {
  /// The most CEPs kept (0 keeps nothing).
  let capacity: Int
  /// CEPs forgotten to make room so far.
  private(set) var evictions = 0

  private static let none: Int32 = -1
  private var entries: [Int: Int32] = [:]
  private var keys: [Int] = []
  private var values: [Address?] = []
  private var older: [Int32] = []
  private var newer: [Int32] = []
  private var newest = none
  private var oldest = none

  /// A memo of at most `capacity` CEPs.
  init(capacity: Int) {
    // An entry index is an Int32; two billion CEPs is more than exist.
    self.capacity = min(max(0, capacity), Int(Int32.max))
  }

  /// How many CEPs the memo holds.
  var count: Int { keys.count }

  /// The answer kept for `cep` (now the most recently used): `.some(nil)` for a CEP that does
  /// not exist, `nil` when the memo does not hold `cep`.
  mutating func answer(for cep: Int) -> Address?? {
    guard let entry = entries[cep] else { return nil }
    touch(entry)
    return .some(values[Int(entry)])
  }

  /// Keeps `answer` for `cep` as the most recently used; returns the CEP forgotten to make
  /// room, if any.
  @discardableResult
  mutating func keep(_ answer: Address?, for cep: Int) -> Int? {
    guard capacity > 0 else { return nil }
    if let entry = entries[cep] {
      values[Int(entry)] = answer
      touch(entry)
      return nil
    }
    if keys.count < capacity {
      let entry = Int32(keys.count)
      keys.append(cep)
      values.append(answer)
      older.append(Self.none)
      newer.append(Self.none)
      entries[cep] = entry
      pushNewest(entry)
      return nil
    }
    let entry = oldest
    let forgotten = keys[Int(entry)]
    unlink(entry)
    entries[forgotten] = nil
    keys[Int(entry)] = cep
    values[Int(entry)] = answer
    entries[cep] = entry
    pushNewest(entry)
    evictions += 1
    return forgotten
  }

  /// The CEPs held, least recently used first (for tests).
  var cepsOldestFirst: [Int] {
    var ceps: [Int] = []
    var cursor = oldest
    while cursor != Self.none {
      ceps.append(keys[Int(cursor)])
      cursor = newer[Int(cursor)]
    }
    return ceps
  }

  private mutating func touch(_ entry: Int32) {
    guard entry != newest else { return }
    unlink(entry)
    pushNewest(entry)
  }

  private mutating func unlink(_ entry: Int32) {
    let before = older[Int(entry)]
    let after = newer[Int(entry)]
    if before != Self.none { newer[Int(before)] = after } else { oldest = after }
    if after != Self.none { older[Int(after)] = before } else { newest = before }
    older[Int(entry)] = Self.none
    newer[Int(entry)] = Self.none
  }

  private mutating func pushNewest(_ entry: Int32) {
    older[Int(entry)] = newest
    newer[Int(entry)] = Self.none
    if newest != Self.none { newer[Int(newest)] = entry } else { oldest = entry }
    newest = entry
  }
}
