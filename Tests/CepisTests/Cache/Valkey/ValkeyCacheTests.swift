#if Valkey
  import CepisMock
  import CepisTestSupport
  import Foundation
  import Testing

  @testable import Cepis

  /// The Valkey cache against a real `redis-server`: a fleet shares its answers and its
  /// edition, and no fault of the server costs a row.
  @Suite(
    "the Valkey cache, against redis-server and CepisMock", .serialized,
    .enabled(if: valkeyTestsCanRun, "needs redis-server, and valkey-swift's platforms"))
  struct ValkeyCacheTests {
    // Each test opens with an availability check that `valkeyTestsCanRun` has already made
    // (the suite is skipped, never passed, where valkey-swift cannot run).
    typealias Rows = LookupsCacheTests

    /// Every answer of one run over `rows` through `client`, each checked against the data of
    /// its own CEP.
    static func checkedRun(_ client: Client, _ rows: [Customer], _ server: MockServer)
      async throws -> LookupStatistics
    {
      let run = try await LookupsCacheTests.run(client, rows)
      BulkStreamEndToEndTests.check(run.answers, rows, server)
      return run.statistics
    }

    /// `body` with a server of its own, a fresh key prefix, and CepisMock.
    @available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *)
    static func withFleet(
      _ body: (ValkeyTestServer, String, MockServer) async throws -> Void
    ) async throws {
      let valkey = try ValkeyTestServer()
      let prefix = ValkeyTestServer.freshPrefix()
      try await withMockServer { server in try await body(valkey, prefix, server) }
    }

    @Test(
      "two processes on one server: the second asks neither /health nor /csv, and answers the same",
      arguments: testedTransportKinds)
    func fleetSharesAnswersAndEdition(transport: Transport.Kind) async throws {
      guard #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) else { return }
      try await Self.withFleet { valkey, prefix, server in
        let rows = BulkStreamEndToEndTests.customers()
        let distinct = BulkStreamEndToEndTests.distinctValid(rows).count
        let chunks = (distinct + Client.maxBatch - 1) / Client.maxBatch
        let first = valkey.cache(prefix: prefix)
        let firstRun = try await Self.checkedRun(
          cachedClient(server, transport, cache: first), rows, server)
        await first.drainStores()
        #expect(firstRun.requests == chunks)
        #expect(LookupsCacheTests.count(server, .health) == 1)

        // Another process: a cache of its own on the same server and prefix.
        let second = valkey.cache(prefix: prefix)
        let secondRun = try await Self.checkedRun(
          cachedClient(server, transport, cache: second), rows, server)
        #expect(secondRun.requests == 0)
        #expect(secondRun.cacheHits == distinct)
        #expect(LookupsCacheTests.count(server, .csv) == chunks)
        // A run checks the edition at its start, unless the fleet checked within the last
        // seconds, as the first process just did: the second takes its mark.
        #expect(LookupsCacheTests.count(server, .health) == 1)
        // The bulk run checks the edition at its start; a single lookup within the interval
        // takes the fleet's mark.
        let third = valkey.cache(prefix: prefix)
        let healthBefore = LookupsCacheTests.count(server, .health)
        _ = try? await cachedClient(server, transport, cache: third).lookup(rows[0].cep)
        #expect(LookupsCacheTests.count(server, .health) == healthBefore)
        #expect(first.warnings.isEmpty && second.warnings.isEmpty && third.warnings.isEmpty)
        let statistics = try #require(await second.statistics())
        #expect(statistics.entriesPerEdition.values.reduce(0, +) == distinct)
      }
    }

    @Test(
      "four clients started together on one file: each CEP asked about once across them, every row right",
      arguments: testedTransportKinds)
    func fourAtOnce(transport: Transport.Kind) async throws {
      guard #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) else { return }
      try await Self.withFleet { valkey, prefix, server in
        // 4,000 distinct existing CEPs, each row once, in the same order for all four.
        let rows = (0..<4_000).map { Customer(id: $0, cep: String(10_000_000 + $0 * 17)) }
        let minimum = (rows.count + Client.maxBatch - 1) / Client.maxBatch
        // The edition first, as a fleet that has run for a while knows it.
        _ = try await cachedClient(server, transport, cache: valkey.cache(prefix: prefix)).health()
        try await withThrowingTaskGroup(of: Void.self) { group in
          for _ in 0..<4 {
            group.addTask {
              let cache = valkey.cache(prefix: prefix)
              _ = try await Self.checkedRun(
                cachedClient(server, transport, cache: cache), rows, server)
              #expect(cache.warnings.isEmpty, "\(cache.warnings)")
            }
          }
          try await group.waitForAll()
        }
        let csv = LookupsCacheTests.count(server, .csv)
        #expect(csv >= minimum)
        #expect(Double(csv) <= 1.25 * Double(minimum), "\(csv) /csv requests for \(minimum) chunks")
      }
    }

    @Test(
      "caches that check the edition at once ask /health once between them, and all learn it",
      arguments: testedTransportKinds)
    func oneEditionCheckForTheFleet(transport: Transport.Kind) async throws {
      guard #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) else { return }
      try await Self.withFleet { valkey, prefix, server in
        let caches = (0..<4).map { _ in valkey.cache(prefix: prefix) }
        let editions = await withTaskGroup(of: String?.self) { group in
          for cache in caches {
            group.addTask {
              await cache.refreshEdition(using: cachedClient(server, transport, cache: cache))
            }
          }
          return await group.reduce(into: []) { $0.append($1) }
        }
        let served = try await Client(baseURL: server.baseURL, transport: makeTransport(transport))
          .health().dne
        #expect(editions == Array(repeating: served, count: 4))
        // One /health for the four caches, one for `served`.
        #expect(LookupsCacheTests.count(server, .health) == 2)
        for cache in caches { #expect(cache.warnings.isEmpty, "\(cache.warnings)") }
      }
    }

    @Test(
      "a claim on the edition check left by a process that died holds the others back only until it expires"
    )
    func abandonedEditionCheck() async throws {
      guard #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) else { return }
      try await Self.withFleet { valkey, prefix, server in
        // A process claimed the check for a second, then died before asking.
        _ = try valkey.server.send(["SET", "\(prefix)~claim:health", "1", "EX", "1"])
        let cache = valkey.cache(prefix: prefix)
        let started = Date()
        let edition = await cache.refreshEdition(
          using: cachedClient(server, .urlSession, cache: cache))
        let waited = Date().timeIntervalSince(started)
        #expect(edition != nil)
        #expect(LookupsCacheTests.count(server, .health) == 1)
        #expect(waited >= 0.5 && waited < Double(EditionTracker.fleetCheckSeconds), "\(waited) s")
        // The mark it learnt is the fleet's: another cache takes it without asking.
        let other = valkey.cache(prefix: prefix)
        #expect(
          await other.liveEdition(using: cachedClient(server, .urlSession, cache: other)) == edition
        )
        #expect(LookupsCacheTests.count(server, .health) == 1)
      }
    }

    @Test("a server down at the start costs no row: one warning, every row from the network")
    func downAtStart() async throws {
      guard #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) else { return }
      let valkey = try ValkeyTestServer()
      valkey.server.kill9()
      try await withMockServer { server in
        let rows = BulkStreamEndToEndTests.customers()
        let cache = valkey.cache(operationTimeout: 2)
        let statistics = try await Self.checkedRun(
          cachedClient(server, .urlSession, cache: cache), rows, server)
        #expect(statistics.cacheHits == 0)
        #expect(cache.warnings.count == 1, "\(cache.warnings)")
        #expect(cache.warnings.first?.contains("stopped answering") == true)
      }
    }

    @Test(
      "killed mid-run and restarted: no row lost or wrong, one warning per outage, and the cache writes again"
    )
    func killedAndRestarted() async throws {
      guard #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) else { return }
      let valkey = try ValkeyTestServer()
      try await withMockServer { server in
        // Forty chunks: most are still to be read and written when the server dies.
        let rows = (0..<20_000).map { Customer(id: $0, cep: String(10_000_000 + $0 * 17)) }
        let cache = valkey.cache(operationTimeout: 2, retryInterval: 0.2)
        let client = cachedClient(server, .urlSession, cache: cache)
        var iterator = client.lookups(AsyncRows(rows), cep: { $0.cep }).makeAsyncIterator()
        var answers: [LookupAnswer<Customer>] = []
        while let answer = try await iterator.next() {
          answers.append(answer)
          if answers.count == rows.count / 3 { valkey.server.kill9() }
        }
        BulkStreamEndToEndTests.check(answers, rows, server)
        #expect(cache.warnings.count == 1, "\(cache.warnings)")

        try valkey.server.restart()
        // Past the retry interval, the next run's operations reach the server again.
        try await Task.sleep(nanoseconds: 300_000_000)
        let again = try await Self.checkedRun(client, rows, server)
        await cache.drainStores()
        _ = again
        let held = try #require(await cache.statistics())
        #expect(held.entriesPerEdition.values.reduce(0, +) > 0)
        #expect(cache.warnings.count == 1, "\(cache.warnings)")
      }
    }

    @Test(
      "paused longer than a lookup's deadline: lookups answer from the network, with one warning")
    func paused() async throws {
      guard #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) else { return }
      let valkey = try ValkeyTestServer()
      try await withMockServer { server in
        let cache = valkey.cache(operationTimeout: 0.3, retryInterval: 30)
        let client = cachedClient(server, .urlSession, cache: cache)
        let ceps = (0..<5).map { String(10_000_000 + $0 * 17) }
        // Warm: the edition is learnt while the server answers.
        _ = try? await client.lookup(ceps[0])
        valkey.server.pause()
        defer { valkey.server.resume() }
        let started = Date()
        for cep in ceps.dropFirst() {
          let address = try await client.lookup(cep)
          #expect(address.cep == cep)
          #expect(address == expectedAddress(server, cep))
        }
        // One deadline for the outage, then every operation fails at once.
        #expect(Date().timeIntervalSince(started) < 10)
        #expect(cache.warnings.count == 1, "\(cache.warnings)")
      }
    }

    @Test("values of the wrong type or another format are misses with one warning, never misread")
    func wrongTypeAndForeignValues() async throws {
      guard #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) else { return }
      try await Self.withFleet { valkey, prefix, server in
        let client = cachedClient(server, .urlSession, cache: valkey.cache(prefix: prefix))
        let edition = try await client.health().dne
        // Another program's string under an entry key, and a list where a string belongs.
        _ = try valkey.server.send([
          "SET", "\(prefix)\(edition):10000000", "{\"cep\":\"99999999\"}",
        ])
        _ = try valkey.server.send(["RPUSH", "\(prefix)\(edition):10000017", "x"])
        _ = try valkey.server.send(["HSET", "\(prefix)~editions", edition, "1"])
        let cache = valkey.cache(prefix: prefix)
        let reader = cachedClient(server, .urlSession, cache: cache)
        for cep in ["10000000", "10000017"] {
          let address = try await reader.lookup(cep)
          #expect(address == expectedAddress(server, cep), "CEP \(cep)")
        }
        #expect(cache.warnings.count == 1, "\(cache.warnings)")
      }
    }
  }

  /// Whether the Valkey tests can run here: `redis-server` installed, and valkey-swift's
  /// platforms.
  let valkeyTestsCanRun: Bool = {
    guard #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) else { return false }
    return RedisServer.isAvailable
  }()
#endif
