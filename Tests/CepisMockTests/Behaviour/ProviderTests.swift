import Foundation
import Testing

@testable import CepisMock

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Waits (up to 10 s) until `condition` holds.
func eventually(_ condition: () -> Bool) async throws -> Bool {
  let deadline = Date().addingTimeInterval(10)
  while !condition() {
    if Date() > deadline { return false }
    try await Task.sleep(nanoseconds: 10_000_000)
  }
  return true
}

extension MockTests {
  @Suite struct ProviderTests {
    @Test func viaCEPRoute() async throws {
      try await withServer { server async throws in
        let found = try fetch(server, "/ws/01001000/json/")
        #expect(found.status == 200)
        #expect(found.headers["content-type"] == "application/json; charset=utf-8")
        let json = try found.json()
        let truth = try #require(server.dataset.address(for: "01001000"))
        #expect(json["cep"] as? String == "01001-000")
        #expect(json["logradouro"] as? String == truth.logradouro)
        #expect(json["complemento"] as? String == truth.complemento)
        #expect(json["bairro"] as? String == truth.bairro)
        #expect(json["localidade"] as? String == truth.localidade)
        #expect(json["uf"] as? String == "SP")
        #expect(json["estado"] as? String == "São Paulo")
        #expect(json["regiao"] as? String == "Sudeste")
        #expect(json["ibge"] as? String == truth.ibge)
        #expect(json["ddd"] as? String == "11")
        for key in ["unidade", "gia", "siafi"] { #expect(json[key] is String, "\(key)") }
        #expect(json["geo"] == nil)

        // Any prefix, with or without the trailing slash; a synthetic CEP too.
        let synthetic = try fetch(server, "/proxy/ws/10000000/json")
        #expect(try synthetic.json()["logradouro"] as? String == "Rua Sintética 1000000")

        // Not found: 200 with today's string form.
        let missing = try fetch(server, "/ws/10000009/json/")
        #expect(missing.status == 200)
        #expect(missing.text == #"{"erro":"true"}"#)

        // ViaCEP takes 8 digits only: anything else is its 400 page.
        for bad in ["/ws/01001-000/json/", "/ws/0100100/json/", "/ws/0100100a/json/"] {
          let invalid = try fetch(server, bad)
          #expect(invalid.status == 400, "\(bad)")
          #expect(invalid.headers["content-type"]?.hasPrefix("text/html") == true)
        }
        #expect(server.requests.allSatisfy { $0.route == .viaCEP })
      }
    }

    @Test func brasilAPIRoute() async throws {
      try await withServer { server async throws in
        let truth = try #require(server.dataset.address(for: "01001000"))
        let truthGeo = try #require(truth.geo)
        let found = try fetch(server, "/api/cep/v2/01001000")
        #expect(found.status == 200)
        let json = try found.json()
        #expect(json["cep"] as? String == "01001000")
        #expect(json["state"] as? String == "SP")
        #expect(json["city"] as? String == truth.localidade)
        #expect(json["neighborhood"] as? String == truth.bairro)
        #expect(json["street"] as? String == truth.logradouro)
        #expect(json["service"] is String)
        let location = try #require(json["location"] as? [String: Any])
        #expect(location["type"] as? String == "Point")
        let coordinates = try #require(location["coordinates"] as? [String: Any])
        // Strings, as BrasilAPI sends them.
        let latitude = try #require(coordinates["latitude"] as? String)
        let longitude = try #require(coordinates["longitude"] as? String)
        #expect(Double(latitude) == truthGeo.lat)
        #expect(Double(longitude) == truthGeo.lon)

        // Without a point: empty coordinates.
        let withoutGeo = try #require(server.dataset.sampleAddresses.first { $0.geo == nil })
        let bare = try fetch(server, "/api/cep/v2/" + withoutGeo.cep).json()
        let bareLocation = try #require(bare["location"] as? [String: Any])
        #expect((bareLocation["coordinates"] as? [String: Any])?.isEmpty == true)

        // Not found: 404 service_error whose every error says so.
        let missing = try fetch(server, "/api/cep/v2/10000009")
        #expect(missing.status == 404)
        let report = try missing.json()
        #expect(report["type"] as? String == "service_error")
        #expect(report["name"] as? String == "CepPromiseError")
        let errors = try #require(report["errors"] as? [[String: Any]])
        #expect(errors.count >= 2)
        for error in errors {
          let message = (error["message"] as? String ?? "").uppercased()
          #expect(
            message.contains("NÃO ENCONTRADO") || message.contains("NAO ENCONTRADO")
              || message.contains("CEP INVÁLIDO"))
          #expect(error["service"] is String)
        }

        let invalid = try fetch(server, "/api/cep/v2/0100100")
        #expect(invalid.status == 400)
        #expect(try invalid.json()["type"] as? String == "validation_error")
        #expect(server.requests.allSatisfy { $0.route == .brasilAPI })
      }
    }

    @Test func providerFaults() async throws {
      try await withServer { server async throws in
        server.script(.brasilAPI, [.brasilAPIOutage, .brasilAPIInvalidJSON])
        let outage = try fetch(server, "/api/cep/v2/01001000")  // a CEP that exists
        #expect(outage.status == 404)
        let report = try outage.json()
        #expect(report["type"] as? String == "service_error")
        let messages = (report["errors"] as? [[String: Any]] ?? []).compactMap {
          $0["message"] as? String
        }
        #expect(messages.contains("Erro ao se conectar com o serviço ViaCEP."))
        #expect(messages.contains("A autenticacao de null falhou!"))
        let invalidJSON = try fetch(server, "/api/cep/v2/01001000")
        #expect(invalidJSON.status == 500)
        #expect(try invalidJSON.json()["type"] as? String == "invalid-json")
        #expect(try fetch(server, "/api/cep/v2/01001000").status == 200)

        server.script(.viaCEP, [.viaCEPBooleanErro, .viaCEPBooleanErro])
        #expect(try fetch(server, "/ws/10000009/json/").text == #"{"erro":true}"#)
        // On an existing CEP it changes nothing.
        #expect(try fetch(server, "/ws/01001000/json/").json()["cep"] as? String == "01001-000")

        // Provider faults do nothing (and are not counted) on other routes.
        server.script(.cep, [.brasilAPIOutage, .viaCEPBooleanErro])
        #expect(try fetch(server, "/01001000").status == 200)
        #expect(try fetch(server, "/10000009").status == 404)
        #expect(server.faultCounts["brasilAPIOutage"] == 1)
        #expect(server.faultCounts["brasilAPIInvalidJSON"] == 1)
        #expect(server.faultCounts["viaCEPBooleanErro"] == 2)
        #expect(MockFault.brasilAPIOutage.onlyRoute == .brasilAPI)
        #expect(MockFault.viaCEPBooleanErro.onlyRoute == .viaCEP)
        #expect(MockFault.csvBOM.onlyRoute == .csv)
        #expect(MockFault.status(503).onlyRoute == nil)
      }
    }

    @Test func eachProviderHasItsOwnScript() async throws {
      try await withServer { server async throws in
        // cep.is down, ViaCEP answering, BrasilAPI slow to fail.
        server.setMode(.cep, [.status(503)])
        server.script(.brasilAPI, [.status(502)])
        #expect(try fetch(server, "/01001000").status == 503)
        #expect(try fetch(server, "/ws/01001000/json/").status == 200)
        #expect(try fetch(server, "/api/cep/v2/01001000").status == 502)
        #expect(try fetch(server, "/api/cep/v2/01001000").status == 200)

        // The control endpoint takes the providers' route names.
        let scripted = try postJSON(
          server, "/__mock/script", #"{"route":"viacep","faults":"503*2,viacep-erro-bool"}"#)
        #expect(scripted.status == 200)
        #expect(try scripted.json()["faults"] as? Int == 3)
        #expect(try fetch(server, "/ws/01001000/json/").status == 503)
        #expect(try fetch(server, "/ws/01001000/json/").status == 503)
        #expect(try fetch(server, "/ws/10000009/json/").text == #"{"erro":true}"#)
        let mode = try postJSON(
          server, "/__mock/mode", #"{"route":"brasilapi","faults":["brasilapi-outage"]}"#)
        #expect(mode.status == 200)
        #expect(try fetch(server, "/api/cep/v2/01001000").status == 404)
        #expect(try fetch(server, "/api/cep/v2/01001000").status == 404)
        #expect(try fetch(server, "/01001000").status == 503)  // cep.is's mode untouched

        let log = try fetch(server, "/__mock/requests")
        let records = try #require(
          try JSONSerialization.jsonObject(with: Data(log.body)) as? [[String: Any]])
        let routes = Set(records.compactMap { $0["route"] as? String })
        #expect(routes == ["cep", "viacep", "brasilapi"])
      }
    }

    @Test func parseProviderFaults() throws {
      #expect(
        try MockServer.parseFaults("brasilapi-outage,brasilapi-invalid-json*2,viacep-erro-bool")
          == [.brasilAPIOutage, .brasilAPIInvalidJSON, .brasilAPIInvalidJSON, .viaCEPBooleanErro])
      #expect(
        try MockServer.parseFaults("brasilAPIOutage,viaCEPBooleanErro")
          == [.brasilAPIOutage, .viaCEPBooleanErro])
      #expect(MockRoute(rawValue: "viacep") == .viaCEP)
      #expect(MockRoute(rawValue: "brasilapi") == .brasilAPI)
      #expect(MockRoute.allCases.filter(\.isFallbackProvider) == [.viaCEP, .brasilAPI])
    }

    @Test func chaosLeavesProvidersAlone() async throws {
      let chaos = MockChaos(seed: 1, rate: 1, faults: [.status(503)])
      try await withServer(.init(chaos: chaos)) { server async throws in
        #expect(try fetch(server, "/01001000").status == 503)
        #expect(try fetch(server, "/ws/01001000/json/").status == 200)
        #expect(try fetch(server, "/api/cep/v2/01001000").status == 200)
        #expect(try fetch(server, "/01001000").status == 503)
      }
    }

    @Test func clientClosingDuringADelayIsLogged() async throws {
      try await withServer { server async throws in
        server.setMode(.viaCEP, [.delayHeaders(30)])
        let start = Date()
        do {
          let client = try RawClient(port: server.port)
          client.send("GET /ws/01001000/json/ HTTP/1.1\r\nHost: x\r\n\r\n")
          #expect(try await eventually { server.requests.count == 1 })
        }  // the client closes its socket here, 30 s before the answer
        #expect(try await eventually { server.requests.first?.clientClosed == true })
        // The server stopped waiting at once and let the connection go.
        #expect(try await eventually { server.openConnections == 0 })
        #expect(Date().timeIntervalSince(start) < 10)

        // A complete exchange, then a close, is not a cancellation.
        server.setMode(.viaCEP, [])
        _ = try fetch(server, "/ws/01001000/json/")
        try await Task.sleep(nanoseconds: 200_000_000)
        #expect(server.requests.count == 2)
        #expect(server.requests[1].clientClosed == false)

        let log = try fetch(server, "/__mock/requests")
        let records = try #require(
          try JSONSerialization.jsonObject(with: Data(log.body)) as? [[String: Any]])
        #expect(records.map { $0["clientClosed"] as? Bool } == [true, false, false])
      }
    }

    @Test func clientClosingDuringADribbleIsLogged() async throws {
      try await withServer { server async throws in
        server.script(.cep, [.dribble(gap: 0.2)])
        do {
          let client = try RawClient(port: server.port)
          client.send("GET /01001000 HTTP/1.1\r\nHost: x\r\n\r\n")
          #expect(client.fill())  // the head and the first byte
        }
        #expect(try await eventually { server.requests.first?.clientClosed == true })
      }
    }

    @Test func cancellationIsTrackedAcrossLogTrimming() async throws {
      var configuration = MockServer.Configuration()
      configuration.maxLogEntries = 4
      try await withServer(configuration) { server async throws in
        server.script(.cep, [.delayHeaders(30), .delayHeaders(30)])
        let first = try RawClient(port: server.port)
        first.send("GET /01001000 HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try await eventually { server.requests.count == 1 })
        // Four more requests overflow the log: the first record is trimmed away.
        for _ in 0..<4 { _ = try fetch(server, "/health") }
        #expect(server.requests.count < 5)
        #expect(server.requests.allSatisfy { $0.route == .health })
        let second = try RawClient(port: server.port)
        second.send("GET /20040020 HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try await eventually { server.requests.last?.route == .cep })
        // The trimmed request's cancellation marks nothing; the logged one marks its own.
        shutdown(first.fd, Int32(SHUT_RDWR))
        shutdown(second.fd, Int32(SHUT_RDWR))
        #expect(try await eventually { server.requests.last?.clientClosed == true })
        try await Task.sleep(nanoseconds: 200_000_000)
        #expect(server.requests.filter(\.clientClosed).map(\.path) == ["/20040020"])
      }
    }

    @Test func recordDecodingToleratesOldLogs() throws {
      let json = #"{"method":"GET","path":"/01001000","headers":{},"arrival":0,"route":"cep"}"#
      let decoder = JSONDecoder()
      decoder.dateDecodingStrategy = .secondsSince1970
      let record = try decoder.decode(MockRequestRecord.self, from: Data(json.utf8))
      #expect(record.clientClosed == false)
      #expect(record.route == .cep)
      #expect(record.query == nil)
    }
  }
}
