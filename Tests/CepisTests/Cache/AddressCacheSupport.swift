import CepisHTTP
import CepisMock
import CepisSupport
import CepisTestSupport
import Foundation

@testable import Cepis

/// A wall clock the test moves by hand: the cache's revalidation interval is tested without
/// sleeping.
final class ManualClock: Sendable {
  private let current = LockedValue(Date(timeIntervalSince1970: 1_800_000_000))

  /// The time now.
  var now: Date { current.withLock { $0 } }

  /// Moves the clock `seconds` on.
  func advance(_ seconds: TimeInterval) {
    current.withLock { $0 = $0.addingTimeInterval(seconds) }
  }
}

/// Where a test's cache lives.
enum CacheKind: String, CaseIterable, Sendable, CustomStringConvertible {
  case memory
  case file

  var description: String { rawValue }
}

/// A fresh folder under the temporary directory, removed after `body`.
func withTemporaryFolder<T>(_ body: (URL) async throws -> T) async throws -> T {
  let folder = FileManager.default.temporaryDirectory
    .appendingPathComponent("cepis-cache-tests-\(UUID().uuidString)")
  defer { try? FileManager.default.removeItem(at: folder) }
  return try await body(folder)
}

/// A cache of `kind` on `clock`, its file (for `.file`) in `folder`; its warnings are kept.
func makeCache(
  _ kind: CacheKind, folder: URL, clock: ManualClock, maxBytes: Int = 256 << 20,
  revalidateEvery: TimeInterval = 3_600, flushDelay: DispatchTimeInterval = .seconds(1)
) -> AddressCache {
  let storage: AddressCache.Storage =
    switch kind {
    // Room for every CEP a test stores: a memory cache that evicted would make a run's
    // cache hits depend on whether a request's store came before a later probe.
    case .memory: .memory(capacity: 10_000)
    case .file: .sqlite(url: folder.appendingPathComponent("cache.sqlite"), maxBytes: maxBytes)
    }
  return AddressCache(
    storage: storage, revalidateEvery: revalidateEvery, onWarning: nil, now: { clock.now },
    flushDelay: flushDelay)
}

/// Runs `body` against CepisMock with a cache of `kind` (its file, for `.file`, in a fresh
/// folder, also given) on `clock`, and a client over `transport` through it: the setup of
/// most cache tests.
func withCachedClient<T>(
  _ kind: CacheKind, _ transport: Transport.Kind, clock: ManualClock = ManualClock(),
  flushDelay: DispatchTimeInterval = .seconds(1),
  _ body: (MockServer, AddressCache, Client, URL) async throws -> T
) async throws -> T {
  try await withTemporaryFolder { folder in
    try await withMockServer { server in
      let cache = makeCache(kind, folder: folder, clock: clock, flushDelay: flushDelay)
      return try await body(server, cache, cachedClient(server, transport, cache: cache), folder)
    }
  }
}

/// A client over `transport` pointed at `server`, with `cache`, fast backoff and, unless
/// asked, one attempt per call (so failure paths stay quick).
func cachedClient(
  _ server: MockServer, _ transport: Transport.Kind, cache: AddressCache?,
  maxAttempts: Int = 1, fallbacks: [Fallback] = []
) -> Client {
  Client(
    baseURL: server.baseURL, timeout: 5, maxAttempts: maxAttempts, backoffBase: 0.01,
    backoffMax: 0.05, totalTimeout: nil, userAgent: nil, transport: makeTransport(transport),
    retryBudget: nil, fallbacks: fallbacks, hedgeAfter: nil, cache: cache,
    environment: .live)
}

/// An address as a writer of the cache would store it.
func sampleAddress(_ cep: Int, geo: Bool = true) -> Address {
  Address(
    cep: cepDigits(cep), logradouro: "Rua \(cep)", complemento: "lado par", bairro: "Centro",
    localidade: "São Paulo", uf: "SP", ibge: "3550308",
    geo: geo ? Geo(lat: -23.55, lon: -46.63, raioM: 25, precisao: "logradouro") : nil)
}

/// Entries of `edition` for `ceps`.
func sampleEntries(_ ceps: some Sequence<Int>, edition: String, at date: Date) -> [CacheEntry] {
  ceps.map {
    CacheEntry(
      cep: $0, address: sampleAddress($0), edition: edition, storedAt: date, kind: .single)
  }
}

/// The POSIX permission bits of `path`.
func permissions(_ path: String) throws -> Int {
  let attributes = try FileManager.default.attributesOfItem(atPath: path)
  return (attributes[.posixPermissions] as? NSNumber)?.intValue ?? -1
}

/// A file store at `url` that ignores warnings; fails the test where SQLite is missing.
func openStore(_ url: URL, maxBytes: Int = 1 << 20) throws -> SQLiteCacheStore {
  guard let library = SQLiteLibrary.shared else {
    throw CepisError.invalidResponse("SQLite cannot be loaded: \(SQLiteLibrary.loadFailure ?? "")")
  }
  return SQLiteCacheStore(url: url, maxBytes: maxBytes, library: library, warn: { _ in })
}

/// Each CEP's recency (`used_at`) in the cache file at `url`, read through a connection of
/// its own, as another process would.
func usedAtByCEP(_ url: URL) throws -> [Int: Int64] {
  guard let library = SQLiteLibrary.shared else {
    throw CepisError.invalidResponse("SQLite cannot be loaded: \(SQLiteLibrary.loadFailure ?? "")")
  }
  let db = try SQLiteConnection(library: library, path: url.path, busyTimeout: 1_000)
  defer { db.close() }
  var usedAt: [Int: Int64] = [:]
  try db.run("SELECT cep, used_at FROM entries") { row in usedAt[Int(row.int(0))] = row.int(1) }
  return usedAt
}
