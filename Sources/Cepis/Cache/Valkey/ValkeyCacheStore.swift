#if Valkey
  import CepisSupport
  import Foundation
  import NIOCore
  import Valkey

  /// The store of ``AddressCache/valkey(_:keyPrefix:entryTimeToLive:operationTimeout:revalidateEvery:onWarning:)``:
  /// the entries in a Valkey (or Redis) server that a fleet of processes shares, through a
  /// `ValkeyClient` the caller owns and runs.
  ///
  /// - Keys and values are ``ValkeyKeys``' and ``ValkeyEntryFormat``'s: an entry per CEP and
  ///   edition, each with the entry time-to-live, so that old editions leave by themselves.
  /// - A chunk's reads are one round trip (`MGET` per edition held, pipelined), and so are its
  ///   writes (a `SET … EX` per entry, pipelined; a batch entry with `NX`, so that it never
  ///   replaces a single entry of its edition).
  /// - Every operation has a deadline (`operationTimeout`). A failure or a deadline passed
  ///   starts an outage: one warning, and for the next `retryInterval` every operation fails at
  ///   once (the cache asks the network); then the next operation tries the server again, and
  ///   the first that succeeds ends the outage. A server that is down, killed, paused or
  ///   answering garbage therefore costs a lookup at most one deadline per interval, and never
  ///   a row.
  ///
  /// The cache runs every operation on its own thread (``CacheStore/waitsForIO``), which waits
  /// here for the client's answer: the client's work runs on its event loops and the
  /// cooperative pool, never on the waiting thread.
  @available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *)
  final class ValkeyCacheStore: CacheStore {
    /// The server: every operation waits for it.
    var waitsForIO: Bool { true }

    private let client: ValkeyClient
    let keys: ValkeyKeys
    /// Seconds every key lives after it is written.
    let entryTimeToLive: Int
    /// The longest an operation waits for the server.
    let operationTimeout: TimeInterval
    /// How long an outage lets every operation fail at once before the server is tried again.
    let retryInterval: TimeInterval
    private let health: ValkeyOutage
    /// Where the tasks that wait for the server run: off the cooperative pool.
    private let executor = QueueTaskExecutor(label: "cepis-valkey-cache")

    /// A store on `client` under `keyPrefix`.
    init(
      client: ValkeyClient, keyPrefix: String, entryTimeToLive: TimeInterval,
      operationTimeout: TimeInterval, retryInterval: TimeInterval = 1,
      warn: @escaping @Sendable (String) -> Void
    ) {
      self.client = client
      keys = ValkeyKeys(prefix: keyPrefix)
      self.entryTimeToLive = max(1, Int(entryTimeToLive.isFinite ? entryTimeToLive : 1))
      self.operationTimeout = operationTimeout.isFinite ? max(0.001, operationTimeout) : 1
      self.retryInterval = retryInterval
      health = ValkeyOutage(prefix: keyPrefix, now: { Date() }, warn: warn)
    }

    // MARK: Reads

    func entries(for ceps: [Int], now: Date) throws -> [Int: CacheEntry] {
      guard !ceps.isEmpty else { return [:] }
      let editions = try storedEditions().map(\.edition)
      guard !editions.isEmpty else { return [:] }
      let commands: [any ValkeyCommand] = editions.map { read(ceps, of: $0) }
      let replies = try run { [client] in await client.execute(commands) }
      var found: [Int: CacheEntry] = [:]
      var unreadable = 0
      for (edition, reply) in zip(editions, replies) {
        let values = try checked { try reply.get().decode(as: [ByteBuffer?].self) }
        unreadable += try merge(values, ceps: ceps, edition: edition, into: &found)
      }
      if unreadable > 0 { health.unreadableValues() }
      return found
    }

    /// One `MGET` of the edition's keys: a bulk chunk's read is one round trip.
    func entries(for ceps: [Int], of edition: String, now: Date) throws -> [Int: CacheEntry] {
      guard !ceps.isEmpty else { return [:] }
      let command = read(ceps, of: edition)
      let reply = try run { [client] in try await client.execute(command) }
      return try entries(reply, ceps: ceps, edition: edition)
    }

    /// Awaited in the caller's task: a lookup's or a chunk's read goes from the task to the
    /// client and back, with no thread of the cache's in between.
    var readsAwaiting: Bool { true }

    func entriesAwaiting(for ceps: [Int], of edition: String, now: Date) async throws
      -> [Int: CacheEntry]
    {
      guard !ceps.isEmpty else { return [:] }
      let command = read(ceps, of: edition)
      let reply = try await runAwaiting { [client] in try await client.execute(command) }
      return try entries(reply, ceps: ceps, edition: edition)
    }

    /// The read of `ceps`' entries of `edition`: one `MGET`.
    private func read(_ ceps: [Int], of edition: String) -> MGET {
      MGET(keys: ceps.map { ValkeyKey(keys.entry($0, edition: edition)) })
    }

    /// The entries a ``read(_:of:)`` of `ceps` answered.
    private func entries(
      _ reply: RESPToken.Array, ceps: [Int], edition: String
    ) throws -> [Int: CacheEntry] {
      let values = try checked { try reply.decode(as: [ByteBuffer?].self) }
      var found: [Int: CacheEntry] = [:]
      if try merge(values, ceps: ceps, edition: edition, into: &found) > 0 {
        health.unreadableValues()
      }
      return found
    }

    /// Adds the entries `values` (one per CEP of `ceps`, of `edition`) hold to `found`, where
    /// ``prefers(_:over:)`` says; returns how many values were not Cepis's.
    private func merge(
      _ values: [ByteBuffer?], ceps: [Int], edition: String, into found: inout [Int: CacheEntry]
    ) throws -> Int {
      guard values.count == ceps.count else {
        throw health.failed(ValkeyStoreFailure.unexpectedReply, retryInterval: retryInterval)
      }
      var unreadable = 0
      var decoder = ValkeyValueDecoder(valueSizes: values.lazy.compactMap { $0?.readableBytes })
      for (cep, value) in zip(ceps, values) {
        guard let value else { continue }
        let read = value.withUnsafeReadableBytes { raw in
          raw.withMemoryRebound(to: UInt8.self) { decoder.decode($0, cep: cep, edition: edition) }
        }
        guard let entry = read else {
          unreadable += 1
          continue
        }
        if let held = found[cep], !Self.prefers(entry, over: held) { continue }
        found[cep] = entry
      }
      return unreadable
    }

    /// Of two entries of a CEP in different editions, the one a store that keeps one entry
    /// per CEP would hold: the one stored last; at the same moment, the later edition.
    static func prefers(_ entry: CacheEntry, over held: CacheEntry) -> Bool {
      if entry.storedAt != held.storedAt { return entry.storedAt > held.storedAt }
      return entry.edition > held.edition
    }

    /// The editions the hash lists whose entries may still live, newest first.
    private func storedEditions() throws -> [(edition: String, storedAt: Date)] {
      let reply = try run { [client, keys] in
        try await client.execute(HGETALL(ValkeyKey(keys.editions)))
      }
      var editions: [(edition: String, storedAt: Date)] = []
      for (field, value) in reply {
        let edition = try checked { try field.decode(as: String.self) }
        let millis = try checked { try value.decode(as: String.self) }
        guard let millis = Int64(millis) else { throw ValkeyStoreFailure.unexpectedReply }
        editions.append((edition, Date(timeIntervalSince1970: Double(millis) / 1_000)))
      }
      return editions.sorted { $0.storedAt > $1.storedAt }
    }

    /// Whether the editions hash lists `edition`: entries of it were stored within the
    /// time-to-live of the hash (refreshed at each store), though they may have expired since.
    func hasEntries(of edition: String) throws -> Bool {
      try storedEditions().contains { $0.edition == edition }
    }

    func editionMark() throws -> EditionMark? {
      let value = try run { [client, keys] in
        try await client.execute(GET(ValkeyKey(keys.live)))
      }
      guard let value else { return nil }
      guard let mark = EditionMark(valkeyValue: String(value)[...]) else {
        health.unreadableValues()
        return nil
      }
      return mark
    }

    // MARK: Writes

    func store(_ entries: [CacheEntry], liveEdition: String, now: Date) throws {
      var commands: [any ValkeyCommand] = []
      commands.reserveCapacity(entries.count + 2)
      var editions: [String: Date] = [:]
      for entry in entries {
        guard let value = ValkeyEntryFormat.encode(entry) else { continue }
        commands.append(
          SET(
            ValkeyKey(keys.entry(entry.cep, edition: entry.edition)), value: value,
            condition: entry.kind == .batch ? .nx : nil,
            expiration: .seconds(entryTimeToLive)))
        editions[entry.edition] = max(editions[entry.edition] ?? entry.storedAt, entry.storedAt)
      }
      guard !commands.isEmpty else { return }
      let data = editions.map { edition, storedAt in
        HSET<String, String>.Data(
          field: edition, value: String(Int64((storedAt.timeIntervalSince1970 * 1_000).rounded())))
      }
      commands.append(HSET(ValkeyKey(keys.editions), data: data))
      commands.append(EXPIRE(ValkeyKey(keys.editions), seconds: entryTimeToLive))
      let pipeline = commands
      let replies = try run { [client] in await client.execute(pipeline) }
      for reply in replies { _ = try checked { try reply.get() } }
    }

    func setEditionMark(_ mark: EditionMark) throws {
      _ = try run { [client, keys, entryTimeToLive] in
        try await client.execute(
          SET(
            ValkeyKey(keys.live), value: mark.valkeyValue,
            expiration: .seconds(entryTimeToLive)))
      }
    }

    /// Nothing: the server's own eviction (`maxmemory-policy`) and the time-to-live decide what
    /// leaves; a use is not written back.
    func noteUsed(_ ceps: some Collection<Int>, now: Date) {}

    /// `false`, delivering nothing: a chunk's read is one round trip, as fast as a pass.
    func allBatchAnswers(
      edition: String, limit: Int, now: Date, batchSize: Int,
      deliver: (_ answers: [PreloadedAnswer], _ total: Int) -> Bool
    ) throws -> Bool { false }

    // MARK: Claims: one ask per CEP across the fleet

    /// Not grouped: other processes may wait on a chunk's answers.
    var groupsWrites: Bool { false }

    /// Held: the fleet asks each CEP once.
    var holdsClaims: Bool { true }

    /// `SET P~claim:<edition>:<cep> 1 NX EX seconds` for each CEP, in one transaction
    /// (`MULTI`/`EXEC`): two processes that claim the same chunk at once never split it, one
    /// wins it all.
    func claim(_ ceps: [Int], edition: String, seconds: Int) throws -> Set<Int> {
      guard !ceps.isEmpty else { return [] }
      let commands: [any ValkeyCommand] = ceps.map { cep in
        SET(
          ValkeyKey(keys.claim(cep, edition: edition)), value: "1", condition: .nx,
          expiration: .seconds(max(1, seconds)))
      }
      let replies = try run { [client] in try await client.transaction(commands) }
      var claimed: Set<Int> = []
      for (cep, reply) in zip(ceps, replies) {
        let token = try checked { try reply.get() }
        // `OK` when set, a null when another process holds the claim.
        if (try? token.decode(as: String?.self)) != nil { claimed.insert(cep) }
      }
      return claimed
    }

    func claimsHeld(_ ceps: [Int], edition: String) throws -> Set<Int> {
      guard !ceps.isEmpty else { return [] }
      let keys = ceps.map { ValkeyKey(self.keys.claim($0, edition: edition)) }
      let reply = try run { [client] in try await client.execute(MGET(keys: keys)) }
      let values = try checked { try reply.decode(as: [ByteBuffer?].self) }
      return Set(zip(ceps, values).compactMap { $0.1 == nil ? nil : $0.0 })
    }

    func releaseClaims(_ ceps: [Int], edition: String) throws {
      guard !ceps.isEmpty else { return }
      let keys = ceps.map { ValkeyKey(self.keys.claim($0, edition: edition)) }
      _ = try run { [client] in try await client.execute(UNLINK(keys: keys)) }
    }

    /// `SET P~claim:health 1 NX EX seconds`: of processes that check the edition at once,
    /// one asks `/health`, the others wait for the mark it records.
    func claimEditionCheck(seconds: Int) throws -> Bool {
      // `OK` when set, a null when another process holds the claim.
      try run { [client, keys] in
        try await client.execute(
          SET(
            ValkeyKey(keys.editionCheck), value: "1", condition: .nx,
            expiration: .seconds(max(1, seconds)))) != nil
      }
    }

    func releaseEditionCheck() throws {
      _ = try run { [client, keys] in
        try await client.execute(UNLINK(keys: [ValkeyKey(keys.editionCheck)]))
      }
    }

    // MARK: The whole prefix

    /// Entries per edition found by a `SCAN` of the prefix, which stops after
    /// ``scanLimit`` keys.
    func statistics() throws -> CacheStatistics {
      var perEdition: [String: Int] = [:]
      try scan { batch in
        for key in batch {
          if let (edition, _) = keys.parseEntry(key[...]) { perEdition[edition, default: 0] += 1 }
        }
      }
      return CacheStatistics(entriesPerEdition: perEdition, bytes: 0, edition: try editionMark())
    }

    /// The most keys ``statistics()`` looks at.
    static let scanLimit = 10_000_000

    /// Removes every key under the prefix, and nothing else.
    func clear() throws {
      try scan { batch in
        guard !batch.isEmpty else { return }
        let keys = batch.map { ValkeyKey($0) }
        _ = try run { [client] in try await client.execute(UNLINK(keys: keys)) }
      }
      _ = try run { [client, keys] in
        try await client.execute(UNLINK(keys: [ValkeyKey(keys.live), ValkeyKey(keys.editions)]))
      }
    }

    /// Hands every key under the prefix to `body`, a `SCAN` page at a time, up to
    /// ``scanLimit`` keys.
    private func scan(_ body: ([String]) throws -> Void) throws {
      var cursor = 0
      var seen = 0
      repeat {
        let page = try run { [client, keys, cursor] in
          try await client.execute(SCAN(cursor: cursor, pattern: keys.pattern, count: 1_000))
        }
        let batch = try checked { try page.keys.map { try $0.decode(as: String.self) } }
        try body(batch)
        seen += batch.count
        cursor = page.cursor
      } while cursor != 0 && seen < Self.scanLimit
    }

    /// Nothing to release: the caller owns the client.
    func close() {}

    // MARK: Waiting for the server

    /// `body`'s result, waited for at most ``operationTimeout``; throws at once during an
    /// outage, and starts one when `body` fails or the deadline passes.
    private func run<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
      try health.admit(retryInterval: retryInterval)
      do {
        let value = try waitFor(timeout: operationTimeout, on: executor, body)
        health.succeeded()
        return value
      } catch {
        throw health.failed(error, retryInterval: retryInterval)
      }
    }

    /// ``run(_:)`` awaited: `body`'s result, without a thread waiting for it.
    private func runAwaiting<T: Sendable>(
      _ body: @escaping @Sendable () async throws -> T
    ) async throws -> T {
      try health.admit(retryInterval: retryInterval)
      do {
        let value = try await awaitWithin(timeout: operationTimeout, body)
        health.succeeded()
        return value
      } catch {
        throw health.failed(error, retryInterval: retryInterval)
      }
    }

    /// Decodes a reply, an error in it counted as an unexpected reply of the server.
    private func checked<T>(_ body: () throws -> T) throws -> T {
      do {
        return try body()
      } catch {
        throw health.failed(ValkeyStoreFailure.unexpectedReply, retryInterval: retryInterval)
      }
    }
  }

  /// `body`'s result, run as a task of its own, awaited at most `timeout` seconds; the task is
  /// cancelled when the deadline passes (and not waited for: the client's own deadline ends it).
  @available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *)
  private func awaitWithin<T: Sendable>(
    timeout: TimeInterval, _ body: @escaping @Sendable () async throws -> T
  ) async throws -> T {
    let outcome = LockedValue<CheckedContinuation<T, any Error>?>(nil)
    @Sendable func finish(_ result: Result<T, any Error>) -> Bool {
      let taken = outcome.withLock { waiting -> CheckedContinuation<T, any Error>? in
        defer { waiting = nil }
        return waiting
      }
      guard let continuation = taken else { return false }
      continuation.resume(with: result)
      return true
    }
    return try await withCheckedThrowingContinuation { continuation in
      outcome.withLock { $0 = continuation }
      let task = Task {
        let result: Result<T, any Error>
        do {
          result = .success(try await body())
        } catch let error as ValkeyStoreFailure {
          result = .failure(error)
        } catch {
          result = .failure(ValkeyStoreFailure.client("\(error)"))
        }
        _ = finish(result)
      }
      DispatchQueue.global().asyncAfter(deadline: .now() + timeout) {
        if finish(.failure(ValkeyStoreFailure.timedOut(timeout))) { task.cancel() }
      }
    }
  }

  /// Waits on this (non-pool) thread for `body`, run as a task on `executor`, at most `timeout`
  /// seconds; the task is cancelled when the deadline passes.
  @available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *)
  private func waitFor<T: Sendable>(
    timeout: TimeInterval, on executor: QueueTaskExecutor,
    _ body: @escaping @Sendable () async throws -> T
  ) throws -> T {
    let done = DispatchSemaphore(value: 0)
    let result = LockedValue<Result<T, any Error>?>(nil)
    let task = Task(executorPreference: executor) {
      let outcome: Result<T, any Error>
      do { outcome = .success(try await body()) } catch { outcome = .failure(error) }
      result.withLock { $0 = outcome }
      done.signal()
    }
    guard done.wait(timeout: .now() + timeout) == .success else {
      task.cancel()
      throw ValkeyStoreFailure.timedOut(timeout)
    }
    switch result.withLock({ $0 }) {
    case .success(let value)?: return value
    case .failure(let error as ValkeyStoreFailure)?: throw error
    case .failure(let error)?: throw ValkeyStoreFailure.client("\(error)")
    case nil: throw ValkeyStoreFailure.unexpectedReply
    }
  }
#endif
