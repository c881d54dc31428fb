import CepisHTTP
import CepisSupport

// One class, in one file: its state (the slots, the queues, the memo, the chunks in flight)
// is private to it, and split across files it would be visible to the whole module. What its
// chunks carry is in `LookupChunk.swift`.

/// The CEP side of a ``LookupEngine``, not generic: the run-wide memo, the asks (one per CEP
/// asked, shared by every row that waits for it), the chunks in flight and their mailbox.
///
/// Each row's CEP is answered at once (malformed, or in the memo), joins the *ask* already
/// open for its CEP, or opens a new ask, queued for the next chunk — one hash probe of the
/// memo, which also holds the open asks. Asks are sent ``Client/maxBatch`` at a time; a
/// chunk's answers are keyed by each row's own CEP (see `Client.decodeBatchRows`) and land on
/// its asks, and from there on every row that reads them.
///
/// With a ``Client/cache``, new asks go first to the cache, ``Client/maxBatch`` at a time,
/// in a task of their own (a *probe*, see `CachedChunk`); the asks it answers close there,
/// and the rest are queued as misses, sent in requests of their own: a request carries only
/// CEPs the cache does not hold.
///
/// Not thread-safe, and need not be: its engine is advanced by one task at a time.
///
/// The per-row state (`slots`, the queues, the memo) skips Swift's dynamic exclusivity checks
/// (`@exclusivity(unchecked)`; what they cost is measured in `82ebcfd`): one task at a time
/// runs this class, and no method holds an access to one of them across a call that could
/// reach it again.
@usableFromInline
final class LookupAsks {
  /// The outcome of ``admit(_:behindOthers:)``.
  @usableFromInline
  enum Admission {
    /// The row's answer, now (no row is ahead of it).
    case answered(LookupResult)
    /// The slot the row's answer comes from.
    case held(Int32)
    /// The slot of the ask the row's CEP just opened (it was neither known nor asked).
    case asked(Int32)
  }

  /// One answer, or one CEP asked in one chunk, and how many held rows read it. A row
  /// answered at once (malformed, or from the memo) behind a row still waiting gets a slot
  /// of its own, already answered. Slots live in two arrays (this plain part, and the
  /// answers in `slotAnswers`) and are reused once every row that reads them has left: no
  /// allocation and no hashing per row, and no reference counting but the answer's.
  private struct Slot {
    var cep: Int
    /// The memo's entry the CEP waits in (an ask's; -1 for an answer known at once, and for
    /// an ask of distinct rows, which the memo does not hold).
    var entry: Int32
    var waiting: Int32
    /// Whether a chunk carries this ask (or it needs none: it is answered).
    var sent: Bool
    /// Whether the ask waits for the preload's pass (opened while it reads; see
    /// ``startPreloadIfWorthIt()``).
    var awaitsPreload = false
  }

  private let client: Client
  private let cache: AddressCache?
  /// Whether no two rows of the run have the same CEP (see `init`): then an ask needs no
  /// entry in the memo, unless the preload's pass reads.
  private let distinctRows: Bool
  private let editionCheck: EditionCheck
  /// The live edition this run's chunks read and store the cache under, learnt once, when
  /// the first chunk goes out (`nil` without a cache).
  private var edition: Task<RunEdition, Never>?
  private let chunksInFlight: Int
  @exclusivity(unchecked) private var slots: [Slot] = []
  /// Per slot: its answer, once it has one.
  @exclusivity(unchecked) private var slotAnswers: [LookupResult?] = []
  @exclusivity(unchecked) private var freeSlots: [Int32] = []
  /// New asks, not yet looked up in the cache (or, without one, not yet sent).
  @exclusivity(unchecked) private var unsent: [Int32] = []
  @exclusivity(unchecked) private var unsentHead = 0
  /// Asks the cache did not answer, waiting for a request.
  @exclusivity(unchecked) private var misses: [Int32] = []
  @exclusivity(unchecked) private var missesHead = 0
  /// Probes (cache look-ups) among `chunks`.
  private var probing = 0
  @exclusivity(unchecked) private var memo: LookupMemo
  private var chunks: [Int: Task<Void, Never>] = [:]
  private var nextChunk = 0
  private var requests = 0
  private var cacheHits = 0
  private var probed = 0
  /// Where chunks leave their outcomes, and where a ``RowPump`` wakes the engine.
  @usableFromInline let mailbox = ChunkMailbox()

  /// How a run with a cache learns the live edition.
  @usableFromInline
  enum EditionCheck: Sendable {
    /// Asks `/health` once for the run (a stream, a batch of several chunks).
    case refresh
    /// The edition known within the revalidation interval (a batch of one chunk).
    case live
  }

  /// About how many rows the run reads (0: unknown; ``BulkOptions/expectedRows``), for
  /// ``startPreloadIfWorthIt()``.
  private let expectedRows: Int
  /// Whether ``startPreloadIfWorthIt()`` has run.
  @usableFromInline private(set) var preloadConsidered = false
  /// The preload's task while it reads (``startPreloadIfWorthIt()``); `nil` before and after.
  private var preload: Task<Void, Never>?
  /// The asks opened while the preload reads, in order: they wait for it, and those it does
  /// not answer are queued when it ends. A slot may be listed twice once reused: only a slot
  /// that still ``Slot/awaitsPreload`` counts.
  @exclusivity(unchecked) private var awaitingPreload: [Int32] = []
  /// The cache's answers read by the preload's pass (``startPreloadIfWorthIt()``): each
  /// CEP's position in `preloadedAnswers`; empty when nothing was read so. A row whose CEP is
  /// here takes its answer from here, before and instead of the memo: the pass's answers are
  /// held for the whole run anyway, and one probe of this table is all a row costs.
  @exclusivity(unchecked) private var preloaded = CEPTable()
  @exclusivity(unchecked) private var preloadedAnswers: [PreloadedResult] = []

  /// One answer of the preload's pass: whether a row took it yet (a cache hit, counted once),
  /// and whether the first row to take it is to note its use in the file.
  private struct PreloadedResult {
    var result: LookupResult
    var stale: Bool
    var taken = false
  }
  /// CEPs whose use is to be noted in the file (``notePreloadedUses(flush:)``).
  private var usedPreloaded: [Int] = []

  /// The CEP side of a run with `options`. With `distinctRows` (no two rows of the run have
  /// the same CEP: `lookupMany`'s, de-duplicated first), the memo keeps nothing, whatever
  /// ``BulkOptions/memoCapacity`` says: no later row could use an answer, and keeping a million
  /// of them only to let them go at the end costs their memory and a reference count each.
  /// Nor does the memo hold their asks (no row could join one), except while the preload's
  /// pass reads, whose answers find their asks through it.
  @usableFromInline
  init(
    client: Client, options: BulkOptions, distinctRows: Bool = false,
    editionCheck: EditionCheck = .refresh
  ) {
    self.client = client
    self.cache = client.cache
    self.distinctRows = distinctRows
    self.editionCheck = editionCheck
    self.chunksInFlight = options.chunksInFlight
    self.expectedRows = options.expectedRows
    // The CEPs waiting at once: the rows read ahead, and a chunk's worth more.
    self.memo = LookupMemo(
      capacity: distinctRows ? 0 : options.memoCapacity,
      waiting: options.readAhead + Client.maxBatch)
  }

  /// The fewest rows a run must expect for ``startPreloadIfWorthIt()`` to read a whole
  /// edition.
  static let preloadMinimumRows = 4 * Client.maxBatch

  /// How many answers of the preload's pass land on the asks at a time.
  static let preloadBatch = 4_096

  /// At the first row: when the run expects at least ``preloadMinimumRows`` rows and a
  /// file cache holds no more answers of the live edition than the rows expected and the
  /// memo's capacity (the rows expected alone, for distinct rows), reads them all in one pass
  /// (a scan costs a fraction of a look-up per CEP), so that a row whose CEP they hold is
  /// answered from them, before and without the memo, with no look-up in the file; a CEP
  /// they lack is asked as usual. The edition check is the run's own (the first chunk's).
  /// Each answer so read is a cache hit, and its use is noted in the file, when a row first
  /// takes it. Anything else (no cache, a memory cache, too many answers, no edition known, a
  /// file that cannot be read) leaves the run as it was.
  ///
  /// The pass runs on the cache's thread while the rows are read: its answers land
  /// ``preloadBatch`` at a time, in the file's order, through the mailbox, as a chunk's do.
  /// Until it ends, a CEP that neither the memo nor the answers landed so far hold opens an
  /// ask that waits for the pass (the read-ahead bounds how many rows wait); when the pass
  /// ends, the asks it did not answer go to the cache CEP by CEP, then to the network, as
  /// usual. A run over the file a cache was filled from meets its CEPs in about the order
  /// they were stored, so its rows wait little.
  @usableFromInline
  func startPreloadIfWorthIt() {
    preloadConsidered = true
    // The most answers the pass may hold: what the memo could, or, for distinct rows (whose
    // memo keeps nothing), the rows expected.
    let limit = distinctRows ? expectedRows : min(expectedRows, memo.capacity)
    guard let cache, expectedRows >= Self.preloadMinimumRows, limit > 0 else { return }
    if case .memory = cache.storage { return }
    let edition = cachedChunk(cache).edition
    let mailbox = self.mailbox
    preload = Task {
      await LookupAsks.preload(from: cache, edition: edition, limit: limit, into: mailbox)
    }
  }

  /// The preload's pass (``startPreloadIfWorthIt()``): its batches, then its end, posted to
  /// `mailbox`; stops between two batches when the task is cancelled.
  private static func preload(
    from cache: AddressCache, edition: Task<RunEdition, Never>, limit: Int,
    into mailbox: ChunkMailbox
  ) async {
    let run = await edition.value
    if let live = run.live, run.holdsLive, !Task.isCancelled {
      let stopped = LockedValue(false)
      await withTaskCancellationHandler {
        _ = await cache.allBatchAnswers(edition: live, limit: limit, batchSize: preloadBatch) {
          answers, total in
          mailbox.post(ChunkOutcome(preload: PreloadBatch(answers: answers, total: total)))
          return !stopped.withLock { $0 }
        }
      } onCancel: {
        stopped.withLock { $0 = true }
      }
    }
    mailbox.post(ChunkOutcome(preload: PreloadBatch(answers: [], total: 0, last: true)))
  }

  /// Lands a batch of the preload's answers: each answers the ask that waits for its CEP
  /// (a cache hit), and is kept for the rows to come. The last batch (the pass is over)
  /// queues the asks it did not answer.
  private func apply(_ batch: PreloadBatch) {
    if batch.last {
      preload = nil
      for id in awaitingPreload where slots[Int(id)].awaitsPreload {
        slots[Int(id)].awaitsPreload = false
        slots[Int(id)].sent = false
        unsent.append(id)
      }
      awaitingPreload = []
      return
    }
    if preloadedAnswers.isEmpty {
      preloaded = CEPTable(capacity: batch.total)
      preloadedAnswers.reserveCapacity(batch.total)
    }
    for answer in batch.answers {
      let index = preloadedAnswers.count
      preloaded.set(Int32(index), for: answer.cep)
      preloadedAnswers.append(
        PreloadedResult(
          result: answer.address.map { LookupResult(found: $0) } ?? .notFound,
          stale: answer.stale))
      guard let ask = memo.waitingAsk(for: answer.cep), slots[Int(ask)].awaitsPreload else {
        continue
      }
      // Rows wait for it: their ask closes here. The memo lets go of the CEP: the rows to
      // come find it in `preloaded` first.
      let slot = Int(ask)
      slots[slot].awaitsPreload = false
      memo.stopWaiting(entry: slots[slot].entry)
      slotAnswers[slot] = takePreloaded(index, cep: answer.cep)
    }
    notePreloadedUses(flush: false)
  }

  /// The answer `index` of the preload's pass, for a row with CEP `cep`: the first row to take
  /// it counts a cache hit and, when its recency is out of date, queues its use.
  private func takePreloaded(_ index: Int, cep: Int) -> LookupResult {
    if !preloadedAnswers[index].taken {
      preloadedAnswers[index].taken = true
      cacheHits += 1
      if preloadedAnswers[index].stale {
        usedPreloaded.append(cep)
        notePreloadedUses(flush: false)
      }
    }
    return preloadedAnswers[index].result
  }

  /// Hands the CEPs whose use is due to the cache, a few hundred at a time (all with `flush`).
  private func notePreloadedUses(flush: Bool) {
    guard let cache, usedPreloaded.count >= (flush ? 1 : 256) else { return }
    cache.noteUsed(usedPreloaded)
    usedPreloaded.removeAll(keepingCapacity: true)
  }

  deinit {
    for task in chunks.values { task.cancel() }
    preload?.cancel()
  }

  /// What the iteration has spent so far.
  @usableFromInline
  var statistics: LookupStatistics {
    LookupStatistics(
      requests: requests, memoEvictions: memo.evictions, cacheHits: cacheHits,
      preloaded: preloadedAnswers.count, probed: probed)
  }

  /// Whether a chunk's request is running (its outcome will come).
  @usableFromInline
  var hasChunksInFlight: Bool { !chunks.isEmpty || preload != nil }

  /// Returns once the answers of this run's requests are written to the cache (see
  /// ``AddressCache/storeBehind(_:kind:edition:)``): the end of a run.
  @usableFromInline
  nonisolated(nonsending) func finishStores() async {
    notePreloadedUses(flush: true)
    await cache?.drainStores()
  }

  /// Cancels the requests in flight.
  @usableFromInline
  func stop() {
    for task in chunks.values { task.cancel() }
    chunks.removeAll()
    probing = 0
    preload?.cancel()
    preload = nil
  }

  // MARK: - Rows

  /// Takes in the CEP of a row read: its answer at once when it is known and no row is ahead
  /// of it (`behindOthers` false), else the slot its answer comes from.
  @usableFromInline
  func admit(_ text: String, behindOthers: Bool) -> Admission {
    guard let number = cepNumber(ofField: text) else {
      return malformed(text, behindOthers: behindOthers)
    }
    return admit(valid: number, behindOthers: behindOthers)
  }

  /// ``admit(_:behindOthers:)`` for a row whose CEP the caller has as a number already (`nil`:
  /// the row has none; it fails as an empty CEP does).
  @usableFromInline
  func admit(number: Int?, behindOthers: Bool) -> Admission {
    guard let number, (0...99_999_999).contains(number) else {
      return malformed(number.map(String.init) ?? "", behindOthers: behindOthers)
    }
    return admit(valid: number, behindOthers: behindOthers)
  }

  /// A row whose CEP `text` is malformed: its `invalidCEP` error, as `normalizeCEP` words it.
  private func malformed(_ text: String, behindOthers: Bool) -> Admission {
    let error: CepisError
    do {
      _ = try normalizeCEP(text)
      error = .invalidCEP("invalid CEP")
    } catch let invalid as CepisError {
      error = invalid
    } catch {
      // normalizeCEP throws CepisError only.
      preconditionFailure("normalizeCEP threw \(error)")
    }
    return known(LookupResult(failure: error), behindOthers: behindOthers)
  }

  /// A row with a well-formed CEP.
  private func admit(valid number: Int, behindOthers: Bool) -> Admission {
    if preloaded.count > 0, let index = preloaded.value(for: number) {
      // Read by the preload's pass (`startPreloadIfWorthIt`).
      return known(takePreloaded(Int(index), cep: number), behindOthers: behindOthers)
    }
    if distinctRows && preload == nil {
      // No other row has this CEP: nothing to find in the memo, nor to note there.
      return ask(Slot(cep: number, entry: -1, waiting: 1, sent: false))
    }
    // The slot a new ask would take: the memo notes it in the same probe that finds the CEP.
    let vacant = freeSlots.last ?? Int32(slots.count)
    switch memo.state(of: number, orWaitFor: vacant) {
    case .answered(let answer):
      // The address's `cep` is the 8 digits of `number`, however this row spells it.
      return known(answer, behindOthers: behindOthers)
    case .waiting(let ask):
      slots[Int(ask)].waiting += 1
      return .held(ask)
    case .unknown(let entry):
      if preload != nil {
        // The preload's pass may hold it: the ask waits for the pass (see `apply(_:)`).
        let slot = newSlot(
          Slot(cep: number, entry: entry, waiting: 1, sent: true, awaitsPreload: true), answer: nil)
        assert(slot == vacant)
        awaitingPreload.append(slot)
        return .asked(slot)
      }
      let admission = ask(Slot(cep: number, entry: entry, waiting: 1, sent: false))
      if case .asked(let slot) = admission { assert(slot == vacant) }
      return admission
    }
  }

  /// Opens the ask `slot`, queued for the next chunk.
  private func ask(_ slot: Slot) -> Admission {
    let id = newSlot(slot, answer: nil)
    unsent.append(id)
    // A full chunk can go (nothing else to send changes but when an outcome lands, which
    // sends what it made room for).
    if unsent.count - unsentHead >= Client.maxBatch { sendChunks(partial: false) }
    return .asked(id)
  }

  /// Keeps the answer of the ask `index` in the memo (when the memo holds the ask).
  private func keep(_ answer: LookupResult, ask index: Int) {
    let entry = slots[index].entry
    if entry >= 0 { memo.keep(answer, entry: entry) }
  }

  /// Gives up the memo's note of the ask `index` (when the memo holds it): a later row with
  /// its CEP asks again.
  private func forget(ask index: Int) {
    let entry = slots[index].entry
    if entry >= 0 { memo.stopWaiting(entry: entry) }
  }

  /// A row whose answer is known: answered now if no row is ahead of it, else held.
  private func known(_ result: LookupResult, behindOthers: Bool) -> Admission {
    guard behindOthers else { return .answered(result) }
    return .held(newSlot(Slot(cep: -1, entry: -1, waiting: 1, sent: true), answer: result))
  }

  private func newSlot(_ slot: Slot, answer: LookupResult?) -> Int32 {
    // `removeLast`, Array's own: `popLast` is the generic collection's (not inlined, and seen
    // in a stream's profile; `9fc1872`).
    if !freeSlots.isEmpty {
      let free = freeSlots.removeLast()
      slots[Int(free)] = slot
      slotAnswers[Int(free)] = answer
      return free
    }
    slots.append(slot)
    slotAnswers.append(answer)
    return Int32(slots.count - 1)
  }

  /// Whether a chunk carries the ask of `slot` (or it needs none).
  @usableFromInline
  func isSent(_ slot: Int32) -> Bool { slots[Int(slot)].sent }

  /// The answer of `slot` for one row that reads it, or `nil` while it is not answered.
  @usableFromInline
  func take(_ slot: Int32) -> LookupResult? {
    let index = Int(slot)
    guard slotAnswers[index] != nil else { return nil }
    // Most slots have one reader (every slot, for distinct rows): no count to write down.
    if slots[index].waiting > 1 {
      slots[index].waiting -= 1
      return slotAnswers[index]
    }
    // The last reader takes the answer out (a move: no retain and release of an address
    // that was last touched a chunk ago).
    freeSlots.append(slot)
    return slotAnswers[index].take()
  }

  // MARK: - Requests

  /// Sends full chunks (and, with `partial`, what is left) while fewer than the limit are in
  /// flight. With a cache, a new ask goes first in a *probe* (a chunk of up to
  /// ``Client/maxBatch`` asks looked up in the cache, in a task of its own); the asks the
  /// cache does not answer come back as misses, queued for requests of their own: a request
  /// carries only CEPs the cache does not hold, ``Client/maxBatch`` at a time.
  @usableFromInline
  func sendChunks(partial: Bool) {
    guard let cache else {
      while chunks.count < chunksInFlight,
        let ids = Self.takeChunk(from: &unsent, head: &unsentHead, partial: partial)
      {
        send(ids, through: nil)
      }
      return
    }
    while probing < chunksInFlight,
      let ids = Self.takeChunk(from: &unsent, head: &unsentHead, partial: partial)
    {
      probe(ids, through: cachedChunk(cache))
    }
    // A partial request of misses waits for every probe: they may still fill it.
    let partialMisses = partial && probing == 0
    while chunks.count - probing < chunksInFlight,
      let ids = Self.takeChunk(from: &misses, head: &missesHead, partial: partialMisses)
    {
      send(ids, through: cachedChunk(cache))
    }
  }

  /// Marks the asks `ids` as carried by a chunk; their CEPs, in order. Through the slots'
  /// buffer: one uniqueness check of the array per chunk, not one per ask.
  private func markSent(_ ids: [Int32]) -> [Int] {
    slots.withUnsafeMutableBufferPointer { slots in
      ids.map { id in
        slots[Int(id)].sent = true
        return slots[Int(id)].cep
      }
    }
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

  /// Sends a request for the asks `ids` (through the cache's stand-ins and store, with one).
  private func send(_ ids: [Int32], through cached: CachedChunk?) {
    let numbers = markSent(ids)
    let chunk = nextChunk
    nextChunk += 1
    let client = self.client
    let mailbox = self.mailbox
    requests += 1
    let start = ChunkOutcome(chunk: chunk, asks: ids, answers: [], cacheHits: 0)
    chunks[chunk] = Task {
      let outcome = await LookupAsks.outcome(
        of: start, numbers: numbers, client: client, cached: cached)
      mailbox.post(outcome)
    }
  }

  /// Looks the asks `ids` up in the cache, in a task of its own.
  private func probe(_ ids: [Int32], through cached: CachedChunk) {
    let numbers = markSent(ids)
    let chunk = nextChunk
    nextChunk += 1
    probing += 1
    probed += numbers.count
    let mailbox = self.mailbox
    let start = ChunkOutcome(chunk: chunk, asks: ids, answers: [], cacheHits: 0, probe: true)
    chunks[chunk] = Task {
      var outcome = start
      (outcome.answers, outcome.cacheHits) = await cached.probe(numbers)
      mailbox.post(outcome)
    }
  }

  /// `outcome` (the chunk and its asks) with the answers of a request for `numbers`.
  static func outcome(
    of outcome: ChunkOutcome, numbers: [Int], client: Client, cached: CachedChunk?
  ) async -> ChunkOutcome {
    var outcome = outcome
    if let cached {
      outcome.answers = await cached.request(numbers, client: client)
    } else {
      switch await fetch(numbers, client: client) {
      case .success(let found): outcome.fetched = found
      case .failure(let error):
        outcome.answers = [ChunkAnswer](repeating: .failed(error), count: numbers.count)
      }
    }
    return outcome
  }

  /// How the next chunk goes through `cache`; the first starts the run's edition check.
  private func cachedChunk(_ cache: AddressCache) -> CachedChunk {
    if let edition { return CachedChunk(cache: cache, edition: edition) }
    let client = self.client
    let check = editionCheck
    let task = Task<RunEdition, Never> {
      let live =
        switch check {
        case .refresh: await cache.refreshEdition(using: client)
        case .live: await cache.liveEdition(using: client)
        }
      guard let live else { return RunEdition(live: nil, holdsLive: false) }
      return RunEdition(live: live, holdsLive: await cache.holdsEntries(of: live))
    }
    edition = task
    return CachedChunk(cache: cache, edition: task)
  }

  /// The answers of `/csv` for the CEPs `numbers`, in their order, or why there are none.
  static func fetch(_ numbers: [Int], client: Client) async -> Result<[Address?], CepisError> {
    do {
      return .success(try await client.fetchChunk(numbers: numbers))
    } catch let error as CepisError {
      return .failure(error)
    } catch is CancellationError {
      return .failure(.networkError(message: "cancelled"))
    } catch {
      return .failure(.networkError(message: "\(error)"))
    }
  }

  /// Applies the outcomes the chunks have posted so far, then sends the full chunks they
  /// made room for (or, for probes, left as misses).
  @usableFromInline
  func applyOutcomes() {
    var outcomes = mailbox.take()
    guard !outcomes.isEmpty else { return }
    for index in outcomes.indices { apply(&outcomes[index]) }
    sendChunks(partial: false)
  }

  /// Returns once a chunk has posted its outcome (at once if one already has), or when the
  /// task is cancelled.
  @usableFromInline
  nonisolated(nonsending) func waitForAnOutcome() async {
    if !mailbox.isEmpty || Task.isCancelled { return }
    await withTaskCancellationHandler {
      await mailbox.wait()
    } onCancel: { [mailbox] in
      mailbox.interrupt()
    }
  }

  /// Lands `outcome`'s answers on their asks, moving each out of it (an address's reference
  /// count is touched once here, for the memo's copy).
  private func apply(_ outcome: inout ChunkOutcome) {
    if let batch = outcome.preload {
      apply(batch)
      return
    }
    chunks[outcome.chunk] = nil
    if outcome.probe { probing -= 1 }
    cacheHits += outcome.cacheHits
    if let fetched = outcome.fetched {
      outcome.fetched = nil
      apply(fetched, to: outcome.asks)
      return
    }
    var failure: (error: CepisError, result: LookupResult)?
    var answers: [ChunkAnswer] = []
    swap(&answers, &outcome.answers)
    for (position, id) in outcome.asks.enumerated() {
      let index = Int(id)
      var taken = ChunkAnswer.missed
      swap(&taken, &answers[position])
      switch consume taken {
      case .found(let address):
        // The ask closes: a row read from now on is answered by the memo, or asks again.
        let answer = LookupResult(found: address)
        keep(answer, ask: index)
        slotAnswers[index] = answer
      case .notFound:
        keep(.notFound, ask: index)
        slotAnswers[index] = .notFound
      case .stale(let address):
        // Not kept: a later row with this CEP asks again.
        forget(ask: index)
        slotAnswers[index] = LookupResult(found: address)
      case .failed(let error):
        // Not kept: a later row with this CEP asks again. One result for the chunk's failure.
        if failure?.error != error { failure = (error, LookupResult(failure: error)) }
        forget(ask: index)
        slotAnswers[index] = failure?.result
      case .missed:
        // The cache does not hold it: the ask stays open, queued for a request.
        slots[index].sent = false
        misses.append(id)
      }
    }
  }
}

extension LookupAsks {
  /// Lands a request's answers (`found`, one per ask, in the chunk's order) on the asks
  /// `asks`: each ask closes, kept in the memo. Each address is moved out of `found`: its
  /// reference count is touched once, for the memo's copy.
  fileprivate func apply(_ found: consuming [Address?], to asks: [Int32]) {
    precondition(found.count == asks.count, "one answer per ask")
    var found = found
    if !distinctRows { memo.readAheadForgetting(asks.count) }
    // Through buffers: one uniqueness check of each array per chunk, not one per ask.
    found.withUnsafeMutableBufferPointer { answers in
      slotAnswers.withUnsafeMutableBufferPointer { slotAnswers in
        for (position, id) in asks.enumerated() {
          let index = Int(id)
          let answer = answers[position].take().map(LookupResult.init(found:)) ?? .notFound
          keep(answer, ask: index)
          slotAnswers[index] = answer
        }
      }
    }
  }
}
