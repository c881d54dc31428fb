import CepisHTTP
import CepisSupport

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
/// It composes three parts, each a type owning its state: the slot table (``AskSlots``), the
/// ask queues with the chunks in flight and their mailbox (``AskQueues``), and the cache
/// preload pass (``PreloadPass``); what chunks carry is in `LookupChunk.swift`.
///
/// Not thread-safe, and need not be: its engine is advanced by one task at a time.
///
/// Its per-row state (`memo`, `slots`, `queues`, `preload`: values stored inline) skips
/// Swift's dynamic exclusivity checks (`@exclusivity(unchecked)`; what they cost is measured
/// in `82ebcfd`). Sound because one task at a time runs this class, and no method holds an
/// access to one of them across a call that could reach the same one again: each part's
/// methods see only their own state, and the one closure this class passes into a part
/// (`AskSlots.land`'s) touches another part only (the memo).
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

  /// How a run with a cache learns the live edition.
  @usableFromInline
  enum EditionCheck: Sendable {
    /// Asks `/health` once for the run (a stream, a batch of several chunks).
    case refresh
    /// The edition known within the revalidation interval (a batch of one chunk).
    case live
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
  /// About how many rows the run reads (0: unknown; ``BulkOptions/expectedRows``), for
  /// ``startPreloadIfWorthIt()``.
  private let expectedRows: Int
  @exclusivity(unchecked) private var memo: LookupMemo
  @exclusivity(unchecked) private var slots = AskSlots()
  @exclusivity(unchecked) private var queues: AskQueues
  @exclusivity(unchecked) private var preload: PreloadPass
  /// CEPs the cache answered fresh in probes (the preload's hits are its own).
  private var cacheHits = 0
  /// The run's requests, held to what a rate-limited API allows.
  let gate: RateGate
  /// Whether ``startPreloadIfWorthIt()`` has run.
  @usableFromInline private(set) var preloadConsidered = false

  /// Where chunks leave their outcomes, and where a ``RowPump`` wakes the engine.
  @usableFromInline var mailbox: ChunkMailbox { queues.mailbox }

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
    self.expectedRows = options.expectedRows
    self.queues = AskQueues(chunksInFlight: options.chunksInFlight)
    self.gate = RateGate(
      maxInFlight: options.chunksInFlight, patience: options.rateLimitPatience)
    self.preload = PreloadPass(cache: client.cache)
    // The CEPs waiting at once: the rows read ahead, and a chunk's worth more.
    self.memo = LookupMemo(
      capacity: distinctRows ? 0 : options.memoCapacity,
      waiting: options.readAhead + Client.maxBatch)
  }

  deinit {
    queues.cancel()
    preload.cancel()
  }

  /// At the first row: starts the cache preload pass when it is worth it (see
  /// ``PreloadPass``), under the run's own edition check.
  @usableFromInline
  func startPreloadIfWorthIt() {
    preloadConsidered = true
    // The most answers the pass may hold: what the memo could, or, for distinct rows (whose
    // memo keeps nothing), the rows expected.
    let limit = distinctRows ? expectedRows : min(expectedRows, memo.capacity)
    guard let cache, expectedRows >= PreloadPass.minimumRows, limit > 0 else { return }
    if case .memory = cache.storage { return }
    preload.start(
      from: cache, edition: cachedChunk(cache).edition, limit: limit, into: queues.mailbox)
  }

  /// Lands a batch of the preload's answers: each answers the ask that waits for its CEP
  /// (a cache hit), and is kept for the rows to come. The last batch (the pass is over)
  /// queues the asks it did not answer.
  private func apply(_ batch: PreloadBatch) {
    if batch.last {
      for id in preload.end() where slots[id].awaitsPreload {
        slots[id].awaitsPreload = false
        slots[id].sent = false
        _ = queues.queue(id)
      }
      return
    }
    for answer in batch.answers {
      let index = preload.add(answer, total: batch.total)
      guard let ask = memo.waitingAsk(for: answer.cep), slots[ask].awaitsPreload else {
        continue
      }
      // Rows wait for it: their ask closes here. The memo lets go of the CEP: the rows to
      // come find it in the preload's answers first.
      slots[ask].awaitsPreload = false
      memo.stopWaiting(entry: slots.entry(of: ask))
      slots.answer(ask, with: preload.take(index, cep: answer.cep))
    }
    preload.noteUses(flush: false)
  }

  /// What the iteration has spent so far.
  @usableFromInline
  var statistics: LookupStatistics {
    LookupStatistics(
      requests: queues.requests, memoEvictions: memo.evictions,
      cacheHits: cacheHits + preload.hits, preloaded: preload.count, probed: queues.probed,
      rateLimit: gate.statistics)
  }

  /// Whether a chunk's request is running (its outcome will come).
  @usableFromInline
  var hasChunksInFlight: Bool { queues.hasChunksInFlight || preload.isReading }

  /// Returns once the answers of this run's requests are written to the cache (see
  /// ``AddressCache/storeBehind(_:kind:edition:)``): the end of a run.
  @usableFromInline
  nonisolated(nonsending) func finishStores() async {
    preload.noteUses(flush: true)
    await cache?.drainStores()
  }

  /// Cancels the requests in flight.
  @usableFromInline
  func stop() {
    queues.cancelAll()
    preload.stop()
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
    if let index = preload.position(of: number) {
      // Read by the preload's pass (`startPreloadIfWorthIt`).
      return known(preload.take(index, cep: number), behindOthers: behindOthers)
    }
    if distinctRows && !preload.isReading {
      // No other row has this CEP: nothing to find in the memo, nor to note there.
      return ask(AskSlot(cep: number, entry: -1, waiting: 1, sent: false))
    }
    // The slot a new ask would take: the memo notes it in the same probe that finds the CEP.
    let vacant = slots.vacant
    switch memo.state(of: number, orWaitFor: vacant) {
    case .answered(let answer):
      // The address's `cep` is the 8 digits of `number`, however this row spells it.
      return known(answer, behindOthers: behindOthers)
    case .waiting(let ask):
      slots.join(ask)
      return .held(ask)
    case .unknown(let entry):
      if preload.isReading {
        // The preload's pass may hold it: the ask waits for the pass (see `apply(_:)`).
        let slot = slots.open(
          AskSlot(cep: number, entry: entry, waiting: 1, sent: true, awaitsPreload: true),
          answer: nil)
        assert(slot == vacant)
        preload.noteWaiting(slot)
        return .asked(slot)
      }
      let admission = ask(AskSlot(cep: number, entry: entry, waiting: 1, sent: false))
      if case .asked(let slot) = admission { assert(slot == vacant) }
      return admission
    }
  }

  /// Opens the ask `slot`, queued for the next chunk.
  private func ask(_ slot: AskSlot) -> Admission {
    let id = slots.open(slot, answer: nil)
    // A full chunk can go (nothing else to send changes but when an outcome lands, which
    // sends what it made room for).
    if queues.queue(id) { sendChunks(partial: false) }
    return .asked(id)
  }

  /// Keeps `answer` in the memo under `entry` (when the memo holds the ask: `entry` ≥ 0).
  private func keep(_ answer: LookupResult, entry: Int32) {
    if entry >= 0 { memo.keep(answer, entry: entry) }
  }

  /// Gives up the memo's note of the ask `id` (if it holds it): a later row asks again.
  private func forget(ask id: Int32) {
    let entry = slots.entry(of: id)
    if entry >= 0 { memo.stopWaiting(entry: entry) }
  }

  /// A row whose answer is known: answered now if no row is ahead of it, else held.
  private func known(_ result: LookupResult, behindOthers: Bool) -> Admission {
    guard behindOthers else { return .answered(result) }
    return .held(slots.open(AskSlot(cep: -1, entry: -1, waiting: 1, sent: true), answer: result))
  }

  /// Whether a chunk carries the ask of `slot` (or it needs none).
  @usableFromInline
  func isSent(_ slot: Int32) -> Bool { slots.isSent(slot) }

  /// The answer of `slot` for one row that reads it, or `nil` while it is not answered.
  @usableFromInline
  func take(_ slot: Int32) -> LookupResult? { slots.take(slot) }

  // MARK: - Requests

  /// Sends full chunks (and, with `partial`, what is left) while fewer than the limit are in
  /// flight. With a cache, a new ask goes first in a *probe* (a chunk of up to
  /// ``Client/maxBatch`` asks looked up in the cache, in a task of its own); the asks the
  /// cache does not answer come back as misses, queued for requests of their own: a request
  /// carries only CEPs the cache does not hold, ``Client/maxBatch`` at a time.
  @usableFromInline
  func sendChunks(partial: Bool) {
    guard let cache else {
      while let ids = queues.nextUnsent(partial: partial, probe: false) {
        send(ids, through: nil)
      }
      return
    }
    while let ids = queues.nextUnsent(partial: partial, probe: true) {
      probe(ids, through: cachedChunk(cache))
    }
    while let ids = queues.nextMisses(partial: partial) {
      send(ids, through: cachedChunk(cache))
    }
  }

  /// Sends a request for the asks `ids` (through the cache's stand-ins and store, with one).
  private func send(_ ids: [Int32], through cached: CachedChunk?) {
    let numbers = slots.markSent(ids)
    let (client, gate) = (self.client, self.gate)
    queues.start(asks: ids.count, probe: false) { chunk in
      await ChunkRequest.outcome(
        of: ChunkOutcome(chunk: chunk, asks: ids, answers: [], cacheHits: 0),
        numbers: numbers, through: ChunkSender(client: client, gate: gate), cached: cached)
    }
  }

  /// Looks the asks `ids` up in the cache, in a task of its own.
  private func probe(_ ids: [Int32], through cached: CachedChunk) {
    let numbers = slots.markSent(ids)
    queues.start(asks: ids.count, probe: true) { chunk in
      var outcome = ChunkOutcome(chunk: chunk, asks: ids, answers: [], cacheHits: 0, probe: true)
      (outcome.answers, outcome.cacheHits) = await cached.probe(numbers)
      return outcome
    }
  }

  /// How the next chunk goes through `cache`; the first starts the run's edition check.
  private func cachedChunk(_ cache: AddressCache) -> CachedChunk {
    if let edition { return CachedChunk(cache: cache, edition: edition) }
    let task = RunEdition.check(cache, using: client, editionCheck)
    edition = task
    return CachedChunk(cache: cache, edition: task)
  }

  /// Applies the outcomes the chunks have posted so far, then sends the full chunks they
  /// made room for (or, for probes, left as misses).
  @usableFromInline
  func applyOutcomes() {
    var outcomes = queues.mailbox.take()
    guard !outcomes.isEmpty else { return }
    for index in outcomes.indices { apply(&outcomes[index]) }
    sendChunks(partial: false)
  }

  /// Returns once a chunk has posted its outcome (at once if one already has), or when the
  /// task is cancelled.
  @usableFromInline
  nonisolated(nonsending) func waitForAnOutcome() async {
    let mailbox = queues.mailbox
    if !mailbox.isEmpty || Task.isCancelled { return }
    await withTaskCancellationHandler {
      await mailbox.wait()
    } onCancel: {
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
    queues.landed(outcome)
    cacheHits += outcome.cacheHits
    if var found = outcome.fetched {
      outcome.fetched = nil
      // Each ask closes, kept in the memo; each address is moved out of `found`: its
      // reference count is touched once, for the memo's copy.
      if !distinctRows { memo.readAheadForgetting(outcome.asks.count) }
      slots.land(&found, on: outcome.asks) { answer, entry in keep(answer, entry: entry) }
      return
    }
    var failure: (error: CepisError, result: LookupResult)?
    var answers: [ChunkAnswer] = []
    swap(&answers, &outcome.answers)
    for (position, id) in outcome.asks.enumerated() {
      var taken = ChunkAnswer.missed
      swap(&taken, &answers[position])
      switch consume taken {
      case .found(let address):
        // The ask closes: a row read from now on is answered by the memo, or asks again.
        let answer = LookupResult(found: address)
        keep(answer, entry: slots.entry(of: id))
        slots.answer(id, with: answer)
      case .notFound:
        keep(.notFound, entry: slots.entry(of: id))
        slots.answer(id, with: .notFound)
      case .stale(let address):
        // Not kept: a later row with this CEP asks again.
        forget(ask: id)
        slots.answer(id, with: LookupResult(found: address))
      case .failed(let error):
        // Not kept: a later row with this CEP asks again. One result for the chunk's failure.
        if failure?.error != error { failure = (error, LookupResult(failure: error)) }
        forget(ask: id)
        slots.answer(id, with: failure?.result)
      case .missed:
        // The cache does not hold it: the ask stays open, queued for a request.
        slots[id].sent = false
        queues.queueMiss(id)
      }
    }
  }
}
