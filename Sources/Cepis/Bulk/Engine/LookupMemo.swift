/// The run-wide memo of a ``LookupStream``: the answer (an address, or "does not exist") of
/// at most `capacity` CEPs, the least recently used forgotten first — and, in the same index,
/// the CEPs asked and not yet answered, so that a row costs one hash lookup whatever its
/// CEP's state.
///
/// A ``CEPTable`` maps each CEP held to its *entry*: one record (32 bytes) holding its key,
/// its answer (or the ask it waits for), its age and its links in the order of recency, so
/// that an entry costs no allocation of its own, a forgotten entry is reused, and forgetting
/// the oldest CEP reads one record (and its neighbour's), not one line of memory in each of
/// six arrays. A CEP takes its entry when it is first asked (in the probe that found it
/// unknown), and keeps it when its answer comes: answering an ask (``keep(_:entry:)``)
/// touches the table only to forget another CEP when the memo is full. On a run of a million
/// distinct CEPs in no order, each costs two probes that miss the processor's caches — its
/// own, and the one that forgets it — not four, and the second is read ahead with the rest of
/// its chunk's (``readAheadForgetting(_:)``), so that they overlap; in a sorted run, 64
/// consecutive CEPs share a block of the table, walked in order (see ``CEPTable``)
/// (`cepis-bench memo` measures the memo alone).
///
/// Waiting CEPs do not count against the capacity and are not in the order of recency.
/// `LookupMemoTests` hold it to a plain reference over millions of seeded operations.
package struct LookupMemo {
  /// The most CEPs kept (0 keeps nothing).
  let capacity: Int
  /// CEPs forgotten to make room so far.
  package private(set) var evictions = 0
  /// How many CEPs the memo holds (answered).
  private(set) var count = 0

  /// One entry: a CEP held, answered or waiting, or a free entry. 32 bytes (the array's
  /// elements are 16-byte aligned, so half of them still straddle two cache lines: the saving
  /// is memory, 8 bytes a CEP, not misses).
  private struct Entry {
    /// Its answer (`.notFound` while it waits, or is free).
    var value: LookupResult
    /// Its CEP.
    var key: UInt32
    /// ``waitFlag`` and the ask it waits for; or, answered (or free), its answer's *age*: the
    /// value of ``kept`` (modulo 2³¹) when its answer was kept or last re-packed, for
    /// ``state(of:)``'s re-packing. An entry waits or is answered, never both: one field.
    var mark: UInt32
    /// The entries used just before and just after it (`none` at either end, and while it
    /// is not in the order).
    var older: Int32
    var newer: Int32

    /// The ask it waits for, or ``answered``.
    var ask: Int32 {
      mark & LookupMemo.waitFlag != 0
        ? Int32(bitPattern: mark & ~LookupMemo.waitFlag) : LookupMemo.answered
    }
  }

  private var table = CEPTable()
  private var entries: [Entry] = []
  /// The ends of the order of recency (`none` while it is empty).
  private var newest = Self.none
  private var oldest = Self.none
  /// CEPs answered so far (wrapping; an answer replaced is not counted).
  private var kept: UInt32 = 0
  /// Entries no CEP holds.
  private var free: [Int32] = []
  /// What ``readAheadForgetting(_:)`` read, folded: kept so that its loads stay.
  private var readAheadSink: UInt64 = 0
  /// The entries made room for at once when the array first fills past ``smallEntries``: the
  /// capacity and the CEPs waiting, at most 2²⁰ (32 MiB of address space).
  private let room: Int
  /// Entries the array holds before it makes ``room`` (128 KiB): a short run, a small
  /// `lookupMany`, never maps more.
  private static let smallEntries = 4_096

  private static let answered: Int32 = -1
  private static let none: Int32 = -1
  /// An entry's ``Entry/mark`` with this bit set waits (see there).
  private static let waitFlag: UInt32 = 1 << 31

  /// The mark of an entry waiting for `ask` (a slot number: below 2³¹).
  private static func waiting(for ask: Int32) -> UInt32 { UInt32(bitPattern: ask) | waitFlag }

  /// The mark of an entry answered when ``kept`` was `kept`: its age, modulo 2³¹. An age never
  /// reaches 2³¹: `capacity` is below 2³⁰ and an entry is re-packed, its age reset, when it is
  /// used past `capacity` (unused that long, it is forgotten), so it is at most twice that.
  private static func answered(at kept: UInt32) -> UInt32 { kept & ~waitFlag }

  /// A memo of at most `capacity` CEPs, with room made for about `waiting` more CEPs asked
  /// and not answered at once (the stream's read-ahead).
  package init(capacity: Int, waiting: Int = 8_192) {
    // An entry index is an Int32; two billion CEPs is more than exist.
    self.capacity = min(max(0, capacity), Int(Int32.max) / 2)
    room = min(self.capacity + max(0, waiting), 1 << 20)
  }

  /// A memo as ``init(capacity:waiting:)`` makes it, whose count of answers kept starts at `kept`
  /// (for tests: ages across the wrap of the count, and of the 31 bits an age keeps).
  init(capacity: Int, keptBefore kept: UInt32) {
    self.init(capacity: capacity)
    self.kept = kept
  }

  /// What the memo knows of one CEP.
  package enum State {
    /// Its answer (an address, or "does not exist"); now the most recently used.
    case answered(LookupResult)
    /// It is asked, by the ask `id`, and not answered yet.
    case waiting(ask: Int32)
    /// Nothing; with ``state(of:orWaitFor:)``, the CEP now waits in `entry`.
    case unknown(entry: Int32)
  }

  /// What the memo knows of `cep`; an answer becomes the most recently used.
  mutating func state(of cep: Int) -> State {
    guard let entry = table.value(for: cep) else { return .unknown(entry: -1) }
    return state(of: entry)
  }

  /// What the memo knows of `cep`, in one hash probe: when it knows nothing, `cep` now waits
  /// for `ask` (an ask no other CEP waits for), in the entry the answer names; answer it with
  /// ``keep(_:entry:)`` or give it up with ``stopWaiting(entry:)``.
  package mutating func state(of cep: Int, orWaitFor ask: Int32) -> State {
    precondition(ask >= 0, "an ask is a slot number")
    let vacant = free.last ?? Int32(entries.count)
    if let entry = table.valueInserting(vacant, for: cep) { return state(of: entry) }
    let key = UInt32(truncatingIfNeeded: cep)
    if free.isEmpty {
      if entries.count == entries.capacity && entries.count >= Self.smallEntries
        && entries.count < room
      {
        // Room for every entry the run can hold, at once: memory the system makes resident
        // only as entries are written, and no more doubling (the old array and the new one
        // resident together, the heap's peak of a large run). Past it, arrays' own growth.
        entries.reserveCapacity(room)
      }
      entries.append(
        Entry(
          value: .notFound, key: key, mark: Self.waiting(for: ask), older: Self.none,
          newer: Self.none))
    } else {
      // Array's own `removeLast`, not the generic `popLast`.
      free.removeLast()
      entries.withUnsafeMutableBufferPointer {
        $0[Int(vacant)].key = key
        $0[Int(vacant)].mark = Self.waiting(for: ask)
      }
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
    let ask = entries[index].ask
    guard ask == Self.answered else { return .waiting(ask: ask) }
    touch(entry)
    if (kept &- entries[index].mark) & ~Self.waitFlag > UInt32(truncatingIfNeeded: capacity) {
      entries[index].mark = Self.answered(at: kept)
      if case .found(let address) = entries[index].value, let alone = address.repackedAlone {
        entries[index].value = LookupResult(found: alone)
      }
    }
    return .answered(entries[index].value)
  }

  /// The ask `cep` waits for, if it waits (the memo's order is left alone).
  func waitingAsk(for cep: Int) -> Int32? {
    guard let entry = table.value(for: cep) else { return nil }
    let ask = entries[Int(entry)].ask
    return ask == Self.answered ? nil : ask
  }

  /// Forgets that `cep` is asked (its ask failed: a later row asks again). An answer kept
  /// for it is left alone.
  mutating func stopWaiting(for cep: Int) {
    guard let entry = table.value(for: cep), entries[Int(entry)].ask != Self.answered else {
      return
    }
    stopWaiting(entry: entry)
  }

  /// Gives up the ask of the waiting `entry` (see ``stopWaiting(for:)``).
  mutating func stopWaiting(entry: Int32) {
    precondition(entries[Int(entry)].ask != Self.answered, "the entry does not wait")
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
      let entry = table.value(for: cep)!
      entries[Int(entry)].value = answer
      entries[Int(entry)].mark = Self.answered(at: kept)
      return nil
    case .waiting:
      return keep(answer, entry: table.value(for: cep)!)
    case .unknown(let entry):
      return keep(answer, entry: entry)
    }
  }

  /// Keeps `answer` for the CEP waiting in `entry` (see ``state(of:orWaitFor:)``), as the
  /// most recently used; returns the CEP forgotten to make room, if any. No probe of the
  /// table but the one that forgets.
  @discardableResult
  package mutating func keep(_ answer: LookupResult, entry: Int32) -> Int? {
    let index = Int(entry)
    precondition(entries[index].ask != Self.answered, "the entry does not wait")
    guard capacity > 0 else {
      release(entry)
      return nil
    }
    let forgotten = count == capacity ? forgetOldest() : nil
    kept &+= 1
    // The entry's answer and its place at the newest end (``pushNewest(_:)``), through one
    // buffer: one uniqueness check of the array, not two.
    let (kept, newest) = (self.kept, self.newest)
    entries.withUnsafeMutableBufferPointer { entries in
      entries[index].value = answer
      entries[index].mark = Self.answered(at: kept)
      entries[index].older = newest
      entries[index].newer = Self.none
      if newest != Self.none { entries[Int(newest)].newer = entry }
    }
    if newest == Self.none { oldest = entry }
    self.newest = entry
    count += 1
    return forgotten
  }

  /// Forgets the least recently used CEP (the memo holds one): takes it out of the order,
  /// then out of the table (``release(_:)``). Returns the CEP.
  private mutating func forgetOldest() -> Int {
    let evicted = oldest
    let (key, next) = entries.withUnsafeMutableBufferPointer { entries in
      // The oldest has no older entry: only its newer neighbour's link changes.
      let next = entries[Int(evicted)].newer
      entries[Int(evicted)].newer = Self.none
      if next != Self.none { entries[Int(next)].older = Self.none }
      return (entries[Int(evicted)].key, next)
    }
    oldest = next
    if next == Self.none { newest = Self.none }
    release(evicted)
    count -= 1
    evictions += 1
    return Int(key)
  }

  /// Reads ahead what the next `keeps` calls of ``keep(_:entry:)`` will forget: the oldest
  /// entries and the lines of the table their CEPs sit in, all at once rather than one miss
  /// of the caches after another (a chunk's 500 answers, on a run of distinct CEPs, forget
  /// 500 CEPs kept long ago, each in a line no cache holds any more).
  package mutating func readAheadForgetting(_ keeps: Int) {
    var forgets = min(keeps, count + keeps - capacity)
    guard forgets > 0 else { return }
    var cursor = oldest
    var folded: UInt64 = 0
    entries.withUnsafeBufferPointer { entries in
      while forgets > 0 && cursor != Self.none {
        folded ^= table.slotAtHome(of: Int(entries[Int(cursor)].key))
        cursor = entries[Int(cursor)].newer
        forgets -= 1
      }
    }
    readAheadSink ^= folded
  }

  /// Takes `entry`'s CEP out of the table and frees the entry (out of the order already).
  private mutating func release(_ entry: Int32) {
    let index = Int(entry)
    table.removeValue(for: Int(entries[index].key))
    entries.withUnsafeMutableBufferPointer {
      $0[index].value = .notFound
      $0[index].mark = Self.answered(at: 0)
    }
    free.append(entry)
  }

  /// Makes `entry` (in the order) the most recently used.
  private mutating func touch(_ entry: Int32) {
    guard entry != newest else { return }
    unlink(entry)
    pushNewest(entry)
  }

  /// Takes `entry` out of the order.
  private mutating func unlink(_ entry: Int32) {
    entries.withUnsafeMutableBufferPointer { entries in
      let older = entries[Int(entry)].older
      let newer = entries[Int(entry)].newer
      if older != Self.none { entries[Int(older)].newer = newer } else { oldest = newer }
      if newer != Self.none { entries[Int(newer)].older = older } else { newest = older }
      entries[Int(entry)].older = Self.none
      entries[Int(entry)].newer = Self.none
    }
  }

  /// Puts `entry` (out of the order) at its newest end.
  private mutating func pushNewest(_ entry: Int32) {
    entries.withUnsafeMutableBufferPointer { entries in
      entries[Int(entry)].older = newest
      entries[Int(entry)].newer = Self.none
      if newest != Self.none { entries[Int(newest)].newer = entry } else { oldest = entry }
    }
    newest = entry
  }

  /// The CEPs held and their answers, least recently used first (for tests).
  var heldAnswers: [(cep: Int, answer: LookupResult)] {
    var held: [(cep: Int, answer: LookupResult)] = []
    var cursor = oldest
    while cursor != Self.none {
      let entry = entries[Int(cursor)]
      held.append((Int(entry.key), entry.value))
      cursor = entry.newer
    }
    return held
  }

  /// The bytes an entry takes in the memo's array (for tests: 32, half a cache line).
  static var entryStride: Int { MemoryLayout<Entry>.stride }

  /// The entries made so far, the array's room for them, and the room it makes at once past
  /// its first 4,096 (for tests).
  var entryCounts: (made: Int, room: Int, roomAtOnce: Int) {
    (entries.count, entries.capacity, room)
  }

  /// The CEPs held, least recently used first (for tests).
  var cepsOldestFirst: [Int] { heldAnswers.map(\.cep) }
}
