import Cepis
import CepisMock
import CepisTestSupport
import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

@Suite("cepis binary: commands, formats, exit statuses")
struct EndToEndTests {
  @Test func version() async throws {
    let result = try await CLI.run(["--version"])
    #expect(result.status == 0)
    let available = Transport.availableKinds
    let transports = available.map(\.rawValue).joined(separator: ", ")
    #if Observability
      let observability = "swift-log, swift-metrics, swift-distributed-tracing; --verbose"
    #else
      let observability = "--verbose"
    #endif
    #expect(
      result.out
        == "cepis 0.1.0\ntransports: \(transports) (default \(available[0]))\n"
        + "observability: \(observability)\n")
  }

  @Test(arguments: cliTransports) func theNamedTransportIsOnTheWire(transport: Transport.Kind)
    async throws
  {
    try await CLI.$transport.withValue(transport) {
      try await withMockServer(.init(cpfAPIKeys: ["k"])) { server in
        let url = server.baseURL.absoluteString
        let person = try #require(server.dataset.people.first)
        let lookup = try await CLI.run(["lookup", "--base-url", url, "01001000"])
        let cpf = try await CLI.run(
          ["cpf", "lookup", "--cpfhub-url", url, person.cpf], env: ["CPFHUB_API_KEY": "k"])
        #expect(lookup.status == 0)
        #expect(cpf.status == 0, "\(cpf.err)")
        #expect(server.requests.map(wireTransport) == [transport, transport])
      }
    }
  }

  @Test func transportOption() async throws {
    let unknown = try await CLI.run(["lookup", "--transport", "carrier-pigeon", "01001000"])
    #expect(unknown.status == 2)
    #expect(unknown.err.contains("unknown transport 'carrier-pigeon'"))
    if !cliTransports.contains(.asyncHTTPClient) {
      for arguments in [
        ["lookup", "--transport", "async-http-client", "01001000"],
        ["cpf", "lookup", "--transport", "async-http-client", "39053344705"],
      ] {
        let missing = try await CLI.run(arguments)
        #expect(missing.status == 2)
        #expect(missing.err.contains("built without the async-http-client transport"))
      }
    }
  }

  @Test(arguments: cliTransports) func unreachableAPIGetsOneOfflineHint(transport: Transport.Kind)
    async throws
  {
    try await CLI.$transport.withValue(transport) {
      // `.invalid` never resolves (RFC 2606), online or not: as on a machine without internet.
      let result = try await CLI.run(
        ["lookup", "--base-url", "http://cepis-test.invalid", "--attempts", "1", "01001-000"])
      #expect(result.status == 3)
      let lines = result.err.split(separator: "\n")
      #expect(lines.count == 2, "\(result.err)")
      #expect(lines.first == "cepis: error: network error: host not found")
      #expect(lines.last?.hasPrefix("cepis: hint: no internet? 'cepis mock'") == true)
      #expect(lines.last?.contains("--base-url") == true)
      // A CEP that is simply not found is no reason for the hint.
      try await withMockServer { server in
        let missing = try await CLI.run(
          ["lookup", "--base-url", server.baseURL.absoluteString, "10000009"])
        #expect(missing.status == 1)
        #expect(!missing.err.contains("hint"))
      }
    }
  }

  @Test(arguments: [
    [], ["lookup"], ["batch"], ["enrich"], ["health"], ["uf"], ["cpf"], ["cpf", "validate"],
    ["cpf", "lookup"], ["cnpj", "validate"], ["mock"],
  ])
  func helpOnEveryCommand(path: [String]) async throws {
    for flag in ["-h", "--help"] {
      let result = try await CLI.run(path + [flag])
      #expect(result.status == 0)
      #expect(result.out.contains("Usage: " + (["cepis"] + path).joined(separator: " ")))
      #expect(result.out.contains("Exit status:"))
      #expect(result.err.isEmpty)
    }
  }

  @Test func usageErrors() async throws {
    let none = try await CLI.run([])
    #expect(none.status == 2)
    #expect(none.out.isEmpty)
    #expect(none.err.contains("Try 'cepis --help'"))

    let command = try await CLI.run(["lokup", "01001000"])
    #expect(command.status == 2)
    #expect(command.err.contains("did you mean 'lookup'?"))

    let option = try await CLI.run(["batch", "--fromat", "csv"])
    #expect(option.status == 2)
    #expect(option.err.contains("unknown option '--fromat' (did you mean '--format'?)"))
    #expect(option.err.contains("Try 'cepis batch --help' for more information."))

    let missing = try await CLI.run(["lookup"])
    #expect(missing.status == 2)
    #expect(missing.err.contains("missing argument CEP..."))

    let format = try await CLI.run(["uf", "--format", "xml", "01001000"])
    #expect(format.status == 2)
  }

  @Test(arguments: cliTransports) func lookupInEveryFormat(transport: Transport.Kind) async throws {
    try await CLI.$transport.withValue(transport) {
      try await withMockServer { server in
        let url = server.baseURL.absoluteString
        let sample = server.dataset.address(for: "01001000")!
        let text = try await CLI.run(["lookup", "--base-url", url, "01001-000"])
        #expect(text.status == 0)
        #expect(text.out.hasPrefix("01001-000  \(sample.logradouro)"))
        #expect(!text.out.contains("\u{1B}["))  // no colour when not a terminal

        let mixed = try await CLI.run(["lookup", "--base-url", url, "01001000", "10000009", "abc"])
        #expect(mixed.status == 1)
        #expect(mixed.outLines.count == 2)  // one address and the final newline
        #expect(mixed.err.contains("CEP 10000-009 not found"))
        #expect(mixed.err.contains("invalid CEP 'abc'"))

        let json = try await CLI.run([
          "lookup", "--base-url=\(url)", "--format", "json", "01001000", "10000009",
        ])
        #expect(json.status == 1)
        let array = try JSONSerialization.jsonObject(with: json.stdout) as? [[String: Any]]
        #expect(array?.count == 2)
        #expect(array?[0]["status"] as? String == "ok")
        #expect(array?[0]["localidade"] as? String == sample.localidade)
        #expect(array?[1]["status"] as? String == "not_found")

        let ndjson = try await CLI.run([
          "lookup", "--base-url", url, "--format", "ndjson", "01001000", "abc",
        ])
        #expect(ndjson.status == 1)
        let lines = ndjson.out.split(separator: "\n")
        #expect(lines.count == 2)
        for line in lines {
          #expect((try? JSONSerialization.jsonObject(with: Data(line.utf8))) != nil)
        }
        #expect(lines[1].contains("\"status\":\"invalid\""))

        let csv = try await CLI.run(["lookup", "--base-url", url, "--format", "csv", "01001000"])
        #expect(csv.status == 0)
        #expect(csv.out.hasPrefix("input,cep,status,logradouro,"))
        #expect(csv.out.contains("\r\n01001000,01001000,ok,"))
        #expect(csv.stdout.prefix(3) != Data([0xEF, 0xBB, 0xBF]))
      }
    }
  }

  @Test(arguments: cliTransports) func unreachableAPIExitsWith3(transport: Transport.Kind)
    async throws
  {
    try await CLI.$transport.withValue(transport) {
      // Port 1 (tcpmux) has no listener: a stopped mock's port could be reused at once by a
      // server that another test starts in parallel.
      let url = "http://127.0.0.1:1"
      let lookup = try await CLI.run(["lookup", "--base-url", url, "--attempts", "2", "01001000"])
      #expect(lookup.status == 3)
      #expect(lookup.err.contains("network error"))
      let health = try await CLI.run(["health", "--attempts", "1"], env: ["CEPIS_BASE_URL": url])
      #expect(health.status == 3)
      let batch = try await CLI.run(
        ["batch", "--base-url", url, "--attempts", "1", "--format", "csv"],
        stdin: Data("01001000\nabc\n".utf8))
      #expect(batch.status == 3)
      #expect(batch.out.contains("01001000,01001000,error: network_error"))
      #expect(batch.out.contains("abc,,invalid"))
    }
  }

  @Test(arguments: cliTransports) func serverErrorsAfterRetriesExitWith3(transport: Transport.Kind)
    async throws
  {
    try await CLI.$transport.withValue(transport) {
      try await withMockServer { server in
        server.setMode(.cep, [.status(503)])
        let result = try await CLI.run([
          "lookup", "--base-url", server.baseURL.absoluteString, "--attempts", "2", "01001000",
        ])
        #expect(result.status == 3)
        #expect(result.err.contains("server error 503"))
        #expect(server.requests.filter { $0.path.hasSuffix("01001000") }.count == 2)
      }
    }
  }

  @Test(arguments: cliTransports) func batchKeepsOrderAndUsesTheBatchEndpoint(
    transport: Transport.Kind
  )
    async throws
  {
    try await CLI.$transport.withValue(transport) {
      try await withMockServer { server in
        let input = "10000001\n01001-000\n\nabc\n10000009\n10000001\n"
        let ndjson = try await CLI.run(
          ["batch", "--base-url", server.baseURL.absoluteString, "--format", "ndjson"],
          stdin: Data(input.utf8))
        #expect(ndjson.status == 1)
        let statuses = ndjson.out.split(separator: "\n").map { line -> String in
          let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
          return (object?["input"] as? String ?? "?") + "=" + (object?["status"] as? String ?? "?")
        }
        #expect(
          statuses == [
            "10000001=ok", "01001-000=ok", "=invalid", "abc=invalid", "10000009=not_found",
            "10000001=ok",
          ])
        #expect(server.requests.filter { $0.path.hasSuffix("/csv") }.count == 1)
        #expect(server.requests.filter { !$0.path.hasSuffix("/csv") }.isEmpty)

        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("ceps.txt")
        try Data("01001000\r\n10000001".utf8).write(to: file)
        let text = try await CLI.run([
          "batch", "--base-url", server.baseURL.absoluteString, file.path,
        ])
        #expect(text.status == 0)
        #expect(text.outLines.count == 3)
        #expect(text.outLines[0].hasPrefix("01001-000  "))
        #expect(text.outLines[1].hasPrefix("10000-001  Rua Sintética"))

        let json = try await CLI.run(
          ["batch", "--base-url", server.baseURL.absoluteString, "--format", "json", "-"],
          stdin: Data())
        #expect(json.status == 0)
        #expect(json.out == "[]\n")
      }
    }
  }

  @Test(arguments: cliTransports) func healthStatuses(transport: Transport.Kind) async throws {
    try await CLI.$transport.withValue(transport) {
      try await withMockServer { server in
        let url = server.baseURL.absoluteString
        let ok = try await CLI.run(["health", "--base-url", url])
        #expect(ok.status == 0)
        #expect(ok.out.hasPrefix("ok  DNE "))
        let json = try await CLI.run(["health", "--format", "json"], env: ["CEPIS_BASE_URL": url])
        #expect(json.status == 0)
        let object = try JSONSerialization.jsonObject(with: json.stdout) as? [String: Any]
        #expect(object?["ok"] as? Bool == true)
        server.setDegraded(true)
        let degraded = try await CLI.run(["health", "--base-url", url, "--format", "csv"])
        #expect(degraded.status == 1)
        #expect(degraded.out.hasPrefix("ok,status,dne,ceps,base_gerada_em,base_url\r\nfalse,"))
      }
    }
  }

  @Test func offlineCommands() async throws {
    let uf = try await CLI.run(["uf", "01001-000", "00000000", "x1"])
    #expect(uf.status == 1)
    #expect(uf.out == "01001-000  SP  São Paulo  (Sudeste)\n")
    #expect(uf.err.contains("00000-000 is in no state's CEP range"))
    #expect(uf.err.contains("invalid CEP 'x1'"))

    let ufJSON = try await CLI.run(["uf", "--format", "ndjson", "70040-010"])
    #expect(ufJSON.status == 0)
    #expect(ufJSON.out.contains("\"uf\":\"DF\""))

    let cpf = try await CLI.run(["cpf", "validate", "39053344705"])
    #expect(cpf.status == 0)
    #expect(cpf.out == "390.533.447-05\n")
    let badCPF = try await CLI.run(["cpf", "validate", "390.533.447-06", "--format", "csv"])
    #expect(badCPF.status == 1)
    #expect(badCPF.out.contains("390.533.447-06,false,,"))
    #expect(badCPF.out.contains("check digits"))

    let cnpj = try await CLI.run(["cnpj", "validate", "11222333000181", "--format", "json"])
    #expect(cnpj.status == 0)
    #expect(cnpj.out.contains("\"formatted\":\"11.222.333/0001-81\""))
    let badCNPJ = try await CLI.run(["cnpj", "validate", "11222333000180"])
    #expect(badCNPJ.status == 1)
    #expect(badCNPJ.out.isEmpty)
    #expect(badCNPJ.err.contains("CNPJ"))
  }

  @Test(arguments: cliTransports) func cpfLookupThroughCPFHub(transport: Transport.Kind)
    async throws
  {
    try await CLI.$transport.withValue(transport) {
      let configuration = MockServer.Configuration(cpfAPIKeys: ["right-key"])
      try await withMockServer(configuration) { server in
        let url = server.baseURL.absoluteString
        let person = try #require(server.dataset.people.first)
        let ok = try await CLI.run(
          ["cpf", "lookup", "--cpfhub-url", url, person.cpf],
          env: ["CPFHUB_API_KEY": "right-key"])
        #expect(ok.status == 0)
        #expect(ok.out.contains(person.name))
        #expect(ok.out.contains(person.cpf.prefix(3) + "." + person.cpf.dropFirst(3).prefix(3)))
        let json = try await CLI.run(
          ["cpf", "lookup", "--format", "json", person.cpf],
          env: ["CPFHUB_API_KEY": "right-key", "CPFHUB_BASE_URL": url])
        #expect(json.status == 0)
        let object = try JSONSerialization.jsonObject(with: json.stdout) as? [String: Any]
        #expect(object?["cpf"] as? String == person.cpf)
        #expect(object?["name"] as? String == person.name)

        let secret = "very-secret-key-4242"
        let rejected = try await CLI.run(
          ["cpf", "lookup", "--cpfhub-url", url, person.cpf], env: ["CPFHUB_API_KEY": secret])
        #expect(rejected.status == 2)
        #expect(!rejected.err.contains(secret))
        #expect(!rejected.out.contains(secret))
        #expect(rejected.err.contains("rejected the API key"))

        let missing = try await CLI.run(["cpf", "lookup", "--cpfhub-url", url, person.cpf])
        #expect(missing.status == 2)
        #expect(missing.err.contains("CPFHUB_API_KEY"))

        let invalid = try await CLI.run(
          ["cpf", "lookup", "--cpfhub-url", url, "123"], env: ["CPFHUB_API_KEY": "right-key"])
        #expect(invalid.status == 1)
        #expect(server.requests.filter { $0.path.contains("/cpf/") }.count == 3)
      }
    }
  }

  @Test func mockCommandPrintsItsURLAndStopsOnSignal() async throws {
    let directory = try temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let stdout = directory.appendingPathComponent("mock.out")
    for signal in [SIGINT, SIGTERM] {
      let running = try CLI.start(["mock", "--port", "0"], stdoutFile: stdout)
      var url: String?
      let deadline = Date().addingTimeInterval(30)
      while url == nil && Date() < deadline {
        let text = (try? String(contentsOf: stdout, encoding: .utf8)) ?? ""
        if let line = text.split(separator: "\n").first, text.contains("\n") { url = String(line) }
        try await Task.sleep(nanoseconds: 20_000_000)
      }
      guard let url else {
        running.signal(SIGKILL)
        _ = try? await running.wait(timeout: 5)
        Issue.record("cepis mock printed no URL")
        return
      }
      #expect(url.hasPrefix("http://127.0.0.1:"))
      let lookup = try await CLI.run(["lookup", "--base-url", url, "01001000"])
      #expect(lookup.status == 0)
      running.signal(signal)
      let result = try await running.wait(timeout: 30)
      #expect(result.status == 0)
    }
  }

  @Test func mockOptionsAreValidated() async throws {
    let chaos = try await CLI.run(["mock", "--chaos", "7"])
    #expect(chaos.status == 2)
    #expect(chaos.err.contains("SEED:RATE"))
    let port = try await CLI.run(["mock", "--port", "70000"])
    #expect(port.status == 2)
  }
}
