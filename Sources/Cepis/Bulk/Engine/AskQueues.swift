/// The ask queues of a ``LookupAsks`` and the chunks they become: the asks not yet sent, the
/// asks the cache missed, the chunks in flight (probes among them) and the mailbox their
/// outcomes come back through, with the count of requests and probes started.
///
/// A queue is an array read from a head: a chunk takes ``Client/maxBatch`` asks off the
/// front, and the array is emptied (keeping its room) once its head reaches its end.
///
/// A value stored inline in its ``LookupAsks`` (whose type comment says why its accesses
/// skip the exclusivity checks): a call costs no retain and no indirection.
struct AskQueues {
  /// New asks, not yet looked up in the cache (or, without one, not yet sent).
  private var unsent: [Int32] = []
  private var unsentHead = 0
  /// Asks the cache did not answer, waiting for a request.
  private var misses: [Int32] = []
  private var missesHead = 0
  /// The most chunks of each kind (probes, requests) in flight at once.
  private let limit: Int
  private var chunks: [Int: Task<Void, Never>] = [:]
  private var nextChunk = 0
  /// Probes (cache look-ups) among `chunks`.
  private(set) var probing = 0
  /// Batch requests started (one per chunk that is no probe).
  private(set) var requests = 0
  /// CEPs looked up in the cache in probes.
  private(set) var probed = 0
  /// Where chunks leave their outcomes, and where a ``RowPump`` wakes the engine.
  let mailbox = ChunkMailbox()

  /// Queues with at most `chunksInFlight` chunks of each kind in flight.
  init(chunksInFlight: Int) {
    self.limit = chunksInFlight
  }

  /// Whether a chunk's task is running (its outcome will come).
  var hasChunksInFlight: Bool { !chunks.isEmpty }

  /// Queues the new ask `id`; `true` when a full chunk of new asks waits.
  mutating func queue(_ id: Int32) -> Bool {
    unsent.append(id)
    return unsent.count - unsentHead >= Client.maxBatch
  }

  /// Queues the ask `id` the cache missed, for a request.
  mutating func queueMiss(_ id: Int32) { misses.append(id) }

  /// The next chunk of new asks (full, or with `partial` what is left), when a chunk of
  /// its kind (`probe`: a probe; else a request, without a cache) may start.
  mutating func nextUnsent(partial: Bool, probe: Bool) -> [Int32]? {
    guard (probe ? probing : chunks.count) < limit else { return nil }
    return Self.takeChunk(from: &unsent, head: &unsentHead, partial: partial)
  }

  /// The next chunk of misses for a request, when one may start. A partial chunk waits for
  /// every probe: they may still fill it.
  mutating func nextMisses(partial: Bool) -> [Int32]? {
    guard chunks.count - probing < limit else { return nil }
    return Self.takeChunk(from: &misses, head: &missesHead, partial: partial && probing == 0)
  }

  /// The next chunk of `queue` (from `head`): a full one, or with `partial` what is left.
  static func takeChunk(
    from queue: inout [Int32], head: inout Int, partial: Bool
  ) -> [Int32]? {
    let available = queue.count - head
    guard available >= Client.maxBatch || (partial && available > 0) else { return nil }
    let count = min(available, Client.maxBatch)
    // A copy of its own size: `Array(queue[head..<head + count])` of a whole queue shares the
    // queue's buffer, which then is copied (not kept) by the `removeAll` below, and the chunk
    // holds all of its capacity (tens of KiB, grown while asks piled up) for 500 asks.
    let ids = [Int32](unsafeUninitializedCapacity: count) { buffer, initialized in
      queue.withUnsafeBufferPointer { queue in
        // `head + count <= queue.count` (`count <= available`); `buffer` has room for
        // `count`, and all of it is initialized before `initialized` says so.
        _ = buffer.initialize(fromContentsOf: queue[head..<head + count])
      }
      initialized = count
    }
    head += count
    if head == queue.count {
      queue.removeAll(keepingCapacity: true)
      head = 0
    }
    return ids
  }

  /// Starts a chunk of `asks` CEPs (`probe`: a probe, else a request): `run`, given the
  /// chunk's number, makes its outcome in a task of its own, which posts it to the mailbox.
  mutating func start(
    asks: Int, probe: Bool, _ run: @escaping @Sendable (_ chunk: Int) async -> ChunkOutcome
  ) {
    let chunk = nextChunk
    nextChunk += 1
    if probe {
      probing += 1
      probed += asks
    } else {
      requests += 1
    }
    let mailbox = self.mailbox
    chunks[chunk] = Task { mailbox.post(await run(chunk)) }
  }

  /// The chunk of `outcome` has posted it: no longer in flight.
  mutating func landed(_ outcome: ChunkOutcome) {
    chunks[outcome.chunk] = nil
    if outcome.probe { probing -= 1 }
  }

  /// Cancels the chunks in flight, and forgets them.
  mutating func cancelAll() {
    for task in chunks.values { task.cancel() }
    chunks.removeAll()
    probing = 0
  }

  /// Cancels the chunks in flight (the end of their engine).
  func cancel() {
    for task in chunks.values { task.cancel() }
  }
}
