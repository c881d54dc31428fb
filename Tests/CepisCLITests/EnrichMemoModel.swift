// The reference model of `EnrichMemo` and the driver that checks the memo against it, step by
// step. Shared by the model-based test (`EnrichMemoModelTests`, seeded) and the fuzz harness
// (`Fuzz/Harnesses/memo.swift`, which compiles this file in: see `Scripts/fuzz`), so it uses
// neither Swift Testing nor CepisMock.
import Cepis

@testable import CepisCommandLine

/// Where the driver's choices come from: a seeded generator in the test, fuzz bytes in the
/// fuzz harness.
protocol MemoChoiceSource {
  /// A number in `0..<bound` (`bound` > 0), or `nil` when the source is exhausted.
  mutating func next(below bound: Int) -> Int?
}

/// The plain reference: a dictionary of rendered answers and a recency list (a doubly linked
/// list through two dictionaries, the least recently used at `oldest`). Rendering is written
/// here again with `String` operations, not with the CLI's byte writer, so that a bug in the
/// writer cannot hide in both.
struct MemoReference {
  let capacity: Int
  private(set) var answers: [Int: String] = [:]
  private var newer: [Int: Int] = [:]
  private var older: [Int: Int] = [:]
  private(set) var oldest: Int?
  private var newest: Int?

  init(capacity: Int) { self.capacity = max(0, capacity) }

  var count: Int { answers.count }

  /// The keys from the least to the most recently used.
  var keysOldestFirst: [Int] {
    var keys: [Int] = []
    var cursor = oldest
    while let key = cursor {
      keys.append(key)
      cursor = newer[key]
    }
    return keys
  }

  /// The answer for `cep`, now the most recently used; `nil` when not held.
  mutating func recall(_ cep: Int) -> String? {
    guard let answer = answers[cep] else { return nil }
    unlink(cep)
    pushNewest(cep)
    return answer
  }

  func contains(_ cep: Int) -> Bool { answers[cep] != nil }

  /// Stores `answer` for `cep` as the memo would, and returns what the memo must report as
  /// forgotten: the CEP evicted to make room, or `cep` itself when it cannot be kept.
  mutating func insert(_ cep: Int, answer: String, keepable: Bool) -> [Int] {
    guard capacity > 0, keepable else {
      if answers[cep] != nil { remove(cep) }
      return [cep]
    }
    if answers[cep] != nil {
      answers[cep] = answer
      unlink(cep)
      pushNewest(cep)
      return []
    }
    var forgotten: [Int] = []
    if answers.count == capacity, let victim = oldest {
      remove(victim)
      forgotten.append(victim)
    }
    answers[cep] = answer
    pushNewest(cep)
    return forgotten
  }

  private mutating func remove(_ cep: Int) {
    unlink(cep)
    answers[cep] = nil
  }

  private mutating func unlink(_ cep: Int) {
    let before = older.removeValue(forKey: cep)
    let after = newer.removeValue(forKey: cep)
    if let before { newer[before] = after } else { oldest = after }
    if let after { older[after] = before } else { newest = before }
  }

  private mutating func pushNewest(_ cep: Int) {
    if let newest {
      newer[newest] = cep
      older[cep] = newest
    } else {
      oldest = cep
    }
    newest = cep
  }

  /// One field as RFC 4180 writes it, with its leading comma.
  static func field(_ text: String) -> String {
    // Bytes, not Characters: "\r\n" is one Character, equal to neither "\r" nor "\n".
    guard text.utf8.contains(where: { $0 == 0x2C || $0 == 0x22 || $0 == 0x0A || $0 == 0x0D })
    else {
      return "," + text
    }
    return ",\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
  }

  /// What `enrich` appends to a row for this answer.
  static func rendered(_ address: Address?) -> String {
    guard let address else { return ",,,,,,,not_found" }
    return [
      address.logradouro, address.complemento, address.bairro, address.localidade, address.uf,
      address.ibge,
    ].map(field).joined() + ",ok"
  }
}

/// Drives an ``EnrichMemo`` and a ``MemoReference`` with the same operations and reports the
/// first difference.
struct MemoModelDriver: ~Copyable {
  /// The longest street the memo keeps (a 16-bit slot size, rounded down to 8).
  static let maxStreetBytes = 0xFFF8

  var memo: EnrichMemo
  var reference: MemoReference
  /// Operations done so far.
  private(set) var operations = 0
  private var serial = 0
  /// The CEPs drawn from: `keySpace` of them, spread over the whole CEP range.
  private let keySpace: Int

  /// - Parameters:
  ///   - capacity: The memo's capacity.
  ///   - streetSlack, poolSlack: The memo's compaction thresholds (small ones compact often).
  init(capacity: Int, streetSlack: Int = 1 << 20, poolSlack: Int = 1_024) {
    memo = EnrichMemo(capacity: capacity, streetSlack: streetSlack, poolSlack: poolSlack)
    reference = MemoReference(capacity: capacity)
    // Twice the capacity and a few more: hits, re-inserts and evictions all happen.
    keySpace = 2 * max(0, capacity) + 5
  }

  private func cep(_ draw: Int) -> Int {
    // Keys far apart in value but dense in the hash's input: 0, 99_999_999 and the rest.
    let spread = 99_999_999 / max(1, keySpace - 1)
    return min(99_999_999, draw * spread + draw % 7)
  }

  private static let shortStreets = [
    "", "Rua A", "Avenida Paulista", "Praça da Sé", "Rua \"Dona\" Maria, 12", "Rua\nDupla",
    "Rua\r\nCRLF", "Travessa ,", "\"", "São João", "Estrada 1 - km 3",
  ]
  private static let complementos = [
    "", "", "", "lado par", "até 500", "de 501 ao fim, lado par", "\"bloco B\"",
  ]
  private static let places = ["Sé", "Centro", "Jardim \"América\"", "Vila, Nova", ""]

  private mutating func address(_ source: inout some MemoChoiceSource) -> Address?? {
    guard let kind = source.next(below: 100) else { return nil }
    if kind < 12 { return .some(nil) }  // not found
    guard let streetKind = source.next(below: 10_000), let pick = source.next(below: 1 << 20)
    else { return nil }
    serial += 1
    let street: String
    switch streetKind {
    case 0..<4_000: street = Self.shortStreets[pick % Self.shortStreets.count]
    case 4_000..<7_000: street = "Rua \(serial) " + String(repeating: "x", count: pick % 40)
    case 7_000..<9_980:
      // Long streets, often longer than the slot they reuse: slots move, garbage grows.
      street = String(repeating: pick % 2 == 0 ? "ab" : "ç,", count: 20 + pick % 300)
    case 9_980..<9_995:
      // At the limit of a slot (65,528 bytes as written), or just under it.
      street = String(repeating: "y", count: Self.maxStreetBytes - 9 + pick % 9)
    default:
      // Just over the limit: never kept.
      street = String(repeating: "z", count: Self.maxStreetBytes + pick % 3)
    }
    // Unique complementos and bairros fill the pool, so that it is rebuilt.
    let complemento =
      pick % 5 == 0 ? "compl \(serial)" : Self.complementos[pick % Self.complementos.count]
    let bairro = pick % 3 == 0 ? "Bairro \(serial)" : Self.places[pick % Self.places.count]
    return .some(
      Address(
        cep: String(pick % 100_000_000), logradouro: street, complemento: complemento,
        bairro: bairro, localidade: pick % 4 == 0 ? "Cidade, \(pick % 101)" : "São Paulo",
        uf: pick % 11 == 0 ? "" : "SP", ibge: pick % 13 == 0 ? "" : "3550308"))
  }

  /// One operation; the first difference found as a message, `nil` when none (`stop` set when
  /// the source is exhausted).
  mutating func step(_ source: inout some MemoChoiceSource, stop: inout Bool) -> String? {
    guard let operation = source.next(below: 100), let draw = source.next(below: keySpace) else {
      stop = true
      return nil
    }
    let cep = self.cep(draw)
    operations += 1
    switch operation {
    case 0..<45:
      guard let address = address(&source) else {
        stop = true
        return nil
      }
      let expected = MemoReference.rendered(address)
      // The limit is on the street as written: its comma and any quotes included.
      let keepable =
        (address.map { MemoReference.field($0.logradouro).utf8.count } ?? 0)
        <= Self.maxStreetBytes
      let expectedForgotten = reference.insert(cep, answer: expected, keepable: keepable)
      var forgotten: [Int] = []
      var out: [UInt8] = []
      memo.insert(cep, address, appendingTo: &out) { forgotten.append($0) }
      let written = String(decoding: out, as: UTF8.self)
      if written != expected {
        return "insert \(cep): wrote \(written.prefix(120)) instead of \(expected.prefix(120))"
      }
      if forgotten != expectedForgotten {
        return "insert \(cep): forgot \(forgotten) instead of \(expectedForgotten)"
      }
    case 45..<85:
      if let failure = checkRecall(cep) { return failure }
    case 85:
      // A burst: up to 767 CEPs in a row, each inserted with a short answer, so that a
      // short input (a fuzzer's) reaches the sizes where the index grows and entries recycle.
      guard let length = source.next(below: 768) else {
        stop = true
        return nil
      }
      for offset in 0..<length {
        let key = self.cep((draw + offset) % keySpace)
        serial += 1
        let address = Address(
          cep: String(key), logradouro: "Rua \(serial)", bairro: "B", localidade: "C", uf: "SP")
        let expected = MemoReference.rendered(address)
        let expectedForgotten = reference.insert(key, answer: expected, keepable: true)
        var forgotten: [Int] = []
        var out: [UInt8] = []
        memo.insert(key, address, appendingTo: &out) { forgotten.append($0) }
        guard String(decoding: out, as: UTF8.self) == expected, forgotten == expectedForgotten
        else { return "burst insert \(key): forgot \(forgotten) instead of \(expectedForgotten)" }
      }
    case 86..<97:
      if memo.contains(cep) != reference.contains(cep) {
        return "contains \(cep): \(memo.contains(cep)) instead of \(reference.contains(cep))"
      }
    default:
      // Now and then (about once per 16 entries held, so that a sweep costs little per
      // operation): every answer held, recalled oldest first, so that both keep the same
      // order of recency.
      guard let sweep = source.next(below: max(1, reference.count / 16)) else {
        stop = true
        return nil
      }
      guard sweep == 0 else { break }
      for key in reference.keysOldestFirst {
        if let failure = checkRecall(key) { return "sweep: " + failure }
      }
    }
    if memo.count != reference.count {
      return "count \(memo.count) instead of \(reference.count) after operation \(operations)"
    }
    if operations % (memo.capacity <= 64 ? 8 : 128) == 0 {
      if let broken = memo.invariantViolation() { return "invariant: " + broken }
    }
    return nil
  }

  /// Recalls `cep` from both: the same answer (or none), and a status that agrees with it.
  private mutating func checkRecall(_ cep: Int) -> String? {
    let expected = reference.recall(cep)
    var out: [UInt8] = []
    let status = memo.recall(cep).map { memo.appendAnswer($0, to: &out) }
    let got = status.map { _ in String(decoding: out, as: UTF8.self) }
    guard got == expected else {
      return "recall \(cep): \(got?.prefix(120) ?? "nil") instead of "
        + (expected.map { String($0.prefix(120)) } ?? "nil")
    }
    if let expected, let status, (status == .notFound) != (expected == ",,,,,,,not_found") {
      return "recall \(cep): status \(status) for \(expected.prefix(120))"
    }
    return nil
  }

  /// Runs operations until `limit` or the source runs out; the first difference, or `nil`.
  mutating func run(_ source: inout some MemoChoiceSource, limit: Int) -> String? {
    var stop = false
    while operations < limit && !stop {
      if let failure = step(&source, stop: &stop) {
        return "after \(operations) operations (capacity \(memo.capacity)): \(failure)"
      }
    }
    if let broken = memo.invariantViolation() { return "invariant at the end: " + broken }
    return nil
  }
}
