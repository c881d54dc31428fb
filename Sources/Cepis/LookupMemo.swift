/// The run-wide memo of a ``LookupStream``: the answer (an address, or "does not exist") of
/// at most `capacity` CEPs, the least recently used forgotten first — and, in the same index,
/// the CEPs asked and not yet answered, so that a row costs one hash lookup whatever its
/// CEP's state.
///
/// A ``CEPTable`` finds an entry (a negative value: the ask a CEP waits for); the order of
/// recency is a doubly linked list through an array, so that an entry costs no allocation of
/// its own and a full memo reuses the entry it evicts. Waiting CEPs do not
/// count against the capacity and are not in the order of recency. `LookupMemoTests` holds it
/// to a plain reference over millions of seeded operations.
struct LookupMemo {
  /// The most CEPs kept (0 keeps nothing).
  let capacity: Int
  /// CEPs forgotten to make room so far.
  private(set) var evictions = 0

  private var entries = CEPTable()
  private var keys: [Int] = []
  private var values: [LookupResult] = []
  private var order = RecencyList()

  /// A memo of at most `capacity` CEPs, with room for `reserving` of them set aside at once
  /// (when the caller knows how many will come: no rehashing and no copying as it fills).
  init(capacity: Int, reserving: Int = 0) {
    // An entry index is an Int32; two billion CEPs is more than exist.
    self.capacity = min(max(0, capacity), Int(Int32.max))
    let reserved = min(self.capacity, max(0, reserving))
    guard reserved > 0 else { return }
    entries.reserveCapacity(reserved)
    keys.reserveCapacity(reserved)
    values.reserveCapacity(reserved)
    order.reserveCapacity(reserved)
  }

  /// How many CEPs the memo holds.
  var count: Int { keys.count }

  /// What the memo knows of one CEP.
  enum State {
    /// Its answer (an address, or "does not exist"); now the most recently used.
    case answered(LookupResult)
    /// It is asked, by the ask `id`, and not answered yet.
    case waiting(ask: Int32)
    /// Nothing.
    case unknown
  }

  /// What the memo knows of `cep`; an answer becomes the most recently used.
  mutating func state(of cep: Int) -> State {
    guard let entry = entries.value(for: cep) else { return .unknown }
    return state(of: entry)
  }

  /// What the memo knows of `cep`, in one hash probe: when it knows nothing, `cep` now waits
  /// for `ask` (an ask no other CEP waits for) and the answer is ``State/unknown``.
  mutating func state(of cep: Int, orWaitFor ask: Int32) -> State {
    guard let entry = entries.valueInserting(-(ask + 1), for: cep) else { return .unknown }
    return state(of: entry)
  }

  private mutating func state(of entry: Int32) -> State {
    guard entry >= 0 else { return .waiting(ask: -(entry + 1)) }
    order.touch(entry)
    return .answered(values[Int(entry)])
  }

  /// Forgets that `cep` is asked (its ask failed: a later row asks again). An answer kept
  /// for it is left alone.
  mutating func stopWaiting(for cep: Int) {
    if let entry = entries.value(for: cep), entry < 0 { entries.removeValue(for: cep) }
  }

  /// The answer kept for `cep` (now the most recently used): `.some(nil)` for a CEP that does
  /// not exist, `nil` when the memo does not hold `cep`.
  mutating func answer(for cep: Int) -> Address?? {
    guard case .answered(let answer) = state(of: cep) else { return nil }
    return .some(answer.address)
  }

  /// Keeps `answer` for `cep` as the most recently used (`cep` no longer waits); returns the
  /// CEP forgotten to make room, if any.
  @discardableResult
  mutating func keep(_ address: Address?, for cep: Int) -> Int? {
    keep(address.map(LookupResult.init(found:)) ?? .notFound, for: cep)
  }

  /// Keeps `answer` (a found address, or not found) for `cep`, as keeping an address
  /// does; the answer is shared, not copied.
  @discardableResult
  mutating func keep(_ answer: LookupResult, for cep: Int) -> Int? {
    let known = entries.value(for: cep)
    guard capacity > 0 else {
      if let known, known < 0 { entries.removeValue(for: cep) }
      return nil
    }
    if let entry = known, entry >= 0 {
      values[Int(entry)] = answer
      order.touch(entry)
      return nil
    }
    if keys.count < capacity {
      let entry = Int32(keys.count)
      keys.append(cep)
      values.append(answer)
      order.appendNewest()
      entries.set(entry, for: cep)
      return nil
    }
    let entry = order.oldest
    let forgotten = keys[Int(entry)]
    entries.removeValue(for: forgotten)
    keys[Int(entry)] = cep
    values[Int(entry)] = answer
    entries.set(entry, for: cep)
    order.touch(entry)
    evictions += 1
    return forgotten
  }

  /// The CEPs held, least recently used first (for tests).
  var cepsOldestFirst: [Int] { order.oldestFirst.map { keys[Int($0)] } }
}
