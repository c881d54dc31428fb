/// The run-wide memo of a ``LookupStream``: the answer (an address, or "does not exist") of
/// at most `capacity` CEPs, the least recently used forgotten first.
///
/// A ``RecencyMap`` of answers that counts what it forgets. `LookupMemoTests` holds it to a
/// plain reference over millions of seeded operations (and `RecencyMapModelTests` the map).
struct LookupMemo {
  private var map: RecencyMap<Address?>
  /// CEPs forgotten to make room so far.
  private(set) var evictions = 0

  /// A memo of at most `capacity` CEPs (0 keeps nothing).
  init(capacity: Int) { map = RecencyMap(capacity: capacity) }

  /// The most CEPs kept.
  var capacity: Int { map.capacity }

  /// How many CEPs the memo holds.
  var count: Int { map.count }

  /// The answer kept for `cep` (now the most recently used): `.some(nil)` for a CEP that does
  /// not exist, `nil` when the memo does not hold `cep`.
  mutating func answer(for cep: Int) -> Address?? { map.value(for: cep) }

  /// Keeps `answer` for `cep` as the most recently used; returns the CEP forgotten to make
  /// room, if any.
  @discardableResult
  mutating func keep(_ answer: Address?, for cep: Int) -> Int? {
    let forgotten = map.set(answer, for: cep)
    if forgotten != nil { evictions += 1 }
    return forgotten
  }

  /// The CEPs held, least recently used first (for tests).
  var cepsOldestFirst: [Int] { map.keysOldestFirst }
}
