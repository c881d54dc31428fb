import BrazilianDocuments
import CepisMock
import CepisSupport
import CepisTestSupport
import Foundation
import Testing

@testable import Cepis

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

@Suite("AddressCache: the SQLite file")
struct AddressCacheFileTests {
  enum Damage: String, CaseIterable, Sendable, CustomStringConvertible {
    case garbage
    case foreign
    case newerSchema
    case olderSchema
    var description: String { rawValue }
  }

  /// Writes `damage` at `url`.
  static func damage(_ damage: Damage, at url: URL) throws {
    try SQLiteCacheFile.createFolder(url.deletingLastPathComponent())
    let library = try #require(SQLiteLibrary.shared)
    switch damage {
    case .garbage:
      var bytes = [UInt8](repeating: 0, count: 8_192)
      for index in bytes.indices { bytes[index] = UInt8(truncatingIfNeeded: index &* 131 &+ 7) }
      try Data(bytes).write(to: url)
    case .foreign:
      let db = try SQLiteConnection(library: library, path: url.path, busyTimeout: 1_000)
      try db.run("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
      try db.run("INSERT INTO invoices VALUES (1, 99.5)")
      db.close()
    case .newerSchema:
      let store = SQLiteCacheStore(
        url: url, maxBytes: 1 << 20, library: library, warn: { _ in })
      try store.store(
        sampleEntries([1], edition: "2026-11", at: Date()), liveEdition: "2026-11", now: Date())
      store.close()
      let db = try SQLiteConnection(library: library, path: url.path, busyTimeout: 1_000)
      try db.run("PRAGMA user_version = \(SQLiteCacheStore.schemaVersion + 1)")
      db.close()
    case .olderSchema:
      // What schema 1 wrote (a table keyed by CEP), with an entry in it.
      let db = try SQLiteConnection(library: library, path: url.path, busyTimeout: 1_000)
      try db.run("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
      try db.run(
        """
        CREATE TABLE entries (cep INTEGER PRIMARY KEY, edition TEXT NOT NULL, \
        kind INTEGER NOT NULL, found INTEGER NOT NULL, stored_at REAL NOT NULL, \
        used_at INTEGER NOT NULL, logradouro TEXT, complemento TEXT, bairro TEXT, \
        localidade TEXT, uf TEXT, ibge TEXT, lat REAL, lon REAL, raio_m INTEGER, precisao TEXT)
        """)
      try db.run("INSERT INTO meta VALUES ('schema', '\(SQLiteCacheFile.schemaMarker)')")
      try db.run(
        "INSERT INTO entries (cep, edition, kind, found, stored_at, used_at) VALUES (1, 'x', 1, 0, 0, 0)"
      )
      try db.run("PRAGMA user_version = 1")
      db.close()
    }
  }

  @Test(
    "a corrupt, foreign, newer- or older-schema file is moved aside with one warning; lookups work",
    arguments: Damage.allCases)
  func damagedFileMovedAside(damage: Damage) async throws {
    try await withTemporaryFolder { folder in
      try await withMockServer { server in
        let url = folder.appendingPathComponent("cache.sqlite")
        try Self.damage(damage, at: url)
        let original = try Data(contentsOf: url)
        let heard = LockedValue<[String]>([])
        let cache = AddressCache(
          storage: .sqlite(url: url, maxBytes: 1 << 20), revalidateEvery: 3_600,
          onWarning: { message in heard.withLock { $0.append(message) } }, now: { Date() })
        let client = cachedClient(server, .urlSession, cache: cache)
        let address = try await client.lookup("01001000")
        #expect(address == expectedAddress(server, "01001000"))
        #expect(try await client.lookup("01001000") == address)
        #expect(requests(server, on: .cep).count == 1)
        #expect(cache.warnings.count == 1)
        #expect(heard.withLock { $0 } == cache.warnings)
        #expect(cache.warnings.first?.contains("moved aside") == true)
        if damage == .olderSchema {
          #expect(cache.warnings.first?.contains("older than this Cepis writes") == true)
        }
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path)
        let aside = try #require(
          names.first {
            $0.hasPrefix("cache.sqlite.corrupt-") && !$0.hasSuffix("-wal") && !$0.hasSuffix("-shm")
          })
        // The user's bytes are kept, not destroyed.
        #expect(try Data(contentsOf: folder.appendingPathComponent(aside)) == original)
        #expect(await cache.statistics()?.entriesPerEdition == ["2026-11": 1])
      }
    }
  }

  @Test("created 0600 in folders created 0700, -wal and -shm too")
  func fileModes() async throws {
    try await withTemporaryFolder { folder in
      let url = folder.appendingPathComponent("a/b/cache.sqlite")
      let previous = umask(0)
      defer { umask(previous) }
      let store = try openStore(url)
      try store.store(
        sampleEntries(0..<10, edition: "2026-11", at: Date()), liveEdition: "2026-11",
        now: Date())
      #expect(try permissions(folder.appendingPathComponent("a").path) == 0o700)
      #expect(try permissions(folder.appendingPathComponent("a/b").path) == 0o700)
      #expect(try permissions(url.path) == 0o600)
      #expect(try permissions(url.path + "-wal") == 0o600)
      #expect(try permissions(url.path + "-shm") == 0o600)
      store.close()
    }
  }

  @Test("over maxBytes, other editions go first, then the least recently used")
  func sizeCap() async throws {
    try await withTemporaryFolder { folder in
      let url = folder.appendingPathComponent("cache.sqlite")
      let maxBytes = 160 << 10
      let store = try openStore(url, maxBytes: maxBytes)
      var now = Date(timeIntervalSince1970: 1_800_000_000)
      // 600 CEPs of the old edition, well within the bound.
      for start in stride(from: 0, to: 600, by: 100) {
        try store.store(
          sampleEntries(start..<start + 100, edition: "2026-10", at: now),
          liveEdition: "2026-10", now: now)
        now += 1
      }
      #expect(try store.statistics().entriesPerEdition["2026-10"] == 600)
      // The new edition, chunk by chunk: no new entry goes while an old one remains.
      var written = 0
      var evictedNew = false
      while written < 4_000 {
        now += 120
        try store.store(
          sampleEntries(10_000 + written..<10_000 + written + 100, edition: "2026-11", at: now),
          liveEdition: "2026-11", now: now)
        written += 100
        let stats = try store.statistics()
        #expect(stats.bytes <= maxBytes)
        let new = stats.entriesPerEdition["2026-11"] ?? 0
        if new < written {
          evictedNew = true
          #expect(stats.entriesPerEdition["2026-10"] == nil)
        }
        // Keep the first new chunk in use: it must survive every eviction.
        now += 120
        _ = try store.entries(for: Array(10_000..<10_100), now: now)
      }
      #expect(evictedNew)
      let firstChunk = try store.entries(for: Array(10_000..<10_100), now: now)
      #expect(firstChunk.count == 100)
      // The second chunk, never read again, was among the first evicted.
      #expect(try store.entries(for: Array(10_100..<10_200), now: now).isEmpty)
      let latest = try store.entries(
        for: Array(10_000 + written - 100..<10_000 + written), now: now)
      #expect(latest.count == 100)
      store.close()
    }
  }

  @Test("recency is written with the next write, to the minute, and at close by the cache clock")
  func coarseRecency() async throws {
    try await withTemporaryFolder { folder in
      let url = folder.appendingPathComponent("cache.sqlite")
      let store = try openStore(url)
      let start = Date(timeIntervalSince1970: 1_800_000_000)
      try store.store(
        sampleEntries(0..<3, edition: "2026-11", at: start), liveEdition: "2026-11", now: start)
      let library = try #require(SQLiteLibrary.shared)
      let db = try SQLiteConnection(library: library, path: url.path, busyTimeout: 1_000)
      defer { db.close() }
      func usedAt() throws -> [Int64: Int64] {
        var result: [Int64: Int64] = [:]
        try db.run("SELECT cep, used_at FROM entries") { row in result[row.int(0)] = row.int(1) }
        return result
      }
      let base = Int64(start.timeIntervalSince1970)
      _ = try store.entries(for: [0], now: start + 30)
      #expect(try usedAt() == [0: base, 1: base, 2: base])
      // Written with the next write, but not within the minute.
      try store.store([], liveEdition: "2026-11", now: start + 30)
      #expect(try usedAt() == [0: base, 1: base, 2: base])
      _ = try store.entries(for: [1], now: start + 120)
      try store.store([], liveEdition: "2026-11", now: start + 120)
      #expect(try usedAt() == [0: base, 1: base + 120, 2: base])
      // Closing writes what is pending as of the last use noted, by the cache's clock (an
      // hour on; the wall's is earlier than this test's dates, and would write nothing).
      _ = try store.entries(for: [2], now: start + 3_570)
      _ = try store.entries(for: [0], now: start + 3_600)
      #expect(try usedAt() == [0: base, 1: base + 120, 2: base])
      store.close()
      #expect(try usedAt() == [0: base + 3_600, 1: base + 120, 2: base + 3_600])
    }
  }

  @Test("a CEP stored twice in one write keeps the later answer, whatever the CEPs around it")
  func laterAnswerKept() async throws {
    try await withTemporaryFolder { folder in
      let store = try openStore(folder.appendingPathComponent("cache.sqlite"))
      let now = Date(timeIntervalSince1970: 1_800_000_000)
      func entry(_ cep: Int, _ street: String?) -> CacheEntry {
        var address = street.map { _ in sampleAddress(cep, geo: false) }
        if let street { address?.logradouro = street }
        return CacheEntry(cep: cep, address: address, edition: "e", storedAt: now, kind: .batch)
      }
      // Larger CEPs before and between, so that key order and write order differ.
      try store.store(
        [
          entry(99_999_999, "z"), entry(5, "first"), entry(3, "x"), entry(5, nil), entry(4, "y"),
          entry(5, "last"), entry(1, "w"),
        ],
        liveEdition: "e", now: now)
      try store.store([entry(7, nil), entry(7, "found after all")], liveEdition: "e", now: now)
      let read = try store.entries(for: [1, 3, 4, 5, 7, 99_999_999], now: now)
      #expect(read[5]?.address?.logradouro == "last")
      #expect(read[7]?.address?.logradouro == "found after all")
      #expect(
        read.mapValues { $0.address?.logradouro } == [
          1: "w", 3: "x", 4: "y", 5: "last", 7: "found after all", 99_999_999: "z",
        ])
      store.close()
    }
  }

  @Test("writes of any size store what a plain model of the rules keeps, CEP by CEP")
  func writesMatchTheModel() async throws {
    try await withTemporaryFolder { folder in
      let store = try openStore(folder.appendingPathComponent("cache.sqlite"), maxBytes: 64 << 20)
      var random = SplitMix64(state: 0x57_0AE5)
      // The model: each entry in its write's order, kept when it replaces what is there.
      var model: [Int: CacheEntry] = [:]
      let space = 0..<150
      // Sizes on both sides of a statement's rows, and around its multiples.
      let rows = EntriesTable.upsertRows
      let sizes = [0, 1, rows - 1, rows, rows + 1, 2 * rows + 5, 130]
      var written: [Int] = []
      for round in 0..<60 {
        let count = sizes.randomElement(using: &random)!
        written.append(count)
        let now = Date(timeIntervalSince1970: 1_800_000_000 + Double(round))
        let entries = (0..<count).map { index -> CacheEntry in
          // A small space of CEPs: the same CEP comes back within one write, often within
          // one statement.
          let cep = Int.random(in: space, using: &random)
          let kind: CacheEntryKind = Bool.random(using: &random) ? .batch : .single
          var address: Address?
          if Int.random(in: 0..<5, using: &random) > 0 {
            address = sampleAddress(cep, geo: kind == .single)
            address?.logradouro = "Rua \(round)-\(index)"
            if index % 7 == 0 { address?.complemento = "" }
          }
          return CacheEntry(
            cep: cep, address: address, edition: Bool.random(using: &random) ? "e1" : "e2",
            storedAt: now, kind: kind)
        }
        try store.store(entries, liveEdition: "e2", now: now)
        for entry in entries where model[entry.cep].map(entry.replaces) ?? true {
          model[entry.cep] = entry
        }
        let read = try store.entries(for: Array(space), now: now)
        let wrong = space.filter { read[$0] != model[$0] }
        #expect(wrong.isEmpty, "round \(round), \(count) entries: CEPs \(wrong.prefix(8)) differ")
        if !wrong.isEmpty { break }
      }
      #expect(written.contains(rows + 1) && written.contains(130))
      store.close()
    }
  }

  @Test("a pass over an edition reads only it, nothing over its limit, and stops when told")
  func passOverAnEdition() async throws {
    try await withTemporaryFolder { folder in
      let store = try openStore(folder.appendingPathComponent("cache.sqlite"))
      let now = Date(timeIntervalSince1970: 1_800_000_000)
      try store.store(sampleEntries(1...10, edition: "e", at: now), liveEdition: "e", now: now)
      try store.store(sampleEntries(11...15, edition: "f", at: now), liveEdition: "f", now: now)
      var held = 10
      func pass(limit: Int, stopAfter: Int = .max) throws -> (complete: Bool, ceps: [Int]) {
        var ceps: [Int] = []
        var batches = 0
        let complete = try store.allBatchAnswers(
          edition: "e", limit: limit, now: now, batchSize: 4
        ) { answers, total in
          #expect(total == held)
          ceps += answers.map(\.cep)
          batches += 1
          return batches < stopAfter
        }
        return (complete, ceps)
      }
      // More answers than the limit: nothing is read.
      let over = try pass(limit: 9)
      #expect(!over.complete && over.ceps.isEmpty)
      // Told to stop after the first batch: one batch, and the file is free for a write.
      let stopped = try pass(limit: 10, stopAfter: 1)
      #expect(!stopped.complete && stopped.ceps.count == 4)
      try store.store(sampleEntries([16], edition: "e", at: now), liveEdition: "e", now: now)
      held = 11
      // The whole edition, and only it.
      let all = try pass(limit: 11)
      #expect(all.complete)
      #expect(all.ceps.sorted() == Array(1...10) + [16])
      store.close()
    }
  }

  @Test(
    "entries read back field for field, with geo or without; text that is not UTF-8 is repaired")
  func readBack() async throws {
    try await withTemporaryFolder { folder in
      let url = folder.appendingPathComponent("cache.sqlite")
      let store = try openStore(url)
      let now = Date(timeIntervalSince1970: 1_800_000_000)
      var quoted = sampleAddress(2, geo: false)
      quoted.logradouro = "Rua \"Ç\", 1 — até 89/90"
      quoted.complemento = ""
      var long = sampleAddress(5, geo: false)
      long.logradouro = String(repeating: "ã", count: 9_000)
      long.bairro = String(repeating: "b", count: 3_000)
      let written: [CacheEntry] = [
        CacheEntry(cep: 1, address: sampleAddress(1), edition: "e", storedAt: now, kind: .single),
        CacheEntry(cep: 2, address: quoted, edition: "e", storedAt: now, kind: .batch),
        CacheEntry(cep: 3, address: nil, edition: "e", storedAt: now, kind: .batch),
        CacheEntry(
          cep: 4, address: sampleAddress(4, geo: false), edition: "e", storedAt: now, kind: .batch),
        // Fields past the bytes a row binds in place (16 KiB): one alone, and several whose
        // sum crosses it in the middle of the row; a batch row's packed fields, empty one too.
        CacheEntry(cep: 5, address: long, edition: "e", storedAt: now, kind: .batch),
        CacheEntry(
          cep: 6,
          address: packedAddress(6, ["Praça da Sé", "", "Sé", "São Paulo", "SP", "3550308"]),
          edition: "e", storedAt: now, kind: .batch),
        CacheEntry(
          cep: 7,
          address: packedAddress(
            7, (0..<6).map { String(repeating: Character(UnicodeScalar(0x61 + $0)!), count: 6_000) }
          ),
          edition: "e", storedAt: now, kind: .batch),
      ]
      try store.store(written, liveEdition: "e", now: now)
      // A bulk run's pass over the edition reads the same fields, without `geo`, three at a time.
      var batches: [[PreloadedAnswer]] = []
      let complete = try store.allBatchAnswers(edition: "e", limit: 100, now: now, batchSize: 3) {
        answers, total in
        #expect(total == written.count)
        batches.append(answers)
        return true
      }
      #expect(complete)
      #expect(batches.map(\.count) == [3, 3, 1])
      let scanned = Dictionary(uniqueKeysWithValues: batches.joined().map { ($0.cep, $0) })
      for entry in written {
        let answer = try #require(scanned[entry.cep])
        #expect(!answer.stale)
        var expected = entry.address
        expected?.geo = nil
        #expect(answer.address == expected)
        for field in AddressTextField.allCases {
          #expect(
            answer.address.map { $0.withUTF8(field) { Array($0) } }
              == entry.address.map { $0.withUTF8(field) { Array($0) } })
        }
      }
      let read = try store.entries(for: Array(1...8), now: now)
      #expect(read.count == written.count)
      for entry in written {
        let back = try #require(read[entry.cep])
        #expect(back == entry)
        #expect(back.address?.logradouro == entry.address?.logradouro)
        #expect(back.address?.cep == entry.address?.cep)
        for field in AddressTextField.allCases {
          #expect(
            back.address.map { $0.withUTF8(field) { Array($0) } }
              == entry.address.map { $0.withUTF8(field) { Array($0) } })
        }
      }
      // Bytes another writer left that are not UTF-8 read as a String reads them, repaired.
      let library = try #require(SQLiteLibrary.shared)
      let db = try SQLiteConnection(library: library, path: url.path, busyTimeout: 1_000)
      try db.run("UPDATE entries SET bairro = CAST(x'43C328FF' AS TEXT) WHERE cep = 4")
      db.close()
      let repaired = try #require(try store.entries(for: [4], now: now)[4]?.address)
      #expect(repaired.bairro == "C\u{FFFD}(\u{FFFD}")
      #expect(repaired.logradouro == "Rua 4" && repaired.ibge == "3550308")
      var rescanned: [Int: Address?] = [:]
      _ = try store.allBatchAnswers(edition: "e", limit: 100, now: now, batchSize: 100) {
        answers, _ in
        for answer in answers { rescanned[answer.cep] = answer.address }
        return true
      }
      #expect(rescanned[4]??.bairro == "C\u{FFFD}(\u{FFFD}")
      #expect(rescanned[4]??.logradouro == "Rua 4" && rescanned[4]??.geo == nil)
      store.close()
    }
  }
}

/// A batch row's address: `fields` (the six text fields in column order) packed in one buffer,
/// as the batch decoder makes them.
private func packedAddress(_ cep: Int, _ fields: [String]) -> Address {
  let built = Address(
    cep: cepString(cep), logradouro: fields[0], complemento: fields[1], bairro: fields[2],
    localidade: fields[3], uf: fields[4], ibge: fields[5])
  return Address(cepNumber: cep, packed: .alone(built))
}
