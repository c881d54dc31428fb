import CepisSupport

/// The cache preload pass of a ``LookupAsks``: the task that reads every answer a file cache
/// holds of the live edition in one pass, the answers it read (a CEP table of positions and
/// the answers), the asks that wait for it, and the uses of its answers still to note in the
/// file.
///
/// When a run expects at least ``minimumRows`` rows and a file cache holds
/// no more answers of the live edition than the rows expected and the memo's capacity (the
/// rows expected alone, for distinct rows), they are all read in one pass (a scan costs a
/// fraction of a look-up per CEP), so that a row whose CEP they hold is answered from them,
/// before and without the memo, with no look-up in the file; a CEP they lack is asked as
/// usual. The edition check is the run's own (the first chunk's). Each answer so read is a
/// cache hit, and its use is noted in the file, when a row first takes it. Anything else (no
/// cache, a memory cache, too many answers, no edition known, a file that cannot be read)
/// leaves the run as it was.
///
/// The pass runs on the cache's thread while the rows are read: its answers land
/// ``batchSize`` at a time, in the file's order, through the mailbox, as a chunk's do. Until
/// it ends, a CEP that neither the memo nor the answers landed so far hold opens an ask that
/// waits for the pass (the read-ahead bounds how many rows wait); when the pass ends, the asks
/// it did not answer go to the cache CEP by CEP, then to the network, as usual. A run over
/// the file a cache was filled from meets its CEPs in about the order they were stored, so
/// its rows wait little.
///
/// A value stored inline in its ``LookupAsks`` (whose type comment says why its accesses
/// skip the exclusivity checks): a row's look-up costs one load when nothing was preloaded.
struct PreloadPass {
  /// One answer of the pass: whether a row took it yet (a cache hit, counted once), and
  /// whether the first row to take it is to note its use in the file.
  private struct Preloaded {
    var result: LookupResult
    var stale: Bool
    var taken = false
  }

  private let cache: AddressCache?
  /// The pass's task while it reads; `nil` before and after.
  private var task: Task<Void, Never>?
  /// The asks opened while the pass reads, in order: they wait for it, and those it does
  /// not answer are queued when it ends. A slot may be listed twice once reused: only a slot
  /// that still ``AskSlot/awaitsPreload`` counts.
  private var awaiting: [Int32] = []
  /// Each CEP read by the pass: its position in `answers`; empty when nothing was read so.
  /// A row whose CEP is here takes its answer from here, before and instead of the memo: the
  /// pass's answers are held for the whole run anyway, and one probe of this table is all a
  /// row costs.
  private var positions = CEPTable()
  private var answers: [Preloaded] = []
  /// CEPs whose use is to be noted in the file (``noteUses(flush:)``).
  private var used: [Int] = []
  /// Answers rows took (each a cache hit, counted once).
  private(set) var hits = 0

  /// The fewest rows a run must expect for the pass to read a whole edition.
  static let minimumRows = 4 * Client.maxBatch

  /// How many answers of the pass land on the asks at a time.
  static let batchSize = 4_096

  /// The pass of a run over `cache` (none: nothing to read).
  init(cache: AddressCache?) {
    self.cache = cache
  }

  /// Whether the pass is reading: new asks wait for it.
  var isReading: Bool { task != nil }

  /// How many answers the pass has read.
  var count: Int { answers.count }

  /// Starts the pass over `cache`'s answers of the run's `edition`, at most `limit` of them,
  /// posted to `mailbox`.
  mutating func start(
    from cache: AddressCache, edition: Task<RunEdition, Never>, limit: Int,
    into mailbox: ChunkMailbox
  ) {
    task = Task {
      await PreloadPass.read(from: cache, edition: edition, limit: limit, into: mailbox)
    }
  }

  /// The pass: its batches, then its end, posted to `mailbox`; stops between two batches
  /// when the task is cancelled.
  private static func read(
    from cache: AddressCache, edition: Task<RunEdition, Never>, limit: Int,
    into mailbox: ChunkMailbox
  ) async {
    let run = await edition.value
    if let live = run.live, run.holdsLive, !Task.isCancelled {
      let stopped = LockedValue(false)
      await withTaskCancellationHandler {
        _ = await cache.allBatchAnswers(edition: live, limit: limit, batchSize: batchSize) {
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

  /// Notes that the ask `slot` waits for the pass.
  mutating func noteWaiting(_ slot: Int32) { awaiting.append(slot) }

  /// The pass is over: the asks that waited for it (some maybe answered since, or reused).
  mutating func end() -> [Int32] {
    task = nil
    defer { awaiting = [] }
    return awaiting
  }

  /// Keeps `answer`, read by the pass (`total`: how many the whole pass holds); its position.
  mutating func add(_ answer: PreloadedAnswer, total: Int) -> Int {
    if answers.isEmpty {
      positions = CEPTable(capacity: total)
      answers.reserveCapacity(total)
    }
    let index = answers.count
    positions.set(Int32(index), for: answer.cep)
    answers.append(
      Preloaded(
        result: answer.address.map { LookupResult(found: $0) } ?? .notFound,
        stale: answer.stale))
    return index
  }

  /// The position of `cep`'s answer, when the pass read one.
  func position(of cep: Int) -> Int? {
    guard positions.count > 0, let index = positions.value(for: cep) else { return nil }
    return Int(index)
  }

  /// The answer `index`, for a row with CEP `cep`: the first row to take it counts a cache
  /// hit and, when its recency is out of date, queues its use.
  mutating func take(_ index: Int, cep: Int) -> LookupResult {
    if !answers[index].taken {
      answers[index].taken = true
      hits += 1
      if answers[index].stale {
        used.append(cep)
        noteUses(flush: false)
      }
    }
    return answers[index].result
  }

  /// Hands the CEPs whose use is due to the cache, a few hundred at a time (all with `flush`).
  mutating func noteUses(flush: Bool) {
    guard let cache, used.count >= (flush ? 1 : 256) else { return }
    cache.noteUsed(used)
    used.removeAll(keepingCapacity: true)
  }

  /// Stops the pass (its task cancelled; its answers landed so far are kept).
  mutating func stop() {
    task?.cancel()
    task = nil
  }

  /// Cancels the pass's task (the end of its engine).
  func cancel() { task?.cancel() }
}
