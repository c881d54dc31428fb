/// One answer, or one CEP asked in one chunk, and how many held rows read it (see
/// ``AskSlots``).
struct AskSlot {
  var cep: Int
  /// The memo's entry the CEP waits in (an ask's; -1 for an answer known at once, and for
  /// an ask of distinct rows, which the memo does not hold).
  var entry: Int32
  var waiting: Int32
  /// Whether a chunk carries this ask (or it needs none: it is answered).
  var sent: Bool
  /// Whether the ask waits for the preload's pass (opened while it reads; see
  /// ``PreloadPass``).
  var awaitsPreload = false
}

/// The slot table of a ``LookupAsks``: every ask open and every answer that held rows still
/// read, by slot number, and the slots free for reuse.
///
/// A row answered at once (malformed, or from the memo) behind a row still waiting gets a slot
/// of its own, already answered. Slots live in two arrays (the plain part, and the answers)
/// and are reused once every row that reads them has left: no allocation and no hashing per
/// row, and no reference counting but the answer's.
///
/// A value stored inline in its ``LookupAsks`` (whose type comment says why its accesses
/// skip the exclusivity checks): a call costs no retain and no indirection.
struct AskSlots {
  private var slots: [AskSlot] = []
  /// Per slot: its answer, once it has one.
  private var answers: [LookupResult?] = []
  private var free: [Int32] = []

  /// The slot the next ``open(_:answer:)`` takes.
  var vacant: Int32 { free.last ?? Int32(slots.count) }

  /// Takes a slot for `slot`, answered with `answer` (or not yet).
  mutating func open(_ slot: AskSlot, answer: LookupResult?) -> Int32 {
    // `removeLast`, Array's own: `popLast` is the generic collection's (not inlined, and seen
    // in a stream's profile; `9fc1872`).
    if !free.isEmpty {
      let id = free.removeLast()
      slots[Int(id)] = slot
      answers[Int(id)] = answer
      return id
    }
    slots.append(slot)
    answers.append(answer)
    return Int32(slots.count - 1)
  }

  /// One more row reads the ask `id`.
  mutating func join(_ id: Int32) { slots[Int(id)].waiting += 1 }

  /// The slot `id` as it stands.
  subscript(id: Int32) -> AskSlot {
    get { slots[Int(id)] }
    _modify { yield &slots[Int(id)] }
  }

  /// Whether a chunk carries the ask of `id` (or it needs none).
  func isSent(_ id: Int32) -> Bool { slots[Int(id)].sent }

  /// The memo's entry of the ask `id` (-1: the memo does not hold it).
  func entry(of id: Int32) -> Int32 { slots[Int(id)].entry }

  /// Answers the slot `id`.
  mutating func answer(_ id: Int32, with answer: LookupResult?) {
    answers[Int(id)] = answer
  }

  /// The answer of `id` for one row that reads it, or `nil` while it is not answered.
  mutating func take(_ id: Int32) -> LookupResult? {
    let index = Int(id)
    guard answers[index] != nil else { return nil }
    // Most slots have one reader (every slot, for distinct rows): no count to write down.
    if slots[index].waiting > 1 {
      slots[index].waiting -= 1
      return answers[index]
    }
    // The last reader takes the answer out (a move: no retain and release of an address
    // that was last touched a chunk ago).
    free.append(id)
    return answers[index].take()
  }

  /// Marks the asks `ids` as carried by a chunk; their CEPs, in order. Through the slots'
  /// buffer: one uniqueness check of the array per chunk, not one per ask.
  mutating func markSent(_ ids: [Int32]) -> [Int] {
    slots.withUnsafeMutableBufferPointer { slots in
      // Every id names a slot opened by `open` (slots are never removed): in bounds.
      ids.map { id in
        slots[Int(id)].sent = true
        return slots[Int(id)].cep
      }
    }
  }

  /// Lands a request's answers (`found`, one per ask, in the chunk's order) on the asks
  /// `asks`, moving each address out of `found`; `keep` gets each answer and its ask's memo
  /// entry first. Through buffers: one uniqueness check of each array per chunk, not one per
  /// ask.
  mutating func land(
    _ found: inout [Address?], on asks: [Int32], keep: (LookupResult, Int32) -> Void
  ) {
    precondition(found.count == asks.count, "one answer per ask")
    slots.withUnsafeBufferPointer { slots in
      found.withUnsafeMutableBufferPointer { found in
        answers.withUnsafeMutableBufferPointer { answers in
          // `position` is below `asks.count`, which is `found.count`; every id names a slot
          // opened by `open`, and `answers` has one element per slot: all in bounds.
          for (position, id) in asks.enumerated() {
            let index = Int(id)
            let answer = found[position].take().map(LookupResult.init(found:)) ?? .notFound
            keep(answer, slots[index].entry)
            answers[index] = answer
          }
        }
      }
    }
  }
}
