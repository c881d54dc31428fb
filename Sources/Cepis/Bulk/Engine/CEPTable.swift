/// A hash table from CEP numbers to `Int32` values: the index of ``LookupMemo``, probed once or
/// twice for every row of a bulk run.
///
/// Open addressing with linear probing, each slot one `UInt64` holding the key (high half) and the
/// value (low half), so that a probe that finds its key reads one cache line; a Swift
/// `Dictionary<Int, Int32>` reads its occupancy bitmap, its key array and its value array, and
/// hashes with SipHash. Keys are spread in blocks of 64 consecutive CEPs: a block's home (64 slots,
/// eight cache lines) is picked by Fibonacci hashing of the CEP without its last six bits
/// (multiplication by 2⁶⁴/φ, top bits), which scatters CEPs that share their low digits (`…000`,
/// the CEPs of whole towns), and a CEP's place in its block is its last six bits, the block's lines
/// turned by a whole number of lines taken from the hash (so that CEPs that share their last six
/// bits do not all start on one line). A run of nearby CEPs (a file sorted by CEP, a range) then
/// shares cache lines, and walks each block's lines in order, which the processor's prefetcher
/// follows, instead of missing the caches once per CEP (Benchmarks/RESULTS.md, rows
/// `lookupMany CPU (AHC)` and `lookups CPU (AHC)`; the A/Bs of `c3fac20` and `e1b5d2a` are in
/// Benchmarks/ANALYSIS.md). At most three quarters of the slots are used (a memo of 300,000
/// CEPs fits 2¹⁹ slots, not 2²⁰); a removal shifts the entries after it back (no
/// tombstones), so a table that churns never slows down.
///
/// A CEP is at most 99,999,999 (`cepNumber`), well inside 32 bits; the key `0xFFFF_FFFF` is never
/// valid and marks an empty slot.
///
/// The table counts the keys it holds *displaced* (past their home slot). While it holds none, a
/// removal empties the slot and is done: only a displaced key could have to move back into the
/// hole. A run of consecutive CEPs, whose blocks Fibonacci hashing spreads with hardly a collision,
/// then removes without reading on to the next empty slot (the rest of the block, and often the
/// next, each slot needing its home computed). `CEPTableModelTests` hold it to `Dictionary` over
/// millions of seeded operations.
struct CEPTable {
  private static let empty = UInt64.max
  /// 2⁶⁴ divided by the golden ratio, odd.
  private static let multiplier: UInt64 = 0x9E37_79B9_7F4A_7C15

  private var slots: [UInt64]
  /// `slots.count - 1` (a power of two, minus one).
  private var mask: Int
  /// `64 - log2(slots.count)`: the top bits of the product pick the home slot.
  private var shift: UInt64
  /// How many keys are held.
  private(set) var count = 0
  /// How many of them sit past their home slot.
  private(set) var displacedCount = 0

  /// A table with room for `capacity` keys before it grows.
  init(capacity: Int = 0) {
    // One block at least.
    var size = 64
    while 3 * size < 4 * max(0, capacity) { size *= 2 }
    slots = Array(repeating: Self.empty, count: size)
    mask = size - 1
    shift = UInt64(64 - size.trailingZeroBitCount)
  }

  /// The position in `chunk` of each of its CEPs (8-digit strings; a malformed one is left
  /// out, a repeated one at its last position): how a batch answer's rows find their slots.
  init(positionsOf chunk: [String]) {
    self.init(capacity: chunk.count)
    for (position, cep) in chunk.enumerated() {
      if let number = cepNumber(utf8Of: cep) { set(Int32(position), for: number) }
    }
  }

  /// The position in `numbers` of each of its CEP numbers (a repeated one at its last).
  init(positionsOf numbers: [Int]) {
    self.init(capacity: numbers.count)
    for (position, number) in numbers.enumerated() { set(Int32(position), for: number) }
  }

  /// Makes room for `capacity` keys without growing.
  mutating func reserveCapacity(_ capacity: Int) {
    guard 4 * capacity > 3 * slots.count else { return }
    var size = slots.count
    while 3 * size < 4 * capacity { size *= 2 }
    rehash(into: size)
  }

  @inline(__always)
  private static func key(_ cep: Int) -> UInt64 {
    precondition(cep >= 0 && cep < 0xFFFF_FFFF, "not a CEP number: \(cep)")
    return UInt64(cep)
  }

  @inline(__always)
  private func home(_ key: UInt64) -> Int { Self.home(key, shift: shift) }

  @inline(__always)
  private static func home(_ key: UInt64, shift: UInt64) -> Int {
    // 64 consecutive CEPs share one block of eight lines: the block (`key >> 6`) is
    // scattered; the CEP's place in it is its last six bits, turned by whole lines (bits 3...5
    // of the scattered slot: a line boundary stays one).
    let slot = Int(truncatingIfNeeded: ((key >> 6) &* multiplier) >> shift)
    return slot & ~63 | (slot & 56 &+ Int(truncatingIfNeeded: key)) & 63
  }

  @inline(__always)
  private static func slot(_ key: UInt64, _ value: Int32) -> UInt64 {
    key << 32 | UInt64(UInt32(bitPattern: value))
  }

  @inline(__always)
  private static func value(of slot: UInt64) -> Int32 {
    Int32(bitPattern: UInt32(truncatingIfNeeded: slot))
  }

  /// The position of `key`, or of the empty slot where it would go.
  @inline(__always)
  private func position(of key: UInt64) -> (index: Int, found: Bool) {
    slots.withUnsafeBufferPointer { slots in
      var index = home(key)
      while true {
        let slot = slots[index]
        if slot == Self.empty { return (index, false) }
        if slot >> 32 == key { return (index, true) }
        index = (index + 1) & mask
      }
    }
  }

  /// The value for `cep`, if any.
  func value(for cep: Int) -> Int32? {
    let (index, found) = position(of: Self.key(cep))
    return found ? Self.value(of: slots[index]) : nil
  }

  /// The value for `cep` when it is held; otherwise inserts `value` for it and returns `nil`
  /// (one probe either way).
  mutating func valueInserting(_ value: Int32, for cep: Int) -> Int32? {
    let key = Self.key(cep)
    let (index, found) = position(of: key)
    if found { return Self.value(of: slots[index]) }
    insert(key, value, at: index)
    return nil
  }

  /// Sets `value` for `cep`, inserting it or replacing what was held.
  mutating func set(_ value: Int32, for cep: Int) {
    let key = Self.key(cep)
    let (index, found) = position(of: key)
    if found {
      slots.withUnsafeMutableBufferPointer { $0[index] = Self.slot(key, value) }
    } else {
      insert(key, value, at: index)
    }
  }

  /// Inserts `key` (not held) at `index`, the empty slot its probe ended on; or, when that
  /// would fill more than three quarters of the slots, doubles the table and inserts it there.
  private mutating func insert(_ key: UInt64, _ value: Int32, at index: Int) {
    guard 4 * (count + 1) <= 3 * slots.count else {
      rehash(into: 2 * slots.count)
      insertNew(key, value)
      return
    }
    place(key, value, at: index)
  }

  /// Writes `key` (not held) into the empty slot `index`, counting it, and counting it
  /// displaced when `index` is not its home.
  @inline(__always)
  private mutating func place(_ key: UInt64, _ value: Int32, at index: Int) {
    slots.withUnsafeMutableBufferPointer { $0[index] = Self.slot(key, value) }
    count += 1
    if index != home(key) { displacedCount += 1 }
  }

  /// Reads the line where a probe for `cep` starts, so that a probe soon after finds it in
  /// the processor's caches: a loop of these over many CEPs has many of those lines in
  /// flight at once, where probes, each waiting for its line before the next, have one.
  /// Returns the slot read (to be folded into a value the caller keeps: a load whose result
  /// is unused is no load at all once optimised).
  @inline(__always)
  func slotAtHome(of cep: Int) -> UInt64 {
    slots.withUnsafeBufferPointer { $0[home(Self.key(cep))] }
  }

  /// Removes `cep`; returns the value it had, if it was held.
  @discardableResult
  mutating func removeValue(for cep: Int) -> Int32? {
    let (index, found) = position(of: Self.key(cep))
    guard found else { return nil }
    let mask = self.mask
    let shift = self.shift
    if index != home(Self.key(cep)) { displacedCount -= 1 }
    var displaced = displacedCount
    let removed = slots.withUnsafeMutableBufferPointer { slots -> Int32 in
      let removed = Self.value(of: slots[index])
      // Backward shift: each entry after the hole, up to the next empty slot, moves into the
      // hole when the hole lies between its home and where it sits (it was displaced past it).
      // With no key displaced, none moves.
      var hole = index
      var next = (index + 1) & mask
      while displaced > 0 && slots[next] != Self.empty {
        let slot = slots[next]
        let displacement = (next - Self.home(slot >> 32, shift: shift)) & mask
        let shortening = (next - hole) & mask
        if displacement >= shortening {
          slots[hole] = slot
          hole = next
          if displacement == shortening { displaced -= 1 }
        }
        next = (next + 1) & mask
      }
      slots[hole] = Self.empty
      return removed
    }
    displacedCount = displaced
    count -= 1
    return removed
  }

  /// How many keys held sit past their home slot, counted slot by slot (for tests: it must
  /// equal ``displacedCount``).
  var displacedKeysCounted: Int {
    slots.indices.count { slots[$0] != Self.empty && $0 != home(slots[$0] >> 32) }
  }

  /// Every key and value held, in no particular order (for tests).
  var contents: [(cep: Int, value: Int32)] {
    slots.compactMap { $0 == Self.empty ? nil : (Int($0 >> 32), Self.value(of: $0)) }
  }

  private mutating func insertNew(_ key: UInt64, _ value: Int32) {
    place(key, value, at: position(of: key).index)
  }

  private mutating func rehash(into size: Int) {
    let old = slots
    slots = Array(repeating: Self.empty, count: size)
    mask = size - 1
    shift = UInt64(64 - size.trailingZeroBitCount)
    count = 0
    displacedCount = 0
    for slot in old where slot != Self.empty {
      insertNew(slot >> 32, Self.value(of: slot))
    }
  }
}
