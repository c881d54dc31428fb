import Foundation
import Testing

@testable import CepisMock

extension MockTests {
  @Suite struct ControlTests {
    @Test func parseRedirectFaults() throws {
      let faults = try MockServer.parseFaults(
        #"redirect=/moved/01001000,redirect308="http://localhost:8080/x""#)
      #expect(
        faults == [
          .redirect(status: 302, location: "/moved/01001000"),
          .redirect(status: 308, location: "http://localhost:8080/x"),
        ])
      #expect(throws: MockFaultSpecError.self) { try MockServer.parseFaults("redirect") }
    }

    @Test func parseFaultsSpec() throws {
      let faults = try MockServer.parseFaults(
        "503*2, 429:retry-after=2,truncated,reset,reset-after,html,dribble=0.05,delay=0.3,csv-bom")
      #expect(
        faults == [
          .status(503), .status(503), .status(429, retryAfter: "2"), .truncatedBody,
          .resetBeforeHeaders, .resetAfterHeaders, .htmlPortal, .dribble(gap: 0.05),
          .delayHeaders(0.3), .csvBOM,
        ])
      let more = try MockServer.parseFaults(
        #"503:retry-after="Wed, 21 Oct 2015 07:28:00 GMT",status=500:body=x,wrong-shape,"#
          + "oversized=10,endless,giant-headers=5,invalid-utf8,success-false,csv-reordered,"
          + "csvOmitMissing,csv-duplicated,csv-masked,csv-shuffled,csv-extra,csv-crlf,normal,"
          + "truncatedBody,dribble")
      #expect(
        more == [
          .status(503, retryAfter: "Wed, 21 Oct 2015 07:28:00 GMT"), .status(500, body: "x"),
          .wrongShapeJSON, .oversizedBody(bytes: 10), .endlessChunked, .giantHeaders(bytes: 5),
          .invalidUTF8, .successFalse, .csvReordered, .csvOmitMissing, .csvDuplicatedRows,
          .csvMaskedCEPs, .csvColumnsShuffled, .csvExtraRows, .csvCRLF, .normal, .truncatedBody,
          .dribble(gap: 0.05),
        ])
      #expect(try MockServer.parseFaults("") == [])
      for bad in ["bogus", "999", "delay", "delay=abc", "503:colour=red", "html:x=1", "503*x"] {
        #expect(throws: MockFaultSpecError.self, "\(bad)") { try MockServer.parseFaults(bad) }
      }
    }

    @Test func scriptAndModeEndpoints() async throws {
      try await withServer { server async throws in
        let scripted = try postJSON(
          server, "/__mock/script",
          #"{"route":"csv","faults":[{"status":503,"retryAfter":"1"},{"kind":"truncatedBody"},"#
            + #"{"kind":"delayHeaders","seconds":0.05},"429"]}"#)
        #expect(scripted.status == 200)
        #expect(try scripted.json()["faults"] as? Int == 4)
        let first = try fetch(server, "/csv?ceps=01001000")
        #expect(first.status == 503)
        #expect(first.headers["retry-after"] == "1")
        let truncated = try RawClient(port: server.port)
        truncated.send("GET /csv?ceps=01001000 HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(throws: RawError.self) { try truncated.readResponse() }
        #expect(try fetch(server, "/csv?ceps=01001000").status == 200)
        #expect(try fetch(server, "/csv?ceps=01001000").status == 429)
        #expect(try fetch(server, "/csv?ceps=01001000").status == 200)

        let mode = try postJSON(server, "/__mock/mode", #"{"route":"cep","faults":"html"}"#)
        #expect(mode.status == 200)
        #expect(
          try fetch(server, "/01001000").headers["content-type"]?.hasPrefix("text/html") == true)
        #expect(try postJSON(server, "/__mock/mode", #"{"route":"cep","faults":[]}"#).status == 200)
        #expect(try fetch(server, "/01001000").status == 200)

        let degraded = try postJSON(server, "/__mock/degraded", #"{"degraded":true}"#)
        #expect(degraded.status == 200)
        #expect(try fetch(server, "/health").status == 503)
        #expect(try postJSON(server, "/__mock/reset", "").status == 200)
        #expect(try fetch(server, "/health").status == 200)

        for body in [
          #"{"route":"nope","faults":[]}"#, "not json", #"{"route":"cep","faults":["bogus"]}"#,
        ] {
          #expect(try postJSON(server, "/__mock/script", body).status == 400)
        }
        #expect(try postJSON(server, "/__mock/degraded", "{}").status == 400)
        #expect(try fetch(server, "/health").json()["dne"] as? String == "2026-11")
        #expect(try postJSON(server, "/__mock/edition", #"{"dne":"2026-12"}"#).status == 200)
        #expect(try fetch(server, "/health").json()["dne"] as? String == "2026-12")
        #expect(try postJSON(server, "/__mock/edition", "{}").status == 400)
        server.reset()
        #expect(try fetch(server, "/health").json()["dne"] as? String == "2026-11")
        #expect(try fetch(server, "/__mock/script").status == 405)
        #expect(try fetch(server, "/__mock/unknown").status == 404)
      }
    }

    @Test func requestsEndpoint() async throws {
      try await withServer { server async throws in
        _ = try fetch(server, "/api/01001000?a=b", headers: ["X-Test": "1"])
        let response = try fetch(server, "/__mock/requests")
        #expect(response.status == 200)
        let log = try #require(
          try JSONSerialization.jsonObject(with: Data(response.body)) as? [[String: Any]])
        #expect(log.count == 2)
        #expect(log[0]["path"] as? String == "/api/01001000")
        #expect(log[0]["query"] as? String == "a=b")
        #expect(log[0]["route"] as? String == "cep")
        #expect((log[0]["headers"] as? [String: String])?["x-test"] == "1")
        #expect(log[0]["arrival"] is Double)
        #expect(log[1]["route"] == nil)
        #expect(server.requests.last?.route == nil)
      }
    }
  }
}
