import CepisMock
import CepisTestSupport
import Foundation
import Testing

@testable import Cepis

@Suite("AddressCache: lookup through the cache, against CepisMock")
struct AddressCacheTests {
  static let known = "01001000"
  static let missing = "00000001"

  @Test(
    "a fresh entry answers with no request; the file shares entries and the edition check",
    arguments: testedTransportKinds, CacheKind.allCases)
  func freshHitCostsNoRequest(transport: Transport.Kind, kind: CacheKind) async throws {
    let clock = ManualClock()
    try await withCachedClient(kind, transport, clock: clock) { server, cache, client, folder in
      let first = try await client.lookup("01001-000")
      #expect(first == expectedAddress(server, Self.known))
      #expect(first.geo != nil)
      let again = try await client.lookup(Self.known)
      #expect(again == first)
      let other = try await cachedClient(server, transport, cache: cache).lookup(Self.known)
      #expect(other == first)
      #expect(requests(server, on: .cep).count == 1)
      #expect(requests(server, on: .health).count == 1)
      #expect(cache.warnings.isEmpty)
      if kind == .file {
        // Another process opening the same file: no /health, no lookup.
        let sibling = makeCache(.file, folder: folder, clock: clock)
        let fromFile = try await cachedClient(server, transport, cache: sibling).lookup(
          Self.known)
        #expect(fromFile == first)
        #expect(requests(server, on: .cep).count == 1)
        #expect(requests(server, on: .health).count == 1)
        #expect(sibling.warnings.isEmpty)
      }
    }
  }

  @Test(
    "concurrent first lookups share one /health, however their checks interleave",
    arguments: testedTransportKinds, CacheKind.allCases)
  func concurrentFirstLookupsShareOneHealth(transport: Transport.Kind, kind: CacheKind)
    async throws
  {
    try await withTemporaryFolder { folder in
      try await withMockServer { server in
        for round in 0..<20 {
          let cache = makeCache(
            kind, folder: folder.appendingPathComponent("round-\(round)"), clock: ManualClock())
          let client = cachedClient(server, transport, cache: cache)
          let before = requests(server, on: .health).count
          await withTaskGroup(of: Void.self) { group in
            for offset in 0..<16 {
              group.addTask { _ = try? await client.lookup(cepDigits(1_001_000 + offset)) }
            }
          }
          #expect(requests(server, on: .health).count - before == 1, "round \(round)")
        }
      }
    }
  }

  @Test(
    "/health is asked at most once per interval; a new edition makes entries not fresh",
    arguments: testedTransportKinds, CacheKind.allCases)
  func editionChange(transport: Transport.Kind, kind: CacheKind) async throws {
    let clock = ManualClock()
    try await withCachedClient(kind, transport, clock: clock) { server, cache, client, _ in
      _ = try await client.lookup(Self.known)
      server.setEdition("2026-12")
      clock.advance(3_599)
      _ = try await client.lookup(Self.known)
      #expect(requests(server, on: .health).count == 1)
      #expect(requests(server, on: .cep).count == 1)
      clock.advance(2)
      let renewed = try await client.lookup(Self.known)
      #expect(renewed == expectedAddress(server, Self.known))
      #expect(requests(server, on: .health).count == 2)
      #expect(requests(server, on: .cep).count == 2)
      _ = try await client.lookup(Self.known)
      #expect(requests(server, on: .cep).count == 2)
      let entry = try #require(await cache.anyEntry(for: 1_001_000))
      #expect(entry.edition == "2026-12")
      #expect(entry.kind == .single)
    }
  }

  @Test(
    "\"does not exist\" is kept per edition", arguments: testedTransportKinds,
    CacheKind.allCases)
  func notFoundPerEdition(transport: Transport.Kind, kind: CacheKind) async throws {
    try await withTemporaryFolder { folder in
      try await withMockServer { server in
        let clock = ManualClock()
        let client = cachedClient(
          server, transport, cache: makeCache(kind, folder: folder, clock: clock))
        for _ in 0..<2 {
          await #expect(throws: CepisError.cepNotFound(Self.missing)) {
            try await client.lookup(Self.missing)
          }
        }
        #expect(requests(server, on: .cep).count == 1)
        server.setEdition("2026-12")
        clock.advance(3_601)
        await #expect(throws: CepisError.cepNotFound(Self.missing)) {
          try await client.lookup(Self.missing)
        }
        #expect(requests(server, on: .cep).count == 2)
      }
    }
  }

  @Test(
    "an older edition is served, marked, only when cep.is and every fallback fail; fallback answers are not kept",
    arguments: testedTransportKinds, CacheKind.allCases)
  func staleOnlyWhenEverythingFails(transport: Transport.Kind, kind: CacheKind) async throws {
    try await withTemporaryFolder { folder in
      try await withMockServer { server in
        let clock = ManualClock()
        let cache = makeCache(kind, folder: folder, clock: clock)
        let client = cachedClient(
          server, transport, cache: cache,
          fallbacks: [.viaCEP(baseURL: server.baseURL), .brasilAPI(baseURL: server.baseURL)])
        let original = try await client.lookup(Self.known)
        #expect(original.staleEdition == nil)
        server.setEdition("2026-12")
        clock.advance(3_601)

        // cep.is down, a fallback up: the fallback answers, the old entry is not served and
        // the fallback's answer is not kept.
        server.setMode(.cep, [.status(503)])
        let fromFallback = try await client.lookup(Self.known)
        #expect(fromFallback.source == .viaCEP)
        #expect(fromFallback.staleEdition == nil)
        #expect(await cache.anyEntry(for: 1_001_000)?.edition == "2026-11")

        // Everything down: the 2026-11 address, marked.
        server.setMode(.viaCEP, [.status(503)])
        server.setMode(.brasilAPI, [.status(503)])
        let stale = try await client.lookup(Self.known)
        #expect(stale.staleEdition == "2026-11")
        var unmarked = stale
        unmarked.staleEdition = nil
        #expect(unmarked == original)
        #expect(stale != original)

        // Nothing kept for this CEP: the error, as without a cache.
        await #expect(throws: CepisError.self) { try await client.lookup("20040002") }

        // cep.is back: the live edition's answer, stored.
        server.setMode(.cep, [])
        let current = try await client.lookup(Self.known)
        #expect(current == original)
        #expect(await cache.anyEntry(for: 1_001_000)?.edition == "2026-12")
      }
    }
  }

  @Test(
    "a batch entry (no geo) does not answer lookup, which keeps geo; a batch answer never downgrades a single one",
    arguments: testedTransportKinds, CacheKind.allCases)
  func lookupKeepsGeo(transport: Transport.Kind, kind: CacheKind) async throws {
    try await withCachedClient(kind, transport) { server, cache, client, _ in
      let edition = try #require(await cache.refreshEdition(using: client))
      #expect(edition == "2026-11")
      let batch = try #require(expectedAddress(server, Self.known, withGeo: false))
      await cache.store([(1_001_000, batch)], kind: .batch, edition: edition)
      #expect(await cache.batchAnswers(for: [1_001_000], edition: edition)[1_001_000] == batch)
      let single = try await client.lookup(Self.known)
      #expect(single.geo != nil)
      #expect(requests(server, on: .cep).count == 1)
      await cache.store([(1_001_000, batch)], kind: .batch, edition: edition)
      #expect(try await client.lookup(Self.known) == single)
      #expect(requests(server, on: .cep).count == 1)
      // The bulk engine's view of the same entry: the batch shape, geo removed.
      #expect(await cache.batchAnswers(for: [1_001_000], edition: edition)[1_001_000] == batch)
    }
  }

  @Test(
    "when /health fails, the last edition seen is used; with none ever seen, nothing is fresh",
    arguments: testedTransportKinds)
  func healthFailure(transport: Transport.Kind) async throws {
    let clock = ManualClock()
    try await withCachedClient(.file, transport, clock: clock) { server, cache, client, folder in
      _ = try await client.lookup(Self.known)
      server.setMode(.health, [.status(500)])
      clock.advance(7_200)
      _ = try await client.lookup(Self.known)
      _ = try await client.lookup(Self.known)
      #expect(requests(server, on: .cep).count == 1)
      // One failed check, then a pause before the next.
      #expect(requests(server, on: .health).count == 2)

      let blind = makeCache(.memory, folder: folder, clock: clock)
      let blindClient = cachedClient(server, transport, cache: blind)
      _ = try await blindClient.lookup(Self.known)
      _ = try await blindClient.lookup(Self.known)
      #expect(requests(server, on: .cep).count == 3)
      #expect(await blind.statistics()?.entriesPerEdition.isEmpty == true)
    }
  }

  @Test(
    "a file cache's memory front: its hits count as use in the file, clear() forgets it",
    arguments: testedTransportKinds)
  func memoryFront(transport: Transport.Kind) async throws {
    let clock = ManualClock()
    try await withCachedClient(.file, transport, clock: clock) { server, cache, client, folder in
      let other = "20040020"
      let first = try await client.lookup(Self.known)
      _ = try await client.lookup(other)
      let start = Int64(clock.now.timeIntervalSince1970)
      clock.advance(120)
      // Answered in memory: no request, and the file's recency of the CEP moves with the
      // next write (the lookup of a third CEP), while the CEP not used again keeps its own.
      #expect(try await client.lookup(Self.known) == first)
      #expect(requests(server, on: .cep).count == 2)
      _ = try? await client.lookup(Self.missing)
      await cache.close()
      let usedAt = try usedAtByCEP(folder.appendingPathComponent("cache.sqlite"))
      #expect(usedAt[1_001_000] == start + 120)
      #expect(usedAt[20_040_020] == start)
      // clear() reaches the memory front: the next lookup asks cep.is again.
      #expect(await cache.clear())
      #expect(try await client.lookup(Self.known) == first)
      #expect(requests(server, on: .cep).count == 4)
      #expect(try await client.lookup(other) == expectedAddress(server, other))
      #expect(requests(server, on: .cep).count == 5)
    }
  }

  @Test(
    "whether the cache holds an entry of an edition (a run that finds none skips its reads)",
    arguments: CacheKind.allCases)
  func holdsEntriesOfEdition(kind: CacheKind) async throws {
    try await withTemporaryFolder { folder in
      let cache = makeCache(kind, folder: folder, clock: ManualClock())
      #expect(await cache.holdsEntries(of: "2026-11") == false)
      await cache.store([(cep: 1_001_000, address: nil)], kind: .batch, edition: "2026-10")
      await cache.store(
        (0..<600).map { (cep: 2_000_000 + $0, address: sampleAddress(2_000_000 + $0)) },
        kind: .batch, edition: "2026-11")
      await cache.store([(cep: 3_000_000, address: nil)], kind: .batch, edition: "2026-10")
      #expect(await cache.holdsEntries(of: "2026-11"))
      #expect(await cache.holdsEntries(of: "2026-10"))
      #expect(await cache.holdsEntries(of: "2026-12") == false)
      #expect(await cache.clear())
      #expect(await cache.holdsEntries(of: "2026-11") == false)
    }
  }
}
