import BrazilianDocuments
import CepisMock
import CepisTestSupport
import Foundation
import Testing

@testable import Cepis

@Suite("lookupMany against CepisMock")
struct BatchEndToEndTests {
  /// Existing sample CEPs, some masked, with one that does not exist and one malformed.
  func inputs(_ server: MockServer) -> [String] {
    let sample = Array(server.dataset.sampleCEPs.prefix(40))
    var inputs = sample.enumerated().map { index, cep in
      index.isMultiple(of: 2) ? "\(cep.prefix(5))-\(cep.suffix(3))" : cep
    }
    inputs.insert("00000001", at: 3)
    inputs.insert("not-a-cep", at: 7)
    return inputs
  }

  func expected(_ server: MockServer, _ inputs: [String]) -> [Address?] {
    inputs.map { input in
      (try? normalizeCEP(input)).flatMap { expectedAddress(server, $0, withGeo: false) }
    }
  }

  @Test(
    "rows are matched by CEP whatever the server does to them",
    arguments: testedTransportKinds,
    [
      [MockFault.normal], [.csvReordered], [.csvOmitMissing], [.csvDuplicatedRows],
      [.csvMaskedCEPs], [.csvColumnsShuffled], [.csvBOM], [.csvExtraRows], [.csvCRLF],
      [.csvBOM, .csvReordered, .csvColumnsShuffled, .csvExtraRows, .csvCRLF, .csvMaskedCEPs],
    ])
  func rowFaults(transport: Transport.Kind, modes: [MockFault]) async throws {
    try await withMockServer { server in
      server.setMode(.csv, modes)
      let inputs = inputs(server)
      let result = try await fastClient(server, transport).lookupMany(inputs)
      #expect(result == expected(server, inputs))
      #expect(result.allSatisfy { $0?.geo == nil })
      #expect(requests(server, on: .csv).count == 1)
    }
  }

  @Test(
    "duplicates are sent once, malformed CEPs never, in ⌈distinct / 500⌉ requests",
    arguments: testedTransportKinds)
  func minimalRequests(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      var inputs: [String] = []
      for index in 0..<1_200 {
        let cep = String(10_000_000 + index * 7)
        inputs.append(index.isMultiple(of: 3) ? "\(cep.prefix(5))-\(cep.suffix(3))" : cep)
      }
      inputs += inputs.prefix(400)  // duplicates, masked and not
      inputs += ["12", "abcdefgh", "0100100O"]  // malformed
      let result = try await fastClient(server, transport).lookupMany(inputs)
      #expect(result.count == inputs.count)
      #expect(result == expected(server, inputs))
      let sent = requests(server, on: .csv)
      #expect(sent.count == 3)  // 1,200 distinct → 500 + 500 + 200
      let queried = sent.flatMap {
        ($0.queryItems["ceps"] ?? "").split(separator: ",").map(String.init)
      }
      #expect(queried.count == 1_200)
      #expect(Set(queried).count == 1_200)
      #expect(queried.allSatisfy { $0.utf8.count == 8 && $0.allSatisfy(\.isASCII) })
    }
  }

  /// How the inputs of a large `lookupMany` come: sorted by CEP (each CEP twice in a row), or
  /// in a seeded random order.
  enum Order: String, CaseIterable, Sendable { case sorted, shuffled }

  @Test(
    "a large call (de-duplicated by sorting) answers every input with its own CEP's address",
    arguments: testedTransportKinds, Order.allCases)
  func largeCall(transport: Transport.Kind, order: Order) async throws {
    try await withMockServer { server in
      // 2,600 distinct CEPs of the synthetic range (a tenth do not exist), each twice, masked
      // or not, and 60 malformed inputs: more inputs than `DistinctCEPs.sortFrom`.
      var random = SplitMix64(state: 0x1A_4CE)
      var inputs: [String] = []
      for index in 0..<2_600 {
        let cep = String(10_000_000 + index * 37)
        inputs += [cep, "\(cep.prefix(5))-\(cep.suffix(3))"]
      }
      inputs += (0..<60).map { "bad-\($0)" }
      if order == .shuffled { inputs.shuffle(using: &random) }
      #expect(inputs.count >= DistinctCEPs.sortFrom)
      let result = try await fastClient(server, transport).lookupMany(inputs)
      #expect(result.count == inputs.count)
      let expected = expected(server, inputs)
      let wrong = zip(result, expected).filter { $0 != $1 }.count
      #expect(wrong == 0, "\(wrong) of \(inputs.count) inputs answered wrong")
      #expect(result.compactMap { $0 }.count == 2 * 2_600 * 9 / 10)
      let sent = requests(server, on: .csv)
      #expect(sent.count == 6)  // ⌈2,600 / 500⌉
      let queried = sent.flatMap {
        ($0.queryItems["ceps"] ?? "").split(separator: ",").map(String.init)
      }
      #expect(queried.count == 2_600 && Set(queried).count == 2_600)
    }
  }

  @Test(
    "spellings of one CEP are one CEP, sent in first-seen order; malformed ones get nil",
    arguments: testedTransportKinds)
  func spellings(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      let inputs = ["01001-000", "bad", "01001000", "20040-002", " 01001000 ", ""]
      let result = try await fastClient(server, transport).lookupMany(inputs)
      #expect(result == expected(server, inputs))
      #expect(result[1] == nil && result[5] == nil)
      #expect(result[0] != nil && result[0] == result[2] && result[0] == result[4])
      #expect(requests(server, on: .csv).map { $0.queryItems["ceps"] } == ["01001000,20040002"])
    }
  }

  @Test("a batch the server refuses (400) throws invalidCEP", arguments: testedTransportKinds)
  func refusedBatch(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      server.script(.csv, [.status(400)])
      await #expect {
        try await fastClient(server, transport, maxAttempts: 1).lookupMany(["01001000", "x"])
      } throws: { error in
        guard case .invalidCEP = error as? CepisError else { return false }
        return true
      }
    }
  }

  @Test("nothing valid means nothing sent", arguments: testedTransportKinds)
  func nothingValid(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      let result = try await fastClient(server, transport).lookupMany(["", "x", "123"])
      #expect(result == [nil, nil, nil])
      let answer = try await fastClient(server, transport).lookupMany([])
      #expect(answer == [])
      #expect(server.requests.isEmpty)
    }
  }

  @Test("a failing chunk is retried, and exhausted it throws", arguments: testedTransportKinds)
  func chunkFailure(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      server.script(.csv, [.status(503), .resetBeforeHeaders])
      let inputs = inputs(server)
      let answer = try await fastClient(server, transport).lookupMany(inputs)
      #expect(answer == expected(server, inputs))
      server.script(.csv, Array(repeating: .status(502), count: 5))
      await #expect {
        try await fastClient(server, transport, maxAttempts: 2).lookupMany(inputs)
      } throws: { error in
        guard case .serverError(_, 502) = error as? CepisError else { return false }
        return true
      }
    }
  }

  @Test(
    "a CSV of a million rows for a 500-CEP request ends in invalidResponse, memory bounded",
    arguments: testedTransportKinds)
  func millionRows(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      server.script(.csv, [.oversizedBody(bytes: 55_000_000)])  // about a million rows
      await #expect {
        try await fastClient(server, transport).lookupMany(["01001000"])
      } throws: { error in
        guard case .invalidResponse(let message) = error as? CepisError else { return false }
        return message.contains("larger than")
      }
    }
  }

  @Test("gigantic response headers end in a typed error", arguments: testedTransportKinds)
  func giantHeaders(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      server.script(.cep, Array(repeating: .giantHeaders(bytes: 4 << 20), count: 3))
      await #expect {
        try await fastClient(server, transport, timeout: 5).lookup("01001000")
      } throws: { error in
        guard let error = error as? CepisError else { return false }
        switch error {
        case .networkError, .invalidResponse: return true
        default: return false
        }
      }
    }
  }

  @Test(
    "an HTML page or a CSV of the wrong shape is invalidResponse",
    arguments: testedTransportKinds)
  func wrongAnswers(transport: Transport.Kind) async throws {
    try await withMockServer { server in
      for fault in [MockFault.htmlPortal, .wrongShapeJSON, .invalidUTF8] {
        server.script(.csv, [fault])
        await #expect {
          try await fastClient(server, transport).lookupMany(["01001000"])
        } throws: { error in
          guard case .invalidResponse = error as? CepisError else { return false }
          return true
        }
      }
    }
  }
}
