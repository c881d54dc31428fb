import CepisHTTP
import CepisSupport

// What a chunk of a `lookups` run carries between its task and its engine (`LookupAsks`):
// the outcome a chunk posts, the preload's batches, the cache's side of a chunk
// (`CachedChunk`), and the run's statistics.

/// What one iteration of a ``LookupStream`` has spent so far (`package`: the command line's
/// summary reports it).
@usableFromInline
package struct LookupStatistics: Sendable, Hashable {
  /// Batch requests sent (one per chunk; a request's retries are not counted).
  package var requests: Int
  /// CEPs the memo forgot to make room.
  package var memoEvictions: Int
  /// CEPs the cache answered fresh (of the live edition), with no request.
  package var cacheHits: Int
  /// Answers read from the cache in one pass at the start of the run (see
  /// `PreloadPass`); 0 when the run read the cache CEP by CEP.
  package var preloaded: Int
  /// CEPs looked up in the cache CEP by CEP (in probes), whether it held them or not.
  package var probed: Int
  /// The 429s the run met, its pauses and its pace (see `RateGate`).
  package var rateLimit: RateGate.Statistics

  /// Figures of an iteration (nothing spent by default).
  package init(
    requests: Int = 0, memoEvictions: Int = 0, cacheHits: Int = 0, preloaded: Int = 0,
    probed: Int = 0, rateLimit: RateGate.Statistics = RateGate.Statistics()
  ) {
    self.requests = requests
    self.memoEvictions = memoEvictions
    self.cacheHits = cacheHits
    self.preloaded = preloaded
    self.probed = probed
    self.rateLimit = rateLimit
  }
}

/// The answer for one ask of a chunk.
enum ChunkAnswer: Sendable {
  /// The address, fresh (from `/csv`, or the cache's of the live edition).
  case found(Address)
  /// The CEP does not exist.
  case notFound
  /// The chunk failed; a kept address of another edition (marked) stands in.
  case stale(Address)
  /// The chunk failed and nothing stands in.
  case failed(CepisError)
  /// A probe's: the cache does not hold the CEP for the live edition; a request must ask it.
  case missed
}

/// What one chunk's request ended with.
struct ChunkOutcome: Sendable {
  var chunk: Int
  var asks: [Int32]
  /// One per ask, in the same order (empty when `fetched` holds them).
  var answers: [ChunkAnswer]
  /// A request's answers as the decoder gave them, one per ask (`nil`: the CEP does not
  /// exist), when nothing else is to be said of them (no cache): landed without a
  /// ``ChunkAnswer`` each.
  var fetched: [Address?]? = nil
  /// CEPs the cache answered fresh.
  var cacheHits: Int
  /// Whether this was a probe (a look-up in the cache, no request).
  var probe = false
  /// Not a chunk's: a batch of the preload's answers, or its end.
  var preload: PreloadBatch?
}

extension ChunkOutcome {
  /// The outcome that carries `batch` of the preload.
  init(preload batch: PreloadBatch) {
    self.init(chunk: -1, asks: [], answers: [], cacheHits: 0, preload: batch)
  }
}

/// Answers of the preload's pass (see `PreloadPass`), in the file's order, or its end.
struct PreloadBatch: Sendable {
  var answers: [PreloadedAnswer]
  /// How many answers the whole pass holds.
  var total: Int
  /// Whether the pass is over: no batch follows (and this one holds no answer).
  var last = false
}

/// The cache's side of a run's chunks, run in each chunk's own task. A probe answers the
/// CEPs the cache holds for the live edition (an address, or "does not exist") and leaves the
/// rest as misses; a request asks `/csv` for misses only and stores its answers in one
/// transaction. When a request fails after its retries, a kept address of any edition stands
/// in for each of its CEPs (see `Client.standIn(for:liveEdition:)`); the rest fail. With no
/// edition known (the edition check failed and none was ever seen), nothing is read or
/// stored, but the stand-ins still apply.
struct CachedChunk: Sendable {
  let cache: AddressCache
  let edition: Task<RunEdition, Never>

  /// The cache's answers for `numbers` (`.missed` for the CEPs it does not hold fresh), and
  /// how many it answered. With no entry of the live edition in the cache when the run
  /// began (a fresh file, or a new edition), every CEP is a miss without a read.
  func probe(_ numbers: [Int]) async -> (answers: [ChunkAnswer], hits: Int) {
    let run = await edition.value
    guard let live = run.live, run.holdsLive else {
      return ([ChunkAnswer](repeating: .missed, count: numbers.count), 0)
    }
    let fresh = await cache.batchAnswers(for: numbers, edition: live)
    var hits = 0
    let answers = numbers.map { number -> ChunkAnswer in
      guard let kept = fresh[number] else { return .missed }
      hits += 1
      return kept.map(ChunkAnswer.found) ?? .notFound
    }
    // Within `lookupMany`'s call; the misses are reported by their chunk's request.
    if hits > 0 { Client.record(.cache(.hit, count: hits)) }
    return (answers, hits)
  }

  /// The answers for `numbers`: with a store other processes share, those whose claim this
  /// process won are asked for, and the others are awaited from their claimers (and asked
  /// for, when a claimer gives up or dies); otherwise all are asked for.
  func request(_ numbers: [Int], through sender: ChunkSender) async -> [ChunkAnswer] {
    guard let live = await edition.value.live else {
      return await ask(numbers, through: sender)
    }
    let mine = await cache.claim(numbers, edition: live)
    guard mine.count < numbers.count else { return await ask(numbers, through: sender) }
    let theirs = numbers.filter { !mine.contains($0) }
    let claimed = numbers.filter { mine.contains($0) }
    async let asked = claimed.isEmpty ? [] : ask(claimed, through: sender)
    let arrived = await cache.answersClaimedElsewhere(theirs, edition: live)
    let missing = theirs.filter { arrived[$0] == nil }
    let late = missing.isEmpty ? [] : await ask(missing, through: sender)
    var answers: [Int: ChunkAnswer] = [:]
    for (number, answer) in zip(claimed, await asked) { answers[number] = answer }
    for (number, answer) in zip(missing, late) { answers[number] = answer }
    var hits = 0
    for (number, kept) in arrived {
      answers[number] = kept.map(ChunkAnswer.found) ?? .notFound
      hits += 1
    }
    if hits > 0 { Client.record(.cache(.hit, count: hits)) }
    return numbers.map { answers[$0] ?? .missed }
  }

  /// The answers of a request for `numbers`, stored; or the kept addresses that stand in
  /// when it fails (and this process's claims on them given up).
  private func ask(_ numbers: [Int], through sender: ChunkSender) async -> [ChunkAnswer] {
    let live = await edition.value.live
    switch await ChunkRequest.fetch(numbers, through: sender, cacheMissed: true) {
    case .success(let found):
      if let live, !Task.isCancelled {
        await cache.storeBehind(
          zip(numbers, found).map { (cep: $0.0, address: $0.1) }, kind: .batch, edition: live)
      }
      return found.map { $0.map(ChunkAnswer.found) ?? .notFound }
    case .failure(let error):
      if let live { await cache.releaseClaims(numbers, edition: live) }
      let kept = Task.isCancelled ? [:] : await cache.anyEntries(for: numbers)
      var stale = 0
      let answers = numbers.map { number -> ChunkAnswer in
        guard let entry = kept[number],
          var address = Client.standIn(for: entry, liveEdition: live)
        else { return .failed(error) }
        address.geo = nil
        stale += 1
        return .stale(address)
      }
      if stale > 0 { Client.record(.cache(.stale, count: stale)) }
      return answers
    }
  }
}

/// Who sends a run's chunks: its client, through the run's ``RateGate``.
struct ChunkSender: Sendable {
  let client: Client
  let gate: RateGate
}

/// A chunk's request, run in its own task: `/csv` for its CEPs, through the cache with one.
enum ChunkRequest {
  /// `outcome` (the chunk and its asks) with the answers of a request for `numbers`.
  static func outcome(
    of outcome: ChunkOutcome, numbers: [Int], through sender: ChunkSender, cached: CachedChunk?
  ) async -> ChunkOutcome {
    var outcome = outcome
    if let cached {
      outcome.answers = await cached.request(numbers, through: sender)
    } else {
      switch await fetch(numbers, through: sender) {
      case .success(let found): outcome.fetched = found
      case .failure(let error):
        outcome.answers = [ChunkAnswer](repeating: .failed(error), count: numbers.count)
      }
    }
    return outcome
  }

  /// The answers of `/csv` for the CEPs `numbers`, in their order, or why there are none.
  /// With `cacheMissed`, the chunk's CEPs are reported as the cache's misses.
  static func fetch(
    _ numbers: [Int], through sender: ChunkSender, cacheMissed: Bool = false
  ) async -> Result<[Address?], CepisError> {
    let client = sender.client
    do {
      let found = try await client.observed(.lookupsChunk) {
        if cacheMissed { Client.record(.cache(.miss, count: numbers.count)) }
        Client.record(.chunkSent(size: numbers.count))
        let found = try await client.fetchChunk(numbers: numbers, gate: sender.gate)
        Client.record(.answered(source: "cepis"))
        return found
      }
      return .success(found)
    } catch let error as CepisError {
      return .failure(error)
    } catch is CancellationError {
      return .failure(.networkError(message: "cancelled"))
    } catch {
      return .failure(.networkError(message: "\(error)"))
    }
  }
}

/// What a run learns of its cache once, with its first chunk: the live edition (`nil` when
/// none is known), and whether the cache then held any entry of it. When it held none, the
/// run's probes answer every CEP as a miss without reading: entries another process stores
/// meanwhile are not looked for (they cost requests, never a wrong answer), and the run's own
/// answers are in its memo.
struct RunEdition: Sendable {
  var live: String?
  var holdsLive: Bool

  /// Starts learning the run's edition of `cache` (`check`: how; see
  /// ``LookupAsks/EditionCheck``).
  static func check(
    _ cache: AddressCache, using client: Client, _ check: LookupAsks.EditionCheck
  ) -> Task<RunEdition, Never> {
    Task {
      let live =
        switch check {
        case .refresh: await cache.refreshEdition(using: client)
        case .live: await cache.liveEdition(using: client)
        }
      guard let live else { return RunEdition(live: nil, holdsLive: false) }
      return RunEdition(live: live, holdsLive: await cache.holdsEntries(of: live))
    }
  }
}

/// Where chunk requests leave their outcomes for the engine: a locked list, and one waiter.
/// A ``RowPump`` (rows came) and a linger timer wake the waiter through ``interrupt()``.
@usableFromInline
final class ChunkMailbox: Sendable {
  private struct State: Sendable {
    var outcomes: [ChunkOutcome] = []
    var waiter: CheckedContinuation<Void, Never>?
    var interrupted = false
  }

  private let state = LockedValue(State())

  /// Leaves an outcome, waking the waiter.
  func post(_ outcome: ChunkOutcome) {
    let waiter = state.withLock { state in
      state.outcomes.append(outcome)
      defer { state.waiter = nil }
      return state.waiter
    }
    waiter?.resume()
  }

  /// Whether no outcome waits to be taken.
  var isEmpty: Bool { state.withLock { $0.outcomes.isEmpty } }

  /// The outcomes left so far, removed.
  func take() -> [ChunkOutcome] {
    state.withLock { state in
      defer { state.outcomes.removeAll() }
      return state.outcomes
    }
  }

  /// Returns once an outcome is waiting, or after ``interrupt()``.
  func wait() async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      let now = state.withLock { state in
        if !state.outcomes.isEmpty || state.interrupted {
          state.interrupted = false
          return true
        }
        state.waiter = continuation
        return false
      }
      if now { continuation.resume() }
    }
  }

  /// Wakes the waiter (or the next one to wait): the waiting task was cancelled, rows came,
  /// or a linger is over.
  @usableFromInline
  func interrupt() {
    let waiter = state.withLock { state in
      defer { state.waiter = nil }
      if state.waiter == nil { state.interrupted = true }
      return state.waiter
    }
    waiter?.resume()
  }
}
