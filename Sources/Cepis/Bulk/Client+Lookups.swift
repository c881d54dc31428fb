/// One answer of a ``LookupStream``: a row, as given, and the result for its CEP.
public struct LookupAnswer<Row: Sendable>: Sendable {
  /// The row, exactly as the input sequence gave it.
  public let row: Row
  /// The answer for the row's CEP, shared with every other row of that CEP.
  @usableFromInline package let stored: LookupResult
  /// Whether this row's CEP opened an ask: it was neither in the memo nor asked already. Every
  /// distinct CEP of a run has at least one such row (more when the memo forgot it between
  /// two), so the command line counts distinct CEPs on these rows alone.
  @usableFromInline package let openedAsk: Bool

  /// Inlinable: made for every row by the engine, specialised in the caller's module.
  @inlinable
  package init(row: Row, stored: LookupResult, openedAsk: Bool = false) {
    self.row = row
    self.stored = stored
    self.openedAsk = openedAsk
  }

  /// The address (`.success(nil)`: the CEP does not exist), or why there is none:
  /// ``CepisError/invalidCEP(_:)`` for a malformed CEP (never sent), or the error of the
  /// request that carried this row's CEP after its retries.
  public var result: Result<Address?, CepisError> { stored.result }

  /// The address, or `nil` when the CEP does not exist or the lookup failed.
  public var address: Address? { stored.address }
}

/// The answer for one CEP, held once in the memo and handed to every row of that CEP. A found
/// address is one reference (a batch row's fields live in one buffer), so a row's answer
/// costs a retain, not a copy of an address's strings, and a memo entry is no larger than an
/// ``Address``; a failure, rare, is boxed to keep it so.
@usableFromInline
package enum LookupResult: Sendable {
  /// The address.
  case found(Address)
  /// The CEP does not exist.
  case notFound
  /// The lookup failed (or the CEP is malformed).
  case failed(LookupFailure)

  /// A found address.
  package init(found address: Address) { self = .found(address) }

  /// A failure.
  package init(failure error: CepisError) { self = .failed(LookupFailure(error)) }

  /// The address, when found.
  package var address: Address? {
    if case .found(let address) = self { return address }
    return nil
  }

  /// Why there is no answer, when the lookup failed (or the CEP is malformed).
  package var error: CepisError? {
    if case .failed(let failure) = self { return failure.error }
    return nil
  }

  /// The answer as a `Result`.
  package var result: Result<Address?, CepisError> {
    switch self {
    case .found(let address): .success(address)
    case .notFound: .success(nil)
    case .failed(let failure): .failure(failure.error)
    }
  }
}

/// A ``LookupResult``'s error, boxed: one per failed chunk, shared by its rows.
@usableFromInline
package final class LookupFailure: Sendable {
  /// The error.
  package let error: CepisError

  init(_ error: CepisError) { self.error = error }
}

/// How a ``LookupStream`` spends requests and memory.
public struct BulkOptions: Sendable, Hashable {
  /// The most distinct CEPs whose answers the stream keeps, so that a CEP that comes back is
  /// not asked again (the least recently used is forgotten first). Default 100,000, about
  /// 14 MiB: an answer kept costs ~140 bytes (its row of the batch answer it came in, an entry
  /// and a slot of the memo's table). 0 keeps none: a
  /// CEP is then asked once for the rows that wait for it together, and again when it comes
  /// back later.
  public var memoCapacity: Int
  /// The most rows read ahead of the first row not yet answered. Only full chunks of
  /// ``Client/maxBatch`` CEPs are sent while rows keep coming; a partial chunk goes when the
  /// input ends, or when the read-ahead is full and the first row waits for a CEP no request
  /// carries yet. Default 8,000: 16 chunks.
  public var readAhead: Int
  /// Batch requests in flight at once. Default 4.
  public var chunksInFlight: Int
  /// How long, in seconds, rows of an asynchronous input must stop coming before the rows
  /// already read are asked in a partial chunk (rows from a queue, a socket, a form: a pause
  /// never holds answers for longer). Rows that keep coming within it fill whole chunks. A
  /// plain `Sequence` never pauses, and ignores it. Default 0.05; 0 sends a partial chunk at
  /// every pause.
  public var linger: Double
  /// How long, in seconds, a run keeps asking while the API answers nothing but 429 (rate
  /// limited) before the rows still waiting fail with ``CepisError/rateLimited(message:retryAfter:)``.
  /// Until then a 429 is no failure: every request of the run pauses until its
  /// `Retry-After`, the requests in flight shrink and the run paces itself to what the API
  /// lets through, and the refused chunk is asked again. Default 600 (ten minutes), so that
  /// an API that never recovers cannot hang a job.
  public var rateLimitPatience: Double
  /// About how many rows the input holds, when the caller knows (the command line, from a
  /// file's size; `lookupMany`, its count); 0 when it does not. With a file cache that holds
  /// no more answers of the live edition than this (and than ``memoCapacity``), the run reads
  /// them all at its start in one pass, instead of CEP by CEP as rows come.
  package var expectedRows = 0
  /// Reads an inline input with `next()`, as on the systems before `next(isolation:)`
  /// (macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2), where that is the only way: tests run
  /// that path on every system.
  var readsWithPlainNext = false

  /// Options with the defaults above; values below 1 (0 for `memoCapacity` and `linger`) are
  /// raised.
  public init(
    memoCapacity: Int = 100_000, readAhead: Int = 8_000, chunksInFlight: Int = 4,
    linger: Double = 0.05, rateLimitPatience: Double = 600
  ) {
    self.memoCapacity = max(0, memoCapacity)
    self.readAhead = max(1, readAhead)
    self.chunksInFlight = max(1, chunksInFlight)
    self.linger = linger.isNaN ? 0 : max(0, linger)
    self.rateLimitPatience = rateLimitPatience.isNaN ? 600 : max(0, rateLimitPatience)
  }
}

extension Client {
  /// Looks up the CEP of every row of `rows` through the batch endpoint, answering each row in
  /// order, as a stream.
  ///
  /// ```swift
  /// for try await answer in client.lookups(customers, cep: { $0.cep }) {
  ///   switch answer.result {
  ///   case .success(let address?): save(answer.row, address)
  ///   case .success(nil): markUnknown(answer.row)        // the CEP does not exist
  ///   case .failure(let error): retryLater(answer.row, error)
  ///   }
  /// }
  /// ```
  ///
  /// - Exactly one answer per row, in the rows' order. A malformed CEP is
  ///   ``CepisError/invalidCEP(_:)`` for its row and costs no request.
  /// - Each distinct CEP is asked once while the memo holds its answer
  ///   (``BulkOptions/memoCapacity``); rows are read lazily, and only full chunks of
  ///   ``maxBatch`` CEPs go out while rows keep coming — a partial one at the end, or when the
  ///   read-ahead (``BulkOptions/readAhead``) is full and the first row waits for it.
  ///   ``BulkOptions/chunksInFlight`` requests run at once.
  /// - Rows are matched to answers by their own CEP, never by position: a server that
  ///   reorders, omits or repeats rows cannot put an address on the wrong row.
  /// - A chunk that still fails after its retries gives `.failure(error)` to its own rows
  ///   only; the stream goes on, and those CEPs are asked again if they come back.
  /// - With a ``cache``, each iteration asks `/health` once, when its first chunk goes out,
  ///   for the live DNE edition. A chunk's CEPs that the cache holds for that edition (an address,
  ///   or "does not exist") are answered with no request; only the others go to `/csv` (none at all
  ///   when every CEP is held), and their answers are stored, whole chunks to a transaction (a file
  ///   cache writes up to 32 chunks in one, within a second, and everything before the stream ends
  ///   or the cache is read again). When a chunk fails after its retries, a kept address of any
  ///   edition answers its CEP instead of the error, marked by ``Address/staleEdition`` when it is
  ///   not of the live edition; a kept "does not exist" is never served so (the row gets the
  ///   error). With no edition known (`/health` failed and none was ever seen), nothing is read
  ///   from or stored in the cache but those stand-ins. Without a cache, no `/health` request is
  ///   made.
  /// - The stream throws only when `rows` throws (after the answers of every row read before
  ///   it) or the task is cancelled. Leaving the loop early cancels the requests in flight
  ///   and reads no more rows.
  /// - Memory depends on the read-ahead and the memo, never on the number of rows: a slow
  ///   consumer stops the reading.
  ///
  /// The batch endpoint carries no coordinates (every ``Address/geo`` is `nil`), and
  /// ``fallbacks`` are not asked (the public services have no batch endpoint).
  ///
  /// - Parameters:
  ///   - rows: The rows, of any `Sendable` type, read as the stream is consumed.
  ///   - cep: Picks the CEP out of a row (masked or not; surrounding spaces are ignored).
  ///   - options: Memo, read-ahead and requests in flight.
  public func lookups<Rows: AsyncSequence & Sendable>(
    _ rows: Rows, cep: @escaping @Sendable (Rows.Element) -> String,
    options: BulkOptions = BulkOptions()
  ) -> LookupStream<Rows> where Rows.Element: Sendable {
    LookupStream(client: self, rows: rows, key: .text(cep), options: options)
  }

  /// ``lookups(_:cep:options:)->LookupStream<Rows>`` for rows held in a plain sequence — an array
  /// of your own rows, a slice of one: the same stream, its rows read in order (an array's by
  /// index, with no asynchronous call per row).
  ///
  /// ```swift
  /// let customers: [Customer] = try loadCustomers()
  /// for try await answer in client.lookups(customers, cep: { $0.cep }) { … }
  /// ```
  ///
  /// The rules of ``lookups(_:cep:options:)->LookupStream<Rows>`` apply.
  public func lookups<Rows: Sequence & Sendable>(
    _ rows: Rows, cep: @escaping @Sendable (Rows.Element) -> String,
    options: BulkOptions = BulkOptions()
  ) -> LookupStream<AsyncRows<Rows>> where Rows.Element: Sendable {
    LookupStream(
      client: self, rows: AsyncRows(rows), key: .text(cep), options: options.reading(rows))
  }

  /// ``lookups(_:cep:options:)->LookupStream<Rows>`` for rows whose CEP the caller holds as a
  /// number already (`nil`: the row has none, and fails as an empty CEP does): no string per row to
  /// build and parse again. The command line's `enrich`, whose reader parses each row's CEP.
  package func lookups<Rows: AsyncSequence & Sendable>(
    _ rows: Rows, cepNumber: @escaping @Sendable (Rows.Element) -> Int?,
    options: BulkOptions = BulkOptions()
  ) -> LookupStream<Rows> where Rows.Element: Sendable {
    LookupStream(client: self, rows: rows, key: .number(cepNumber), options: options)
  }

  /// Looks up every CEP of `ceps` through the batch endpoint, as a stream of answers in the
  /// same order; the row of each answer is the CEP string as given.
  ///
  /// ```swift
  /// for try await answer in client.lookups(["01001-000", "oops", "20040020"]) {
  ///   print(answer.row, answer.result)
  /// }
  /// ```
  ///
  /// The rules of ``lookups(_:cep:options:)->LookupStream<Rows>`` apply.
  public func lookups<CEPs: Sequence & Sendable>(
    _ ceps: CEPs, options: BulkOptions = BulkOptions()
  ) -> LookupStream<AsyncRows<CEPs>> where CEPs.Element == String {
    LookupStream(
      client: self, rows: AsyncRows(ceps), key: .cepStrings, options: options.reading(ceps))
  }
}

extension Client {
  /// Looks up every CEP an async sequence of strings yields (a file's lines, a database
  /// cursor), as a stream of answers in the same order; the row of each answer is the CEP
  /// string as given.
  ///
  /// The rules of ``lookups(_:cep:options:)->LookupStream<Rows>`` apply.
  public func lookups<CEPs: AsyncSequence & Sendable>(
    _ ceps: CEPs, options: BulkOptions = BulkOptions()
  ) -> LookupStream<CEPs> where CEPs.Element == String {
    LookupStream(client: self, rows: ceps, key: .cepStrings, options: options)
  }
}

/// A `Sequence` read as an `AsyncSequence`: the rows of `lookups(_:options:)` and
/// `lookups(_:cep:options:)` given a plain sequence (of CEP strings, or of your own rows).
///
/// The stream's engine reads an array's rows by index, with no asynchronous call per row;
/// any other base sequence through its iterator, with an inlinable asynchronous call per row
/// (on the caller's executor: one `swift_task_switch` check a row, no hop).
public struct AsyncRows<Base: Sequence & Sendable>: AsyncSequence, Sendable
where Base.Element: Sendable {
  /// A row of the base sequence.
  public typealias Element = Base.Element
  @usableFromInline let base: Base

  /// Reads `base`, one element a call.
  @inlinable
  public init(_ base: Base) { self.base = base }

  /// An iterator over the base sequence.
  @inlinable
  public func makeAsyncIterator() -> Iterator { Iterator(base: base.makeIterator()) }

  /// The iterator of ``AsyncRows``: the base sequence's, one element a call.
  public struct Iterator: AsyncIteratorProtocol {
    @usableFromInline var base: Base.Iterator

    @inlinable
    init(base: Base.Iterator) { self.base = base }

    /// The next element of the base sequence, or `nil` at its end.
    @inlinable
    public mutating func next() async -> Base.Element? { base.next() }

    /// The next element, on the caller's actor (no executor hop per element).
    @inlinable
    public mutating func next(isolation actor: isolated (any Actor)?) async -> Base.Element? {
      base.next()
    }
  }
}

/// The answers of ``Client/lookups(_:cep:options:)->LookupStream<Rows>``, one per row, in the rows'
/// order.
///
/// Iterate it once: each iteration reads `rows` afresh and sends its own requests.
public struct LookupStream<Rows: AsyncSequence & Sendable>: AsyncSequence, Sendable
where Rows.Element: Sendable {
  /// A row and its result.
  public typealias Element = LookupAnswer<Rows.Element>

  let client: Client
  let rows: Rows
  let key: CEPKey<Rows.Element>
  let options: BulkOptions

  /// Starts reading `rows`; requests go out as the iterator is advanced.
  public func makeAsyncIterator() -> Iterator {
    Iterator(engine: LookupEngine(client: client, rows: rows, key: key, options: options))
  }

  /// The iterator of a ``LookupStream``. Dropping it (leaving the loop) cancels the requests
  /// in flight.
  public struct Iterator: AsyncIteratorProtocol {
    @usableFromInline let engine: LookupEngine<Rows>

    /// What this iteration has spent so far.
    package var statistics: LookupStatistics { engine.statistics }

    /// The gate the iteration's requests go through: its figures may be read from any task
    /// (the command line's progress line does, while the iteration waits on a rate limit).
    package var rateGate: RateGate { engine.asks.gate }

    /// The next row's answer; `nil` after the last row.
    ///
    /// - Throws: what `rows` threw (after every row read before it was answered), or
    ///   `CancellationError`.
    @inlinable
    public mutating func next() async throws -> LookupAnswer<Rows.Element>? {
      if let answer = engine.nextReady() { return answer }
      return try await engine.next(isolation: nil)
    }

    /// The next row's answer, computed on the caller's actor (`for try await` passes it): a
    /// loop on the main actor does not hop to another executor for every row.
    ///
    /// - Throws: what `rows` threw (after every row read before it was answered), or
    ///   `CancellationError`.
    @inlinable
    public mutating func next(isolation actor: isolated (any Actor)?) async throws
      -> LookupAnswer<Rows.Element>?
    {
      if let answer = engine.nextReady() { return answer }
      return try await engine.next(isolation: actor)
    }
  }
}

extension BulkOptions {
  /// These options for a run over the plain sequence `rows`: an array (any sequence that knows
  /// its length) says how many rows the run reads.
  fileprivate func reading(_ rows: some Sequence) -> BulkOptions {
    var options = self
    options.expectedRows = max(expectedRows, rows.underestimatedCount)
    return options
  }
}
