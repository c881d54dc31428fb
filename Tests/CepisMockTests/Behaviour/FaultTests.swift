import Foundation
import Testing

@testable import CepisMock

extension MockTests {
  @Suite struct FaultTests {
    @Test func scriptedStatusesThenNormal() async throws {
      try await withServer { server async throws in
        server.script(
          .cep, [.status(503), .status(429, retryAfter: "2"), .status(500, body: "oops")])
        let first = try fetch(server, "/01001000")
        #expect(first.status == 503)
        #expect(first.headers["content-type"] == "application/json; charset=utf-8")
        #expect(try first.json()["mensagem"] != nil)
        let second = try fetch(server, "/01001000")
        #expect(second.status == 429)
        #expect(second.headers["retry-after"] == "2")
        let third = try fetch(server, "/01001000")
        #expect(third.status == 500)
        #expect(third.text == "oops")
        #expect(third.headers["content-type"] == "text/plain; charset=utf-8")
        #expect(try fetch(server, "/01001000").status == 200)
        // Other routes are not affected by the cep script.
        server.script(.cpf, [.status(503)])
        #expect(try fetch(server, "/health").status == 200)
        let cpf = try fetch(server, "/cpf/52998224725")
        #expect(cpf.status == 503)
        #expect(try cpf.json()["success"] as? Bool == false)
        #expect(server.faultCounts["status(503)"] == 2)
        #expect(server.faultCounts["status(429)"] == 1)
      }
    }

    @Test func delayHeaders() async throws {
      try await withServer { server async throws in
        server.script(.health, [.delayHeaders(0.3)])
        let start = Date()
        #expect(try fetch(server, "/health").status == 200)
        #expect(Date().timeIntervalSince(start) >= 0.29)
      }
    }

    @Test func peakConcurrentRequestsCountsOverlappingAnswers() async throws {
      try await withServer { server async throws in
        server.setMode(.health, [.delayHeaders(0.5)])
        #expect(server.peakConcurrentRequests(on: .health) == 0)
        // Three at once on /health (each on a thread of its own: a blocking fetch would hold
        // one of the cooperative pool's few threads), one on /csv (not delayed) meanwhile.
        func onThread(_ path: String) async throws -> Int {
          try await withCheckedThrowingContinuation { done in
            Thread { done.resume(with: Result { try fetch(server, path).status }) }.start()
          }
        }
        async let first = onThread("/health")
        async let second = onThread("/health")
        async let third = onThread("/health")
        #expect(try fetch(server, "/csv?ceps=01001000").status == 200)
        #expect(try await [first, second, third] == [200, 200, 200])
        #expect(server.peakConcurrentRequests(on: .health) == 3)
        #expect(server.peakConcurrentRequests(on: .csv) == 1)
        // One after the other (no delay needed now): the peak does not grow.
        server.setMode(.health, [])
        #expect(try fetch(server, "/health").status == 200)
        #expect(server.peakConcurrentRequests(on: .health) == 3)
        server.reset()
        #expect(server.peakConcurrentRequests(on: .health) == 0)
        #expect(try fetch(server, "/health").status == 200)
        #expect(server.peakConcurrentRequests(on: .health) == 1)
      }
    }

    @Test func dribble() async throws {
      try await withServer { server async throws in
        server.script(.health, [.dribble(gap: 0.01)])
        let client = try RawClient(port: server.port)
        client.send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        let start = Date()
        var reads = 0
        var response: RawResponse?
        while response == nil {
          guard client.fill() else { break }
          reads += 1
          if let text = String(bytes: client.pending, encoding: .utf8), text.hasSuffix("}") {
            response = try client.readResponse()
          }
        }
        #expect(reads > 20)
        #expect(Date().timeIntervalSince(start) > 0.3)
        #expect(try response?.json()["ok"] as? Bool == true)
      }
    }

    @Test func truncatedBody() async throws {
      try await withServer { server async throws in
        server.script(.cep, [.truncatedBody])
        let client = try RawClient(port: server.port)
        client.send("GET /01001000 HTTP/1.1\r\nHost: x\r\n\r\n")
        let (bytes, _) = client.readToEnd()
        let text = String(decoding: bytes, as: UTF8.self)
        let parts = text.components(separatedBy: "\r\n\r\n")
        let length = try #require(
          parts[0].split(separator: "\r\n").first { $0.hasPrefix("Content-Length") }
            .flatMap { Int($0.split(separator: " ")[1]) })
        let received = bytes.count - parts[0].utf8.count - 4
        #expect(received == length / 2)
        #expect(parts[0].contains("Connection: close"))
      }
    }

    @Test func resets() async throws {
      try await withServer { server async throws in
        server.script(.cep, [.resetBeforeHeaders, .resetAfterHeaders])
        let before = try RawClient(port: server.port)
        before.send("GET /01001000 HTTP/1.1\r\nHost: x\r\n\r\n")
        let (nothing, resetError) = before.readToEnd()
        #expect(nothing.isEmpty)
        #expect(resetError == ECONNRESET)
        let after = try RawClient(port: server.port)
        after.send("GET /01001000 HTTP/1.1\r\nHost: x\r\n\r\n")
        let (head, _) = after.readToEnd()
        let text = String(decoding: head, as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 200 OK"))
        #expect(text.hasSuffix("\r\n\r\n"))
        #expect(try fetch(server, "/01001000").status == 200)
        #expect(server.faultCounts["resetBeforeHeaders"] == 1)
        #expect(server.faultCounts["resetAfterHeaders"] == 1)
      }
    }

    @Test func bodyReplacements() async throws {
      try await withServer { server async throws in
        server.script(.cep, [.htmlPortal, .wrongShapeJSON, .invalidUTF8, .successFalse])
        let portal = try fetch(server, "/01001000")
        #expect(portal.status == 200)
        #expect(portal.headers["content-type"] == "text/html; charset=utf-8")
        #expect(portal.text.contains("<html"))
        let shape = try fetch(server, "/01001000")
        #expect(shape.headers["content-type"] == "application/json; charset=utf-8")
        #expect(try shape.json()["results"] is [Any])
        let invalid = try fetch(server, "/01001000")
        #expect(invalid.headers["content-type"] == "application/json; charset=utf-8")
        #expect(String(bytes: invalid.body, encoding: .utf8) == nil)
        let soft = try fetch(server, "/01001000")
        #expect(soft.status == 200)
        #expect(try soft.json()["success"] as? Bool == false)

        server.script(.csv, [.invalidUTF8])
        let csv = try fetch(server, "/csv?ceps=01001000")
        #expect(csv.headers["content-type"] == "text/csv; charset=utf-8")
        #expect(String(bytes: csv.body, encoding: .utf8) == nil)
      }
    }

    @Test func oversizedAndGiantHeaders() async throws {
      try await withServer { server async throws in
        server.script(.cep, [.oversizedBody(bytes: 3_000_000), .giantHeaders(bytes: 100_000)])
        let big = try fetch(server, "/01001000")
        #expect(big.status == 200)
        #expect(big.body.count == 3_000_000)
        #expect(big.text.hasPrefix("{\"padding\":\""))
        #expect(try big.json()["padding"] is String)
        let giant = try fetch(server, "/01001000")
        #expect(giant.headers["x-mock-padding"]?.count == 100_000)
        #expect(try giant.json()["cep"] as? String == "01001000")

        server.script(.csv, [.oversizedBody(bytes: 100_000)])
        let csv = try fetch(server, "/csv?ceps=01001000")
        #expect(csv.headers["content-type"] == "text/csv; charset=utf-8")
        #expect(csv.body.count == 100_000)
        #expect(csvRows(csv.body)[0][0] == "cep")
      }
    }

    @Test func endlessChunked() async throws {
      try await withServer { server async throws in
        server.script(.cep, [.endlessChunked])
        let client = try RawClient(port: server.port)
        client.send("GET /01001000 HTTP/1.1\r\nHost: x\r\n\r\n")
        while client.pending.count < 2_000_000 {
          guard client.fill() else { break }
        }
        #expect(client.pending.count >= 2_000_000)
        let head = String(decoding: client.pending.prefix(200), as: UTF8.self)
        #expect(head.contains("Transfer-Encoding: chunked"))
        #expect(!head.contains("Content-Length"))
        // Closing the client ends the stream; the server keeps serving.
      }
      // stop() also ends a stream the client keeps reading.
      let server = try await MockServer.start()
      server.setMode(.cep, [.endlessChunked])
      let client = try RawClient(port: server.port)
      client.send("GET /01001000 HTTP/1.1\r\nHost: x\r\n\r\n")
      #expect(client.fill())
      await server.stop()
      let (_, error) = client.readToEnd()
      #expect(error == 0 || error == ECONNRESET)
    }

    @Test func modesPersistUntilCleared() async throws {
      try await withServer { server async throws in
        server.setMode(.health, [.status(502)])
        #expect(try fetch(server, "/health").status == 502)
        #expect(try fetch(server, "/health").status == 502)
        server.setMode(.health, [])
        #expect(try fetch(server, "/health").status == 200)
      }
    }

    static let requested = ["20040020", "10000019", "01001000", "12345674", "70150900", "10000029"]

    func csv(_ server: MockServer, mode: [MockFault]) throws -> RawResponse {
      server.setMode(.csv, mode)
      return try fetch(server, "/csv?ceps=" + Self.requested.joined(separator: ","))
    }

    /// Checks that every row is the correct row of its own CEP.
    func checkRows(_ rows: [[String]], _ server: MockServer, columns: [String]? = nil) {
      let header = rows[0]
      for row in rows.dropFirst() {
        let dictionary = Dictionary(uniqueKeysWithValues: zip(header, row))
        let cep = dictionary["cep"]!.replacingOccurrences(of: "-", with: "")
        if let address = server.dataset.address(for: cep) {
          #expect(dictionary["logradouro"] == address.logradouro)
          #expect(dictionary["localidade"] == address.localidade)
          #expect(dictionary["ibge"] == address.ibge)
        } else {
          #expect(dictionary["localidade"] == "")
        }
      }
    }

    @Test func csvVariants() async throws {
      try await withServer { server async throws in
        let normal = csvRows(try csv(server, mode: []).body)
        #expect(normal.dropFirst().map { $0[0] } == Self.requested)

        let bom = try csv(server, mode: [.csvBOM])
        #expect(bom.body.starts(with: [0xEF, 0xBB, 0xBF]))

        let crlf = try csv(server, mode: [.csvCRLF])
        #expect(crlf.text.components(separatedBy: "\r\n").count == Self.requested.count + 2)

        let reordered = csvRows(try csv(server, mode: [.csvReordered]).body)
        #expect(reordered.dropFirst().map { $0[0] } != Self.requested)
        #expect(Set(reordered.dropFirst().map { $0[0] }) == Set(Self.requested))
        checkRows(reordered, server)

        let omitted = csvRows(try csv(server, mode: [.csvOmitMissing]).body)
        #expect(
          omitted.dropFirst().map { $0[0] } == ["20040020", "01001000", "12345674", "70150900"])

        let duplicated = csvRows(try csv(server, mode: [.csvDuplicatedRows]).body)
        #expect(duplicated.count == Self.requested.count * 2 + 1)
        checkRows(duplicated, server)

        let masked = csvRows(try csv(server, mode: [.csvMaskedCEPs]).body)
        #expect(masked.dropFirst().map { $0[0] } == Self.requested.map(maskedCEP))
        checkRows(masked, server)

        let shuffled = csvRows(try csv(server, mode: [.csvColumnsShuffled]).body)
        #expect(shuffled[0] != normal[0])
        #expect(Set(shuffled[0]) == Set(normal[0]))
        checkRows(shuffled, server)

        let extra = csvRows(try csv(server, mode: [.csvExtraRows]).body)
        #expect(extra.count > normal.count)
        let extraCEPs = Set(extra.dropFirst().map { $0[0] }).subtracting(Self.requested)
        #expect(!extraCEPs.isEmpty)
        for cep in extraCEPs { #expect(server.dataset.address(for: cep) != nil) }
        checkRows(extra, server)

        let all = csvRows(
          try csv(server, mode: [.csvBOM, .csvReordered, .csvMaskedCEPs, .csvColumnsShuffled]).body)
        checkRows(all.map { $0.map { $0.replacingOccurrences(of: "\u{FEFF}", with: "") } }, server)

        // CSV faults do nothing (and are not counted) on other routes.
        server.setMode(.cep, [.csvBOM, .csvReordered])
        let cep = try fetch(server, "/01001000")
        #expect(cep.body.first == UInt8(ascii: "{"))
        #expect(server.faultCounts["csvBOM"] == 2)
      }
    }

    @Test func chaosIsReproducible() async throws {
      let chaos = MockChaos(seed: 7, rate: 0.5)
      let draws = (0..<200).map { chaos.fault(forRequestIndex: $0) }
      #expect(draws == (0..<200).map { chaos.fault(forRequestIndex: $0) })
      let hits = draws.compactMap { $0 }.count
      #expect((60...140).contains(hits))
      #expect(Set(draws.compactMap { $0?.name }).count >= 10)
      #expect(
        (0..<100).allSatisfy { MockChaos(seed: 1, rate: 0).fault(forRequestIndex: $0) == nil })
      #expect(
        (0..<100).allSatisfy { MockChaos(seed: 1, rate: 1).fault(forRequestIndex: $0) != nil })

      func run() async throws -> ([Int], [String: Int]) {
        try await withServer(.init(chaos: MockChaos(seed: 99, rate: 0.4))) { server async throws in
          var statuses: [Int] = []
          for _ in 0..<40 {
            statuses.append((try? fetch(server, "/health").status) ?? -1)
          }
          #expect(server.requestCount == 40)
          return (statuses, server.faultCounts)
        }
      }
      let first = try await run()
      let second = try await run()
      #expect(first.0 == second.0)
      #expect(first.1 == second.1)
      #expect(first.0.contains(200))
      #expect(first.0.contains { $0 != 200 })
    }
  }
}
