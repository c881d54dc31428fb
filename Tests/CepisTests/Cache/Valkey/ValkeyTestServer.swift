#if Valkey
  import CepisTestSupport
  import Foundation
  import Logging
  import Valkey

  @testable import Cepis

  /// A `redis-server` of the tests' own and a running `ValkeyClient` on it.
  @available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *)
  final class ValkeyTestServer: Sendable {
    let server: RedisServer
    let client: ValkeyClient
    private let runner: Task<Void, Never>

    /// A server started now, and a client running on it.
    init() throws {
      server = try RedisServer()
      var configuration = ValkeyClientConfiguration()
      configuration.commandTimeout = .seconds(10)
      client = ValkeyClient(
        .hostname("127.0.0.1", port: server.port), configuration: configuration,
        logger: Logger(label: "cepis.tests.valkey") { _ in SwiftLogNoOpLogHandler() })
      // Off the cooperative pool: the conformance suite blocks a pool thread while a store
      // waits for the server, and the client's connections must not need one.
      runner = Task(executorPreference: QueueTaskExecutor(label: "cepis-tests-valkey")) {
        [client] in await client.run()
      }
    }

    deinit {
      runner.cancel()
      server.stop()
    }

    /// A prefix no other test uses.
    static func freshPrefix() -> String { "test-\(UUID().uuidString.prefix(8)):" }

    /// A cache on this server under a fresh prefix (or `prefix`), with the test's clock.
    func cache(
      prefix: String = ValkeyTestServer.freshPrefix(), operationTimeout: TimeInterval = 10,
      retryInterval: TimeInterval = 1, now: @escaping @Sendable () -> Date = { Date() }
    ) -> AddressCache {
      AddressCache(
        storage: .valkey(keyPrefix: prefix), revalidateEvery: 3_600, onWarning: nil, now: now,
        makeStore: { [client] warn in
          ValkeyCacheStore(
            client: client, keyPrefix: prefix, entryTimeToLive: 3_600,
            operationTimeout: operationTimeout, retryInterval: retryInterval, warn: warn)
        })
    }
  }

  /// A Valkey store on a server of its own, stopped when the store is released at the end of
  /// its conformance case: every call goes to the store.
  @available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *)
  final class ServerOwningStore: CacheStore {
    private let server: ValkeyTestServer
    private let store: ValkeyCacheStore

    init() throws {
      server = try ValkeyTestServer()
      store = ValkeyCacheStore(
        client: server.client, keyPrefix: ValkeyTestServer.freshPrefix(), entryTimeToLive: 3_600,
        operationTimeout: 10, warn: { _ in })
    }

    var waitsForIO: Bool { store.waitsForIO }
    func entries(for ceps: [Int], now: Date) throws -> [Int: CacheEntry] {
      try store.entries(for: ceps, now: now)
    }
    func entries(for ceps: [Int], of edition: String, now: Date) throws -> [Int: CacheEntry] {
      try store.entries(for: ceps, of: edition, now: now)
    }
    var readsAwaiting: Bool { store.readsAwaiting }
    func entriesAwaiting(for ceps: [Int], of edition: String, now: Date) async throws
      -> [Int: CacheEntry]
    {
      try await store.entriesAwaiting(for: ceps, of: edition, now: now)
    }
    func store(_ entries: [CacheEntry], liveEdition: String, now: Date) throws {
      try store.store(entries, liveEdition: liveEdition, now: now)
    }
    func editionMark() throws -> EditionMark? { try store.editionMark() }
    func setEditionMark(_ mark: EditionMark) throws { try store.setEditionMark(mark) }
    func hasEntries(of edition: String) throws -> Bool { try store.hasEntries(of: edition) }
    func statistics() throws -> CacheStatistics { try store.statistics() }
    func clear() throws { try store.clear() }
    func noteUsed(_ ceps: some Collection<Int>, now: Date) { store.noteUsed(ceps, now: now) }
    func allBatchAnswers(
      edition: String, limit: Int, now: Date, batchSize: Int,
      deliver: (_ answers: [PreloadedAnswer], _ total: Int) -> Bool
    ) throws -> Bool {
      try store.allBatchAnswers(
        edition: edition, limit: limit, now: now, batchSize: batchSize, deliver: deliver)
    }
    func close() { store.close() }
    var groupsWrites: Bool { store.groupsWrites }
    var holdsClaims: Bool { store.holdsClaims }
    func claim(_ ceps: [Int], edition: String, seconds: Int) throws -> Set<Int> {
      try store.claim(ceps, edition: edition, seconds: seconds)
    }
    func claimsHeld(_ ceps: [Int], edition: String) throws -> Set<Int> {
      try store.claimsHeld(ceps, edition: edition)
    }
    func releaseClaims(_ ceps: [Int], edition: String) throws {
      try store.releaseClaims(ceps, edition: edition)
    }
    func claimEditionCheck(seconds: Int) throws -> Bool {
      try store.claimEditionCheck(seconds: seconds)
    }
    func releaseEditionCheck() throws { try store.releaseEditionCheck() }
  }

  /// The stores of the `Valkey` trait, for the conformance suite.
  let traitStores: [StoreUnderTest] =
    if #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) {
      [StoreUnderTest(description: "valkey") { _ in try ServerOwningStore() }]
    } else {
      []
    }
#else
  /// No store beyond memory and SQLite without the `Valkey` trait.
  let traitStores: [StoreUnderTest] = []
#endif
