import Cepis
import CepisSupport
import Foundation

/// What `enrich` wrote for one row.
enum EnrichStatus: UInt8, Sendable {
  case found
  case notFound
  case invalid
  case failed
  case blank
}

/// The run-wide memo of `enrich`: the answer (found or not found) for each CEP already
/// resolved, at most `capacity` distinct CEPs, the least recently used evicted first.
///
/// Built for a million-row file: a CEP is its number (`UInt32`); an answer is three
/// references into compact storage — the `,logradouro` field in a slot of a ``StreetArena``
/// (reused in place by the entry that takes over an evicted one), and the `,complemento` and
/// `,bairro,localidade,uf,ibge,ok` fields interned in a pool, since they repeat endlessly.
/// Rendering a hit is three byte copies. An entry costs 28 bytes, its street's bytes (rounded
/// up to 8) and 11 to 23 bytes of hash index (the key beside the entry, so that a probe
/// never leaves the table); per-entry storage is reserved once, up front (untouched pages
/// cost nothing), so it never reallocates as the memo fills. Not copyable: it owns its arena.
struct EnrichMemo: ~Copyable {
  /// The most entries kept.
  let capacity: Int
  /// Entries evicted so far.
  private(set) var evictions = 0
  /// How often the street arena and the string pool were compacted.
  private(set) var compactions = (streets: 0, pool: 0)

  private static let none = UInt32.max
  /// The pool id of `,,,,,,,not_found` (an answer that the CEP does not exist).
  private static let notFoundPlace: UInt32 = 0
  /// The pool id of the empty string.
  private static let emptyString: UInt32 = 1
  /// The longest street field kept (a slot's size is 16 bits).
  private static let maxStreetBytes = 0xFFF8

  // One element per entry (struct of arrays: no padding, no per-entry allocation).
  private var keys: [UInt32] = []
  private var older: [UInt32] = []
  private var newer: [UInt32] = []
  private var streetSlot: [UInt32] = []
  /// The street field's length (low 16 bits) and its slot's capacity (high 16 bits).
  private var streetSize: [UInt32] = []
  private var complemento: [UInt32] = []
  private var place: [UInt32] = []
  private var newest = none
  private var oldest = none

  // Open addressing, linear probing: the key in the high 32 bits, entry index + 1 in the low
  // ones (0: an empty slot), so that a probe never leaves the table.
  private var index = [UInt64](repeating: 0, count: 1 << 10)
  private var indexShift = 64 - 10

  private var streets = StreetArena()
  /// The bytes of every entry's street (what the arena would hold with no slack or garbage).
  private var liveStreetBytes = 0
  private var pool = EnrichStringPool()
  private var scratch: [UInt8] = []

  /// Garbage in the street arena, in bytes beyond twice the live streets, that triggers a
  /// compaction.
  private let streetSlack: Int
  /// Pool strings beyond twice the entries that trigger a rebuild of the pool.
  private let poolSlack: Int

  /// A memo of at most `capacity` entries (0 memoises nothing). `streetSlack` and `poolSlack`
  /// set how much garbage the street arena and the string pool may hold before they are
  /// compacted (tests set them low, so that compactions happen all the time).
  init(capacity: Int, streetSlack: Int = 1 << 20, poolSlack: Int = 1_024) {
    self.capacity = max(0, capacity)
    self.streetSlack = streetSlack
    self.poolSlack = poolSlack
    let reserved = min(self.capacity, 1 << 20)
    keys.reserveCapacity(reserved)
    older.reserveCapacity(reserved)
    newer.reserveCapacity(reserved)
    streetSlot.reserveCapacity(reserved)
    streetSize.reserveCapacity(reserved)
    complemento.reserveCapacity(reserved)
    place.reserveCapacity(reserved)
    Self.seed(&pool)
  }

  private static func seed(_ pool: inout EnrichStringPool) {
    let notFound = pool.intern(Array(",,,,,,,not_found".utf8))
    let empty = pool.intern([])
    assert(notFound == notFoundPlace && empty == emptyString)
  }

  /// How many CEPs the memo holds.
  var count: Int { keys.count }

  /// The entry holding `cep`, now the most recently used; `nil` when the memo does not hold it.
  mutating func recall(_ cep: Int) -> Int? {
    guard let entry = find(UInt32(truncatingIfNeeded: cep)) else { return nil }
    touch(entry)
    return entry
  }

  /// Appends the answer of `entry` (from ``recall(_:)``): `,logradouro,…,cepis_status`.
  func appendAnswer(_ entry: Int, to out: inout [UInt8]) -> EnrichStatus {
    let size = streetSize[entry]
    streets.append(streetSlot[entry], length: Int(size & 0xFFFF), to: &out)
    pool.append(complemento[entry], to: &out)
    pool.append(place[entry], to: &out)
    return place[entry] == Self.notFoundPlace ? .notFound : .found
  }

  /// Whether the memo holds `cep` (without changing its recency).
  func contains(_ cep: Int) -> Bool { find(UInt32(truncatingIfNeeded: cep)) != nil }

  /// Memoises the answer for `cep` (`nil`: the CEP does not exist) and appends the rendered
  /// answer to `out`; `forgotten` is called with each CEP the memo no longer holds: the one
  /// evicted to make room, and `cep` itself when it cannot be kept (a capacity of 0, a street
  /// field over 64 KiB).
  mutating func insert(
    _ cep: Int, _ address: Address?, appendingTo out: inout [UInt8], forgotten: (Int) -> Void
  ) {
    let key = UInt32(truncatingIfNeeded: cep)
    scratch.removeAll(keepingCapacity: true)
    if let address { appendCSVField(address.logradouro, to: &scratch) }
    guard capacity > 0, scratch.count <= Self.maxStreetBytes else {
      // Not kept; nor is an older answer for the same CEP.
      if let stale = find(key) { remove(stale) }
      Self.render(address, to: &out)
      forgotten(cep)
      return
    }
    let entry: Int
    if let existing = find(key) {
      entry = existing
      unlink(entry)
    } else if keys.count < capacity {
      entry = keys.count
      keys.append(key)
      older.append(Self.none)
      newer.append(Self.none)
      streetSlot.append(0)
      streetSize.append(0)
      complemento.append(Self.emptyString)
      place.append(Self.notFoundPlace)
      // Growing re-indexes every entry, this one included: it must not be added twice.
      // (Adding it again after a growth gave it two slots; once evicted and reused, the
      // leftover slot mapped its CEP onto the entry's next owner — issue 16.)
      if keys.count * 10 > index.count * 7 {
        growIndex()
      } else {
        addToIndex(entry)
      }
    } else {
      entry = Int(oldest)
      forgotten(Int(keys[entry]))
      removeFromIndex(entry)
      unlink(entry)
      evictions += 1
      keys[entry] = key
      addToIndex(entry)
    }
    guard store(address, in: entry) else {
      // The arena is full (4 GiB of street names): forget this entry rather than crash.
      remove(entry)
      Self.render(address, to: &out)
      forgotten(cep)
      return
    }
    pushNewest(entry)
    _ = appendAnswer(entry, to: &out)
    // Slots left behind, and slots larger than their street, are reclaimed once they make up
    // half the arena.
    if streets.used > 2 * liveStreetBytes + streetSlack { compactStreets() }
    if pool.count > 2 * keys.count + poolSlack { rebuildPool() }
  }

  // MARK: - Answers

  /// Stores the answer (the street already rendered in `scratch`); `false` when the arena
  /// cannot grow.
  private mutating func store(_ address: Address?, in entry: Int) -> Bool {
    let length = scratch.count
    var capacity = Int(streetSize[entry] >> 16)
    if length > capacity {
      let wanted = (length + 7) & ~7
      guard let slot = streets.allocate(wanted) else { return false }
      streetSlot[entry] = slot
      capacity = wanted
    }
    liveStreetBytes += length - Int(streetSize[entry] & 0xFFFF)
    streets.write(scratch, at: streetSlot[entry])
    streetSize[entry] = UInt32(capacity) << 16 | UInt32(length)
    guard let address else {
      complemento[entry] = Self.emptyString
      place[entry] = Self.notFoundPlace
      return true
    }
    scratch.removeAll(keepingCapacity: true)
    appendCSVField(address.complemento, to: &scratch)
    complemento[entry] = pool.intern(scratch)
    scratch.removeAll(keepingCapacity: true)
    appendCSVField(address.bairro, to: &scratch)
    appendCSVField(address.localidade, to: &scratch)
    appendCSVField(address.uf, to: &scratch)
    appendCSVField(address.ibge, to: &scratch)
    scratch.append(contentsOf: ",ok".utf8)
    place[entry] = pool.intern(scratch)
    return true
  }

  /// Drops `entry` from the memo, wherever it is in the recency list (or outside it), and
  /// moves the last entry into its place so that entries stay dense; the moved entry keeps
  /// its place in the order of recency.
  private mutating func remove(_ entry: Int) {
    liveStreetBytes -= Int(streetSize[entry] & 0xFFFF)
    removeFromIndex(entry)
    if isLinked(entry) { unlink(entry) }
    let last = keys.count - 1
    if entry != last {
      removeFromIndex(last)
      let linked = isLinked(last)
      let before = older[last]
      let after = newer[last]
      keys[entry] = keys[last]
      streetSlot[entry] = streetSlot[last]
      streetSize[entry] = streetSize[last]
      complemento[entry] = complemento[last]
      place[entry] = place[last]
      older[entry] = before
      newer[entry] = after
      if linked {
        let moved = UInt32(entry)
        if before != Self.none { newer[Int(before)] = moved } else { oldest = moved }
        if after != Self.none { older[Int(after)] = moved } else { newest = moved }
      }
      addToIndex(entry)
    }
    keys.removeLast()
    older.removeLast()
    newer.removeLast()
    streetSlot.removeLast()
    streetSize.removeLast()
    complemento.removeLast()
    place.removeLast()
  }

  /// Whether `entry` is in the recency list (an entry being placed is not, for a moment).
  private func isLinked(_ entry: Int) -> Bool {
    older[entry] != Self.none || newer[entry] != Self.none || oldest == UInt32(entry)
  }

  /// The appended fields for an answer, as ``insert(_:_:appendingTo:forgotten:)`` writes them.
  static func render(_ address: Address?, to out: inout [UInt8]) {
    guard let address else {
      out.append(contentsOf: ",,,,,,,not_found".utf8)
      return
    }
    appendCSVField(address.logradouro, to: &out)
    appendCSVField(address.complemento, to: &out)
    appendCSVField(address.bairro, to: &out)
    appendCSVField(address.localidade, to: &out)
    appendCSVField(address.uf, to: &out)
    appendCSVField(address.ibge, to: &out)
    out.append(contentsOf: ",ok".utf8)
  }

  // MARK: - Recency (a doubly linked list through `older`/`newer`)

  private mutating func unlink(_ entry: Int) {
    let before = older[entry]
    let after = newer[entry]
    if before != Self.none { newer[Int(before)] = after } else { oldest = after }
    if after != Self.none { older[Int(after)] = before } else { newest = before }
    older[entry] = Self.none
    newer[entry] = Self.none
  }

  private mutating func pushNewest(_ entry: Int) {
    let value = UInt32(entry)
    older[entry] = newest
    newer[entry] = Self.none
    if newest != Self.none { newer[Int(newest)] = value } else { oldest = value }
    newest = value
  }

  private mutating func touch(_ entry: Int) {
    guard newest != UInt32(entry) else { return }
    unlink(entry)
    pushNewest(entry)
  }

  // MARK: - Index

  private func home(of key: UInt32) -> Int {
    Int(truncatingIfNeeded: (UInt64(key) &* 0x9E37_79B9_7F4A_7C15) >> UInt64(indexShift))
  }

  private func find(_ key: UInt32) -> Int? {
    let mask = index.count - 1
    var slot = home(of: key)
    while true {
      let value = index[slot]
      if value == 0 { return nil }
      if UInt32(truncatingIfNeeded: value >> 32) == key {
        return Int(truncatingIfNeeded: value & 0xFFFF_FFFF) - 1
      }
      slot = (slot + 1) & mask
    }
  }

  private mutating func addToIndex(_ entry: Int) {
    let mask = index.count - 1
    let key = keys[entry]
    var slot = home(of: key)
    while index[slot] != 0 { slot = (slot + 1) & mask }
    index[slot] = UInt64(key) << 32 | UInt64(entry + 1)
  }

  private mutating func removeFromIndex(_ entry: Int) {
    let mask = index.count - 1
    let target = UInt64(keys[entry]) << 32 | UInt64(entry + 1)
    var hole = home(of: keys[entry])
    while index[hole] != target { hole = (hole + 1) & mask }
    // Backward-shift deletion: later members of the probe run move up into the hole unless
    // their home lies cyclically after the hole.
    var probe = hole
    while true {
      probe = (probe + 1) & mask
      let value = index[probe]
      if value == 0 { break }
      let home = home(of: UInt32(truncatingIfNeeded: value >> 32))
      let stays = hole <= probe ? (hole < home && home <= probe) : (hole < home || home <= probe)
      if !stays {
        index[hole] = value
        hole = probe
      }
    }
    index[hole] = 0
  }

  private mutating func growIndex() {
    let size = index.count * 2
    index = []
    index = [UInt64](repeating: 0, count: size)
    indexShift = 64 - size.trailingZeroBitCount
    for entry in keys.indices { addToIndex(entry) }
  }

  // MARK: - Invariants

  /// The first broken invariant of the memo's structure, or `nil`: every entry owns exactly
  /// one index slot and every used slot names a live entry with its key; the recency list
  /// runs through every entry once, both ways; the street bytes add up. O(capacity): for
  /// tests.
  func invariantViolation() -> String? {
    var owners = [Int](repeating: 0, count: keys.count)
    var used = 0
    for value in index where value != 0 {
      used += 1
      let entry = Int(truncatingIfNeeded: value & 0xFFFF_FFFF) - 1
      guard entry >= 0, entry < keys.count else { return "index slot names entry \(entry)" }
      guard UInt32(truncatingIfNeeded: value >> 32) == keys[entry] else {
        return "index slot of entry \(entry) holds key \(value >> 32), entry holds \(keys[entry])"
      }
      owners[entry] += 1
    }
    if let entry = owners.firstIndex(where: { $0 != 1 }) {
      return "entry \(entry) (key \(keys[entry])) owns \(owners[entry]) index slots"
    }
    guard used == keys.count else { return "\(used) index slots for \(keys.count) entries" }
    var seen = 0
    var previous = Self.none
    var cursor = oldest
    while cursor != Self.none {
      seen += 1
      guard seen <= keys.count else { return "the recency list has a cycle" }
      guard older[Int(cursor)] == previous else { return "broken back link at \(cursor)" }
      previous = cursor
      cursor = newer[Int(cursor)]
    }
    guard previous == newest else { return "the recency list does not end at the newest" }
    guard seen == keys.count else { return "the recency list holds \(seen) of \(keys.count)" }
    let live = keys.indices.reduce(0) { $0 + Int(streetSize[$1] & 0xFFFF) }
    guard live == liveStreetBytes else { return "live street bytes \(live) ≠ \(liveStreetBytes)" }
    return nil
  }

  // MARK: - Compaction

  /// Copies every entry's street into a fresh arena, each slot cut to its street's size. If
  /// the fresh arena cannot hold them (never: it needs less than the old one), nothing
  /// changes — an entry never loses its street.
  private mutating func compactStreets() {
    let compacted = StreetArena()
    var slots = [UInt32](repeating: 0, count: keys.count)
    for entry in keys.indices {
      let length = Int(streetSize[entry] & 0xFFFF)
      guard length > 0 else { continue }
      guard let slot = compacted.allocate((length + 7) & ~7) else { return }
      compacted.copy(from: streets, slot: streetSlot[entry], length: length, to: slot)
      slots[entry] = slot
    }
    for entry in keys.indices {
      let length = Int(streetSize[entry] & 0xFFFF)
      streetSlot[entry] = slots[entry]
      streetSize[entry] = length == 0 ? 0 : UInt32((length + 7) & ~7) << 16 | UInt32(length)
    }
    streets = compacted
    compactions.streets += 1
  }

  private mutating func rebuildPool() {
    var rebuilt = EnrichStringPool()
    Self.seed(&rebuilt)
    for entry in keys.indices {
      complemento[entry] = rebuilt.intern(pool.bytes(of: complemento[entry]))
      place[entry] = rebuilt.intern(pool.bytes(of: place[entry]))
    }
    pool = rebuilt
    compactions.pool += 1
  }
}

/// Street fields in fixed blocks of 1 MiB: a slot never moves or straddles blocks, so the
/// arena grows by a block at a time and never copies what it holds.
///
/// A slot is named by `block << 20 | offset` (4,096 blocks, 4 GiB, at most).
final class StreetArena {
  private static let blockShift = 20
  private static let blockSize = 1 << blockShift
  private var blocks: [UnsafeMutablePointer<UInt8>] = []
  private var fill = blockSize
  /// Bytes handed out in slots, whether still in use or not.
  private(set) var used = 0

  deinit {
    for block in blocks { block.deallocate() }
  }

  /// A new slot of `size` bytes (at most 1 MiB), or `nil` when the arena is full.
  func allocate(_ size: Int) -> UInt32? {
    precondition(size > 0 && size <= Self.blockSize)
    if fill + size > Self.blockSize {
      guard blocks.count < 4_096 else { return nil }
      blocks.append(UnsafeMutablePointer<UInt8>.allocate(capacity: Self.blockSize))
      fill = 0
    }
    let slot = UInt32((blocks.count - 1) << Self.blockShift | fill)
    fill += size
    used += size
    return slot
  }

  private func address(of slot: UInt32) -> UnsafeMutablePointer<UInt8> {
    blocks[Int(slot >> UInt32(Self.blockShift))] + Int(slot & UInt32(Self.blockSize - 1))
  }

  /// Writes `bytes` at the start of `slot` (which must be large enough).
  func write(_ bytes: [UInt8], at slot: UInt32) {
    guard !bytes.isEmpty else { return }
    let target = address(of: slot)
    bytes.withUnsafeBufferPointer { source in
      target.update(from: source.baseAddress!, count: source.count)
    }
  }

  /// Appends the first `length` bytes of `slot` to `out`.
  func append(_ slot: UInt32, length: Int, to out: inout [UInt8]) {
    guard length > 0 else { return }
    out.append(contentsOf: UnsafeBufferPointer(start: address(of: slot), count: length))
  }

  /// Copies `length` bytes from `slot` of `other` into `target` of this arena.
  func copy(from other: StreetArena, slot: UInt32, length: Int, to target: UInt32) {
    guard length > 0 else { return }
    address(of: target).update(from: other.address(of: slot), count: length)
  }
}

/// Byte strings stored once each, named by a dense id: one storage array, and an
/// open-addressing index hashed a word at a time (no allocation per string).
struct EnrichStringPool {
  private var ends: [Int] = []
  private var storage: [UInt8] = []
  private var hashes: [UInt64] = []
  // Id + 1; 0 for an empty slot.
  private var slots = [UInt32](repeating: 0, count: 1 << 6)

  /// How many strings the pool holds.
  var count: Int { ends.count }

  private static func hash(_ bytes: UnsafeBufferPointer<UInt8>) -> UInt64 {
    var hash: UInt64 = 0x243F_6A88_85A3_08D3 ^ UInt64(bytes.count)
    let raw = UnsafeRawBufferPointer(bytes)
    var index = 0
    while index + 8 <= bytes.count {
      let word = raw.loadUnaligned(fromByteOffset: index, as: UInt64.self)
      hash = (hash ^ word) &* 0x9E37_79B9_7F4A_7C15
      hash ^= hash >> 29
      index += 8
    }
    var tail: UInt64 = 0
    while index < bytes.count {
      tail = tail << 8 | UInt64(bytes[index])
      index += 1
    }
    hash = (hash ^ tail) &* 0xBF58_476D_1CE4_E5B9
    return hash ^ (hash >> 31)
  }

  /// The id of `value`, added if new.
  mutating func intern(_ value: [UInt8]) -> UInt32 {
    let hash = value.withUnsafeBufferPointer(Self.hash)
    let mask = slots.count - 1
    var slot = Int(truncatingIfNeeded: hash) & mask
    while true {
      let stored = slots[slot]
      if stored == 0 { break }
      let id = Int(stored - 1)
      if hashes[id] == hash && storage[range(of: UInt32(id))].elementsEqual(value) {
        return UInt32(id)
      }
      slot = (slot + 1) & mask
    }
    let id = UInt32(ends.count)
    storage.append(contentsOf: value)
    ends.append(storage.count)
    hashes.append(hash)
    slots[slot] = id + 1
    if ends.count * 2 > slots.count { grow() }
    return id
  }

  private mutating func grow() {
    slots = [UInt32](repeating: 0, count: slots.count * 2)
    let mask = slots.count - 1
    for (id, hash) in hashes.enumerated() {
      var slot = Int(truncatingIfNeeded: hash) & mask
      while slots[slot] != 0 { slot = (slot + 1) & mask }
      slots[slot] = UInt32(id + 1)
    }
  }

  private func range(of id: UInt32) -> Range<Int> {
    let index = Int(id)
    return (index == 0 ? 0 : ends[index - 1])..<ends[index]
  }

  /// Appends the string `id` to `out`.
  func append(_ id: UInt32, to out: inout [UInt8]) {
    out.append(contentsOf: storage[range(of: id)])
  }

  /// The string `id`.
  func bytes(of id: UInt32) -> [UInt8] { Array(storage[range(of: id)]) }
}

/// A set of CEP numbers: one bit for each of the 100,000,000 possible CEPs, in zeroed memory
/// the system hands out a page at a time when first written (a page covers 32,768
/// consecutive CEPs), so an empty set costs nothing and a full one 12.5 MB at most. A
/// reference type: one owner, never copied.
final class CEPSet {
  private static let words = 100_000_000 / 64 + 1
  private let bits: UnsafeMutablePointer<UInt64>
  /// How many members.
  private(set) var count = 0

  init() {
    // calloc, not a Swift array: an array would write every zero and make all 12.5 MB
    // resident at once.
    guard let memory = calloc(Self.words, MemoryLayout<UInt64>.stride) else {
      fatalError("cannot reserve 12.5 MB of address space for the CEP set")
    }
    bits = memory.bindMemory(to: UInt64.self, capacity: Self.words)
  }

  deinit { free(bits) }

  /// Whether `cep` (0 to 99,999,999) is a member.
  func contains(_ cep: Int) -> Bool {
    guard count > 0, cep >= 0, cep < 100_000_000 else { return false }
    return bits[cep >> 6] & (1 << UInt64(cep & 63)) != 0
  }

  /// Adds `cep` (0 to 99,999,999; anything else is ignored); `false` when it was already a
  /// member.
  @discardableResult
  func insert(_ cep: Int) -> Bool {
    guard cep >= 0, cep < 100_000_000 else { return false }
    let mask: UInt64 = 1 << UInt64(cep & 63)
    guard bits[cep >> 6] & mask == 0 else { return false }
    bits[cep >> 6] |= mask
    count += 1
    return true
  }
}

/// Appends `,` and `text` as one CSV field, quoted per RFC 4180 when it holds a comma, a
/// quote or a line break (``CSVField``, the package's one field writer).
func appendCSVField(_ text: String, to out: inout [UInt8]) {
  out.append(UInt8(ascii: ","))
  CSVField.append(text, to: &out)
}
