/// The run-wide memo of a ``LookupStream``: the answer (an address, or "does not exist") of
/// at most `capacity` CEPs, the least recently used forgotten first — and, in the same index,
/// the CEPs asked and not yet answered, so that a row costs one hash lookup whatever its
/// CEP's state.
///
/// A ``CEPTable`` maps each CEP held to its *entry*: the index of its key, its answer (or the
/// ask it waits for) and its links in the order of recency, all kept in arrays, so that an
/// entry costs no allocation of its own and a forgotten entry is reused. A CEP takes its entry
/// when it is first asked (in the probe that found it unknown), and keeps it when its answer
/// comes: answering an ask (``keep(_:entry:)``) touches the table only to forget another CEP
/// when the memo is full. On a run of a million distinct CEPs, each costs two probes that miss
/// the processor's caches — its own, and the one that forgets it — not four.
///
/// Waiting CEPs do not count against the capacity and are not in the order of recency.
/// `LookupMemoTests` hold it to a plain reference over millions of seeded operations.
struct LookupMemo {
  /// The most CEPs kept (0 keeps nothing).
  let capacity: Int
  /// CEPs forgotten to make room so far.
  private(set) var evictions = 0
  /// How many CEPs the memo holds (answered).
  private(set) var count = 0

  private var entries = CEPTable()
  /// Per entry: its CEP.
  private var keys: [Int] = []
  /// Per entry: its answer (`.notFound` while it waits, or is free).
  private var values: [LookupResult] = []
  /// Per entry: the ask it waits for, or `answered` (or free).
  private var asks: [Int32] = []
  private var order = RecencyList()
  /// CEPs answered so far (wrapping; an answer replaced is not counted), and per entry the
  /// count when its answer was kept or last re-packed: an answer's *age*, for
  /// ``state(of:)``'s re-packing.
  private var kept: UInt32 = 0
  private var keptAt: [UInt32] = []
  /// Entries no CEP holds.
  private var free: [Int32] = []

  private static let answered: Int32 = -1

  /// A memo of at most `capacity` CEPs.
  init(capacity: Int) {
    // An entry index is an Int32; two billion CEPs is more than exist.
    self.capacity = min(max(0, capacity), Int(Int32.max) / 2)
  }

  /// What the memo knows of one CEP.
  enum State {
    /// Its answer (an address, or "does not exist"); now the most recently used.
    case answered(LookupResult)
    /// It is asked, by the ask `id`, and not answered yet.
    case waiting(ask: Int32)
    /// Nothing; with ``state(of:orWaitFor:)``, the CEP now waits in `entry`.
    case unknown(entry: Int32)
  }

  /// What the memo knows of `cep`; an answer becomes the most recently used.
  mutating func state(of cep: Int) -> State {
    guard let entry = entries.value(for: cep) else { return .unknown(entry: -1) }
    return state(of: entry)
  }

  /// What the memo knows of `cep`, in one hash probe: when it knows nothing, `cep` now waits
  /// for `ask` (an ask no other CEP waits for), in the entry the answer names; answer it with
  /// ``keep(_:entry:)`` or give it up with ``stopWaiting(entry:)``.
  mutating func state(of cep: Int, orWaitFor ask: Int32) -> State {
    precondition(ask >= 0, "an ask is a slot number")
    let vacant = free.last ?? Int32(keys.count)
    if let entry = entries.valueInserting(vacant, for: cep) { return state(of: entry) }
    if free.isEmpty {
      keys.append(cep)
      values.append(.notFound)
      asks.append(ask)
      keptAt.append(0)
      order.appendDetached()
    } else {
      // Array's own `removeLast`, not the generic `popLast`.
      free.removeLast()
      keys[Int(vacant)] = cep
      asks[Int(vacant)] = ask
    }
    return .unknown(entry: vacant)
  }

  /// An answered entry's state (now the most recently used). An address of a batch answer
  /// holds its whole chunk (see `PackedFields`): one kept while `capacity` other CEPs were
  /// answered is re-packed on its own when it is used, so that the chunks the memo holds are
  /// those of its last 2 × `capacity` CEPs answered at most, however the rows repeat. (An
  /// entry not used while `capacity` CEPs were answered is forgotten: each is more recent.)
  private mutating func state(of entry: Int32) -> State {
    let index = Int(entry)
    let ask = asks[index]
    guard ask == Self.answered else { return .waiting(ask: ask) }
    order.touch(entry)
    if kept &- keptAt[index] > UInt32(truncatingIfNeeded: capacity) {
      keptAt[index] = kept
      if case .found(let address) = values[index], let alone = address.repackedAlone {
        values[index] = LookupResult(found: alone)
      }
    }
    return .answered(values[index])
  }

  /// The ask `cep` waits for, if it waits (the memo's order is left alone).
  func waitingAsk(for cep: Int) -> Int32? {
    guard let entry = entries.value(for: cep) else { return nil }
    let ask = asks[Int(entry)]
    return ask == Self.answered ? nil : ask
  }

  /// Forgets that `cep` is asked (its ask failed: a later row asks again). An answer kept
  /// for it is left alone.
  mutating func stopWaiting(for cep: Int) {
    guard let entry = entries.value(for: cep), asks[Int(entry)] != Self.answered else { return }
    stopWaiting(entry: entry)
  }

  /// Gives up the ask of the waiting `entry` (see ``stopWaiting(for:)``).
  mutating func stopWaiting(entry: Int32) {
    precondition(asks[Int(entry)] != Self.answered, "the entry does not wait")
    release(entry)
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
    switch state(of: cep, orWaitFor: 0) {
    case .answered:
      // `state` made it the most recently used.
      let entry = entries.value(for: cep)!
      values[Int(entry)] = answer
      keptAt[Int(entry)] = kept
      return nil
    case .waiting:
      return keep(answer, entry: entries.value(for: cep)!)
    case .unknown(let entry):
      return keep(answer, entry: entry)
    }
  }

  /// Keeps `answer` for the CEP waiting in `entry` (see ``state(of:orWaitFor:)``), as the
  /// most recently used; returns the CEP forgotten to make room, if any. No probe of the
  /// table but the one that forgets.
  @discardableResult
  mutating func keep(_ answer: LookupResult, entry: Int32) -> Int? {
    let index = Int(entry)
    precondition(asks[index] != Self.answered, "the entry does not wait")
    guard capacity > 0 else {
      release(entry)
      return nil
    }
    var forgotten: Int?
    if count == capacity {
      let oldest = order.oldest
      forgotten = keys[Int(oldest)]
      order.remove(oldest)
      count -= 1
      release(oldest)
      evictions += 1
    }
    asks[index] = Self.answered
    values[index] = answer
    kept &+= 1
    keptAt[index] = kept
    order.insertNewest(entry)
    count += 1
    return forgotten
  }

  /// Takes `entry`'s CEP out of the table and frees the entry (out of the order already).
  private mutating func release(_ entry: Int32) {
    let index = Int(entry)
    entries.removeValue(for: keys[index])
    values[index] = .notFound
    asks[index] = Self.answered
    free.append(entry)
  }

  /// The CEPs held and their answers, least recently used first (for tests).
  var heldAnswers: [(cep: Int, answer: LookupResult)] {
    order.oldestFirst.map { (keys[Int($0)], values[Int($0)]) }
  }

  /// The CEPs held, least recently used first (for tests).
  var cepsOldestFirst: [Int] { heldAnswers.map(\.cep) }
}
