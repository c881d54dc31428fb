import CepisSupport
import Foundation
import Testing

@testable import Cepis

/// The Valkey cache's value format, keys and outage rules, without a server (every build).
@Suite("the Valkey cache's values, keys and outages")
struct ValkeyFormatTests {
  let now = Date(timeIntervalSince1970: 1_790_000_000.123)

  @Test(
    "every entry reads back as written: addresses with and without geo, and 'does not exist'",
    arguments: [CacheEntryKind.single, .batch])
  func roundTrip(kind: CacheEntryKind) throws {
    for cep in 1_001_000..<1_001_030 {
      let address = cep % 3 == 0 ? nil : sampleAddress(cep, geo: kind == .single)
      let entry = CacheEntry(
        cep: cep, address: address, edition: "2026-11", storedAt: now, kind: kind)
      let value = try #require(ValkeyEntryFormat.encode(entry))
      let read = try #require(ValkeyEntryFormat.decode(value[...], cep: cep, edition: "2026-11"))
      #expect(read.address == entry.address, "CEP \(cep)")
      #expect(read.kind == kind)
      #expect(abs(read.storedAt.timeIntervalSince(now)) < 0.001)
    }
  }

  @Test(
    "a value of another format is a miss, never misread",
    arguments: [
      "", "{\"cep\":\"01001000\"}",
      "cepis2\u{1F}0\u{1F}1\u{1F}0\u{1F}\u{1F}\u{1F}\u{1F}\u{1F}\u{1F}\u{1F}\u{1F}\u{1F}\u{1F}",
      "cepis1\u{1F}0\u{1F}1",
      "cepis1\u{1F}9\u{1F}1\u{1F}0\u{1F}\u{1F}\u{1F}\u{1F}\u{1F}\u{1F}\u{1F}\u{1F}\u{1F}\u{1F}",
      "cepis1\u{1F}0\u{1F}x\u{1F}0\u{1F}\u{1F}\u{1F}\u{1F}\u{1F}\u{1F}\u{1F}\u{1F}\u{1F}\u{1F}",
    ])
  func foreignValues(value: String) {
    #expect(ValkeyEntryFormat.decode(value[...], cep: 1_001_000, edition: "2026-11") == nil)
  }

  @Test(
    "one read's values: every entry as written, the addresses without coordinates in one packed chunk"
  )
  func oneReadsValues() throws {
    let ceps = Array(stride(from: 1_001_000, to: 1_002_000, by: 10))
    // Found without coordinates (a batch answer's), found with them, "does not exist", a CEP
    // with no value, and a value some other program wrote: in turn.
    var written: [CacheEntry?] = []
    var values: [String?] = []
    for (index, cep) in ceps.enumerated() {
      let address: Address? =
        switch index % 5 {
        case 0: sampleAddress(cep, geo: false)
        case 1: sampleAddress(cep, geo: true)
        case 2: nil
        default: sampleAddress(cep, geo: false)
        }
      let entry = CacheEntry(
        cep: cep, address: address, edition: "2026-11", storedAt: now,
        kind: index % 5 == 1 ? .single : .batch)
      switch index % 5 {
      case 3:
        written.append(nil)
        values.append(nil)
      case 4 where index % 10 == 9:
        written.append(nil)
        values.append("{\"cep\":\"\(cepDigits(cep))\"}")
      default:
        written.append(entry)
        let value = try #require(ValkeyEntryFormat.encode(entry))
        values.append(value)
      }
    }
    var decoder = ValkeyValueDecoder(valueSizes: values.compactMap { $0?.utf8.count })
    var chunks: Set<ObjectIdentifier> = []
    for ((cep, value), entry) in zip(zip(ceps, values), written) {
      guard let value else { continue }
      let read = decoder.decode(value, cep: cep, edition: "2026-11")
      #expect(read?.address == entry?.address, "CEP \(cep)")
      #expect(read?.kind == entry?.kind, "CEP \(cep)")
      #expect(read?.cep == entry?.cep, "CEP \(cep)")
      guard let address = read?.address else { continue }
      if case .packed(let fields, _) = address.text {
        #expect(address.geo == nil, "CEP \(cep)")
        chunks.insert(fields.chunkIdentity)
      } else {
        #expect(address.geo != nil, "CEP \(cep): kept as strings only with coordinates")
      }
    }
    #expect(chunks.count == 1)
  }

  @Test("a value that is not well-formed UTF-8, or whose numbers overflow, is a miss")
  func malformedBytes() throws {
    let entry = CacheEntry(
      cep: 1_001_000, address: sampleAddress(1_001_000, geo: false), edition: "e",
      storedAt: now, kind: .batch)
    let good = Array(try #require(ValkeyEntryFormat.encode(entry)).utf8)
    var broken = good
    broken[try #require(good.firstIndex(of: UInt8(ascii: "R")))] = 0xFF  // in "Rua …"
    var fields = try #require(ValkeyEntryFormat.encode(entry)).split(
      separator: "\u{1F}", omittingEmptySubsequences: false)
    fields[2] = "999999999999999999999999"
    let overflowing = Array(fields.joined(separator: "\u{1F}").utf8)
    var decoder = ValkeyValueDecoder(
      valueSizes: [good.count, broken.count, overflowing.count])
    #expect(
      good.withUnsafeBufferPointer { decoder.decode($0, cep: 1_001_000, edition: "e") } != nil)
    #expect(
      broken.withUnsafeBufferPointer { decoder.decode($0, cep: 1_001_000, edition: "e") } == nil)
    #expect(
      overflowing.withUnsafeBufferPointer { decoder.decode($0, cep: 1_001_000, edition: "e") }
        == nil)
  }

  @Test("a field holding the separator is not kept")
  func separatorInAField() {
    var address = sampleAddress(1_001_000)
    address.logradouro = "Rua \u{1F} A"
    let entry = CacheEntry(
      cep: 1_001_000, address: address, edition: "e", storedAt: now, kind: .single)
    #expect(ValkeyEntryFormat.encode(entry) == nil)
  }

  @Test("entry keys parse back; the cache's own keys and foreign keys do not")
  func keys() {
    let keys = ValkeyKeys(prefix: "cepis:")
    #expect(keys.entry(1_001_000, edition: "2026-11") == "cepis:2026-11:01001000")
    #expect(keys.parseEntry("cepis:2026-11:01001000")?.cep == 1_001_000)
    #expect(keys.parseEntry("cepis:2026-11:01001000")?.edition == "2026-11")
    #expect(keys.parseEntry(keys.editions[...]) == nil)
    #expect(keys.parseEntry(keys.live[...]) == nil)
    #expect(keys.parseEntry("other:2026-11:01001000") == nil)
    #expect(keys.parseEntry("cepis:2026-11:0100100x") == nil)
    #expect(ValkeyKeys(prefix: "a*[b]:").pattern == "a\\*\\[b\\]:*")
  }

  @Test("an outage warns once, fails at once until its retry time, and ends with a success")
  func outage() throws {
    let clock = ManualClock()
    let warnings = WarningLog()
    let outage = ValkeyOutage(prefix: "p:", now: { clock.now }, warn: { warnings.add($0) })
    try outage.admit(retryInterval: 1)
    _ = outage.failed(ValkeyStoreFailure.timedOut(0.5), retryInterval: 1)
    #expect(outage.isOut)
    #expect(throws: ValkeyUnavailable.self) { try outage.admit(retryInterval: 1) }
    clock.advance(0.5)
    #expect(throws: ValkeyUnavailable.self) { try outage.admit(retryInterval: 1) }
    clock.advance(0.6)
    try outage.admit(retryInterval: 1)  // the probe
    // Meanwhile, others still fail at once.
    #expect(throws: ValkeyUnavailable.self) { try outage.admit(retryInterval: 1) }
    _ = outage.failed(ValkeyStoreFailure.unexpectedReply, retryInterval: 1)  // the probe failed
    #expect(warnings.list.count == 1)
    clock.advance(1.1)
    try outage.admit(retryInterval: 1)
    outage.succeeded()
    #expect(!outage.isOut)
    try outage.admit(retryInterval: 1)
    _ = outage.failed(ValkeyStoreFailure.timedOut(0.5), retryInterval: 1)
    #expect(warnings.list.count == 2)
    #expect(warnings.list[1].contains("outage 2"))
    outage.unreadableValues()
    outage.unreadableValues()
    #expect(warnings.list.count == 3)
  }
}

/// Warnings collected by a test.
final class WarningLog: Sendable {
  private let lines = LockedValue<[String]>([])
  func add(_ line: String) { lines.withLock { $0.append(line) } }
  var list: [String] { lines.withLock { $0 } }
}
