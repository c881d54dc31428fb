import Foundation
import Testing

@testable import CepisMock

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif

extension MockTests {
  @Suite struct RouteTests {
    @Test func cepLookup() async throws {
      try await withServer { server async throws in
        let found = try fetch(server, "/01001000")
        #expect(found.status == 200)
        #expect(found.headers["content-type"] == "application/json; charset=utf-8")
        #expect(found.headers["connection"] == "keep-alive")
        let json = try found.json()
        #expect(json["cep"] as? String == "01001000")
        #expect(json["logradouro"] as? String == "Praça da Sé")
        #expect(json["uf"] as? String == "SP")
        let geo = try #require(json["geo"] as? [String: Any])
        #expect(geo["precisao"] as? String == "logradouro")
        #expect(geo["raio_m"] as? Int == 120)
        let decoded = try JSONDecoder().decode(MockAddress.self, from: Data(found.body))
        #expect(decoded == server.dataset.address(for: "01001000"))

        // Masked, with a prefix, without geo.
        let withoutGeo = try #require(server.dataset.sampleAddresses.first { $0.geo == nil })
        let prefixed = try fetch(server, "/api/v2/" + maskedCEP(withoutGeo.cep))
        #expect(prefixed.status == 200)
        #expect(try prefixed.json()["geo"] == nil)
        #expect(try JSONDecoder().decode(MockAddress.self, from: Data(prefixed.body)) == withoutGeo)

        let missing = try fetch(server, "/10000019")
        #expect(missing.status == 404)
        #expect(try missing.json()["mensagem"] as? String == "CEP não encontrado")
        for bad in ["/0100100", "/01001-00", "/010010000", "/0100100a"] {
          let invalid = try fetch(server, bad)
          #expect(invalid.status == 400, "\(bad)")
          #expect((try invalid.json()["mensagem"] as? String)?.hasPrefix("CEP inválido") == true)
        }
        #expect(try fetch(server, "/favicon.ico").status == 404)
        let post = try postJSON(server, "/01001000", "{}")
        #expect(post.status == 405)
      }
    }

    @Test func csvLookup() async throws {
      try await withServer { server async throws in
        let ceps = ["20040020", "10000019", "01001-000", "12345674", "70150900"]
        let response = try fetch(server, "/csv?ceps=" + ceps.joined(separator: ","))
        #expect(response.status == 200)
        #expect(response.headers["content-type"] == "text/csv; charset=utf-8")
        #expect(!response.body.contains(13))
        let rows = csvRows(response.body)
        #expect(
          rows[0] == ["cep", "logradouro", "complemento", "bairro", "localidade", "uf", "ibge"])
        #expect(rows.count == 6)
        #expect(
          rows.dropFirst().map { $0[0] } == [
            "20040020", "10000019", "01001000", "12345674", "70150900",
          ])
        #expect(rows[2] == ["10000019", "", "", "", "", "", ""])
        for row in rows.dropFirst() where !row[4].isEmpty {
          #expect(row == server.dataset.address(for: row[0])?.csvFields)
        }
        // Quoting: every sample address round-trips through CSV.
        let all = server.dataset.sampleCEPs.prefix(500)
        let sample = try fetch(server, "/api/csv?ceps=" + all.joined(separator: ","))
        let sampleRows = csvRows(sample.body).dropFirst()
        #expect(sampleRows.map { $0 } == all.map { server.dataset.address(for: $0)!.csvFields })
        #expect(sample.text.contains("\"Travessa \"\"Beco do Sol\"\"\""))

        let tooMany = (0..<501).map { _ in "01001000" }.joined(separator: ",")
        #expect(try fetch(server, "/csv?ceps=" + tooMany).status == 400)
        let maximum = (0..<500).map { _ in "01001000" }.joined(separator: ",")
        #expect(csvRows(try fetch(server, "/csv?ceps=" + maximum).body).count == 501)
        let malformed = try fetch(server, "/csv?ceps=01001000,123")
        #expect(malformed.status == 400)
        #expect(try malformed.json()["mensagem"] as? String == "CEP inválido: 123")
        #expect(try fetch(server, "/csv").status == 400)
        #expect(try fetch(server, "/csv?ceps=").status == 400)
      }
    }

    /// How many answers the budget of ``keptCSVAnswersAreTheBuiltOnes(room:)`` has room for.
    enum Room: CaseIterable { case none, first, all }

    @Test(arguments: Room.allCases)
    func keptCSVAnswersAreTheBuiltOnes(room: Room) async throws {
      let lists = [
        "01001000,20040020,10000019", "12345674,01001-000", "10000000,10000001,10000002",
      ]
      // What a server that keeps nothing answers (built anew every time).
      let built = try await withServer { plain async throws in
        try lists.map { try fetch(plain, "/csv?ceps=" + $0).body }
      }
      var configuration = MockServer.Configuration()
      switch room {
      case .none: configuration.keptCSVAnswerBytes = 0
      // Room for the first answer alone: the second does not fit beside it.
      case .first: configuration.keptCSVAnswerBytes = built[0].count
      case .all: configuration.keptCSVAnswerBytes = 1 << 20
      }
      try await withServer(configuration) { server async throws in
        for round in 0..<3 {
          for (list, expected) in zip(lists, built) {
            let answer = try fetch(server, "/csv?ceps=" + list)
            #expect(answer.status == 200)
            #expect(answer.body == expected, "round \(round): \(list)")
          }
        }
        // Every request still reaches the log; the budget holds.
        #expect(server.requestCount == 9)
        let kept = server.engine.responder.keptCSVAnswers.withLock {
          (count: $0.answers.count, bytes: $0.bytes)
        }
        #expect(kept.bytes <= configuration.keptCSVAnswerBytes)
        #expect(kept.count == [Room.none: 0, .first: 1, .all: 3][room])
        // A fault alters the answer: it is neither taken from nor kept among the answers.
        server.script(.csv, [.csvMaskedCEPs])
        let masked = try fetch(server, "/csv?ceps=" + lists[0])
        #expect(csvRows(masked.body)[1][0] == "01001-000")
        #expect(try fetch(server, "/csv?ceps=" + lists[0]).body == built[0])
        // An answer that is not a 200 is not kept either.
        #expect(try fetch(server, "/csv?ceps=01001000,123").status == 400)
        #expect(try fetch(server, "/csv?ceps=01001000,123").status == 400)
        #expect(server.engine.responder.keptCSVAnswers.withLock { $0.answers.count } == kept.count)
      }
    }

    @Test func health() async throws {
      try await withServer { server async throws in
        let healthy = try fetch(server, "/health")
        #expect(healthy.status == 200)
        let json = try healthy.json()
        #expect(json["ok"] as? Bool == true)
        #expect(json["status"] as? String == "ok")
        #expect(json["dne"] as? String == "2026-11")
        #expect(json["ceps"] as? Int == server.dataset.count)
        #expect(json["base_gerada_em"] as? String == "2026-11-15T03:00:00Z")
        server.setDegraded(true)
        let degraded = try fetch(server, "/api/health")
        #expect(degraded.status == 503)
        #expect(try degraded.json()["status"] as? String == "degraded")
        #expect(try degraded.json()["ok"] as? Bool == false)
        server.setDegraded(false)
        #expect(try fetch(server, "/health").status == 200)
      }
      try await withServer(.init(degraded: true)) { server async throws in
        let response = try fetch(server, "/health")
        #expect(response.status == 503)
      }
    }

    @Test func cpf() async throws {
      try await withServer(.init(cpfAPIKeys: ["k1", "k2"])) { server async throws in
        let person = server.dataset.people[3]
        for path in ["/cpf/", "/v1/cpf/", "/api/v1/cpf/"] {
          let response = try fetch(server, path + person.cpf, headers: ["x-api-key": "k2"])
          #expect(response.status == 200)
          let json = try response.json()
          #expect(json["success"] as? Bool == true)
          let data = try #require(json["data"] as? [String: Any])
          #expect(data["cpf"] as? String == person.cpf)
          #expect(data["name"] as? String == person.name)
          #expect(data["nameUpper"] as? String == person.name.uppercased())
          #expect(data["gender"] as? String == person.gender)
          #expect(data["birthDate"] as? String == person.birthDate)
          #expect(data["day"] as? Int == person.day)
          #expect(data["month"] as? Int == person.month)
          #expect(data["year"] as? Int == person.year)
        }
        let noKey = try fetch(server, "/cpf/" + person.cpf)
        #expect(noKey.status == 401)
        #expect(try noKey.json()["error"] as? String == "Unauthorized")
        #expect(try noKey.json()["success"] as? Bool == false)
        #expect(
          try fetch(server, "/cpf/" + person.cpf, headers: ["x-api-key": "nope"]).status == 401)
        for bad in ["52998224724", "11111111111", "529.982.247-25", "5299822472", ""] {
          let response = try fetch(server, "/cpf/" + bad, headers: ["x-api-key": "k1"])
          #expect(response.status == 400, "\(bad)")
          #expect(try response.json()["error"] as? String == "CPF inválido")
        }
        let unknown = try fetch(server, "/cpf/52998224725", headers: ["x-api-key": "k1"])
        #expect(unknown.status == 404)
        #expect(try unknown.json()["error"] as? String == "CPF não encontrado")
      }
    }

    @Test func logRecordsEverything() async throws {
      try await withServer { server async throws in
        _ = try fetch(server, "/01001000?x=1", headers: ["X-Trace": "abc"])
        _ = try fetch(server, "/csv?ceps=01001000")
        _ = try postJSON(server, "/__mock/reset", "")
        // Reset clears the log (its own record included).
        #expect(server.requests.isEmpty)
        _ = try fetch(server, "/__mock/requests")
        _ = try fetch(server, "/health")
        server.script(.cpf, [.resetBeforeHeaders])
        _ = try? fetch(server, "/cpf/52998224725")
        let records = server.requests
        #expect(records.map(\.route) == [nil, .health, .cpf])
        #expect(records[1].path == "/health")
        server.clearLog()
        _ = try fetch(server, "/01001000?x=1", headers: ["X-Trace": "abc"])
        let record = try #require(server.requests.first)
        #expect(record.method == "GET")
        #expect(record.path == "/01001000")
        #expect(record.query == "x=1")
        #expect(record.queryItems == ["x": "1"])
        #expect(record.headers["x-trace"] == "abc")
        #expect(record.route == .cep)
        #expect(abs(record.arrival.timeIntervalSinceNow) < 10)
        #expect(server.requestCount == 4)
      }
    }

    @Test func urlSessionClient() async throws {
      try await withServer { server async throws in
        let url = server.baseURL.appendingPathComponent("01001000")
        #expect(server.baseURL.absoluteString == "http://127.0.0.1:\(server.port)")
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = 64
        let session = URLSession(configuration: configuration)
        defer { session.invalidateAndCancel() }
        let (data, response) = try await download(session, url)
        #expect((response as? HTTPURLResponse)?.statusCode == 200)
        let address = try JSONDecoder().decode(MockAddress.self, from: data)
        #expect(address.cep == "01001000")
      }
    }
  }
}
