import CepisTestSupport
import Foundation
import Testing

@testable import Cepis
@testable import CepisMock

/// The fast reader of cep.is answers never disagrees with `JSONDecoder`: it answers the same
/// address or steps aside (`nil`), on every sample answer and on thousands of mutated ones.
@Suite("Address.fastCepisAnswer against JSONDecoder")
struct FastJSONTests {
  static func slow(_ body: Data) -> Address? {
    let decoder = JSONDecoder()
    decoder.userInfo[Address.fromCepisKey] = true
    return try? decoder.decode(Address.self, from: body)
  }

  static var sampleBodies: [Data] {
    let dataset = MockDataset.sample
    var bodies = dataset.sampleAddresses.map { Data(addressJSON($0)) }
    for value in stride(from: 10_000_000, to: 10_000_400, by: 10) {
      if let address = dataset.address(for: String(value)) {
        bodies.append(Data(addressJSON(address)))
      }
    }
    return bodies
  }

  @Test("every answer the mock serves is read fast, and exactly as JSONDecoder reads it")
  func sampleAnswers() throws {
    let bodies = Self.sampleBodies
    #expect(bodies.count > 300)
    for body in bodies {
      let fast = try #require(
        Address.fastCepisAnswer(body), "\(String(decoding: body, as: UTF8.self))")
      #expect(fast == Self.slow(body))
    }
  }

  @Test("mutated answers: the fast reader agrees with JSONDecoder or steps aside")
  func mutations() async {
    // Seconds of CPU: off the concurrency pool, which the suite's timing tests need.
    let found = await runOffThePool { Self.mutationFindings() }
    #expect(found.failures.isEmpty, "read differently: \(found.failures.prefix(5))")
    #expect(found.checked > 3_000)
    #expect(found.fastHits > 500)  // the benign mutations still take the fast path
  }

  /// Mutated and truncated sample answers that the fast reader reads differently from
  /// `JSONDecoder` (or reads at all, when truncated), and how many were checked and read.
  static func mutationFindings() -> (failures: [String], checked: Int, fastHits: Int) {
    var generator = SystemRandomNumberGenerator()
    var fastHits = 0
    var checked = 0
    var failures: [String] = []
    func check(_ body: Data) {
      checked += 1
      guard let fast = Address.fastCepisAnswer(body) else { return }
      fastHits += 1
      if fast != Self.slow(body) { failures.append(String(decoding: body, as: UTF8.self)) }
    }
    let textMutations: [(String) -> String] = [
      { $0.replacingOccurrences(of: "\"uf\":", with: " \n\t\"uf\" :  ") },
      {
        $0.replacingOccurrences(
          of: "{", with: "{\"extra\":1.5e3,\"flag\":true,", options: .anchored)
      },
      { $0.replacingOccurrences(of: "\"uf\":\"", with: "\"uf\":\"\\u0041") },
      { $0.replacingOccurrences(of: "\"bairro\":\"", with: "\"bairro\":\"a\\\"b") },
      { $0.replacingOccurrences(of: "\"ibge\":\"", with: "\"ibge\":12345,\"x\":\"") },
      { $0.replacingOccurrences(of: "\"ibge\":", with: "\"ibge\":null,\"ibge2\":") },
      { $0.replacingOccurrences(of: "\"uf\":", with: "\"uf\":\"SP\",\"uf\":") },
      { $0.replacingOccurrences(of: "\"geo\":{", with: "\"geo\":{\"lat\":1,") },
      { $0.replacingOccurrences(of: "\"lat\":", with: "\"lat\":\"") },
      { $0.replacingOccurrences(of: "\"raio_m\":", with: "\"raio_m\":1.6,\"r\":") },
      { $0.replacingOccurrences(of: "\"raio_m\":", with: "\"raio_m\":null,\"r\":") },
      { $0.replacingOccurrences(of: "\"geo\":{", with: "\"geo\":null,\"g\":{") },
      { $0.replacingOccurrences(of: "\"cep\":\"", with: "\"cep\":\"0") },
      { $0.replacingOccurrences(of: "\"logradouro\":\"", with: "\"logradouro\":[\"") },
      { $0.replacingOccurrences(of: "\"uf\":\"", with: "\"uf\":\"\\u+041") },
      { $0.replacingOccurrences(of: "\"uf\":\"", with: "\"uf\":\"\\ud83d\\ude00") },
      { $0.replacingOccurrences(of: "\"uf\":\"", with: "\"uf\":\"\\u00e7\\n\\/") },
      { $0.replacingOccurrences(of: "\"uf\":", with: "\"u\\u0066\":\"RJ\",\"uf\":") },
      { $0 + " " },
      { $0 + "x" },
      { $0 + "}" },
      { "\u{FEFF}" + $0 },
      { $0.replacingOccurrences(of: "\"uf\":\"", with: "\"uf\":\"\u{01}") },
      { $0.replacingOccurrences(of: ":", with: ":-0", options: [], range: nil) },
      { $0.replacingOccurrences(of: "\"lon\":", with: "\"lon\":01") },
      { $0.replacingOccurrences(of: "\"lon\":", with: "\"lon\":1e999,\"l\":") },
      { $0.replacingOccurrences(of: "\"lon\":", with: "\"lon\":1.,\"l\":") },
      { $0.replacingOccurrences(of: "\"complemento\":\"\"", with: "\"complemento\":true") },
      { $0.replacingOccurrences(of: "\"source\"", with: "\"s\"") + "" },
      { $0.replacingOccurrences(of: "}", with: ",\"source\":\"viaCEP\"}", options: .backwards) },
    ]
    for body in Self.sampleBodies.prefix(120) {
      let text = String(decoding: body, as: UTF8.self)
      for mutate in textMutations { check(Data(mutate(text).utf8)) }
      // Every prefix of a few answers: a truncated body is never an address.
      if checked < 2_000 {
        for cut in 0..<body.count {
          let prefix = body.prefix(cut)
          if Address.fastCepisAnswer(prefix) != nil {
            failures.append("truncated: " + String(decoding: prefix, as: UTF8.self))
          }
        }
      }
      // Random byte damage, including invalid UTF-8.
      for _ in 0..<8 {
        var bytes = Array(body)
        let position = Int.random(in: 0..<bytes.count, using: &generator)
        bytes[position] = UInt8.random(in: 0...255, using: &generator)
        check(Data(bytes))
      }
    }
    return (failures, checked, fastHits)
  }
}
