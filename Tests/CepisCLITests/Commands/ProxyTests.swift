import Cepis
import CepisTestSupport
import Foundation
import Testing

@testable import CepisCommandLine
@testable import CepisMock

/// `--proxy` and the proxy variables, end to end through a forward proxy on 127.0.0.1.
@Suite("Proxies on the command line")
struct ProxyTests {
  /// The proxy variables cleared (empty counts as unset), so the machine's own cannot interfere.
  static let noProxyVariables = [
    "http_proxy": "", "https_proxy": "", "HTTPS_PROXY": "", "all_proxy": "", "ALL_PROXY": "",
    "no_proxy": "", "NO_PROXY": "",
  ]

  func context(_ arguments: [String]) throws -> Context {
    guard case .run(let parsed) = try Commands.parser.parse(arguments) else {
      throw CLIError(description: "not a run")
    }
    return Context(parsed: parsed, environment: [:], console: Console(environment: [:]))
  }

  @Test("--proxy is a global option: http://host[:port], the scheme optional")
  func parsing() throws {
    for command in [["lookup", "01001000"], ["batch"], ["enrich", "-"], ["health"]] {
      let parsed = try context(command + ["--proxy", "http://proxy.corp:3128"])
      #expect(try parsed.proxyURL()?.absoluteString == "http://proxy.corp:3128")
    }
    let cpf = try context(["cpf", "lookup", "--proxy=proxy.corp:8080", "39053344705"])
    #expect(try cpf.proxyURL()?.absoluteString == "http://proxy.corp:8080")
    #expect(try context(["lookup", "01001000"]).proxyURL() == nil)
  }

  @Test(
    "--proxy names an HTTP proxy or is a usage error",
    arguments: ["socks5://proxy.corp:1080", "https://proxy.corp", "http://", "http://:3128"])
  func invalidProxy(value: String) async throws {
    let parsed = try context(["lookup", "--proxy", value, "01001000"])
    #expect(throws: UsageError.self) { try parsed.proxyURL() }
    let result = try await CLI.run(["lookup", "--proxy", value, "01001000"])
    #expect(result.status == 2)
    #expect(result.err.contains("invalid proxy '\(value)'"))
  }

  @Test("lookup --proxy goes through the proxy", arguments: cliTransports)
  func lookupThroughProxy(transport: Transport.Kind) async throws {
    try await CLI.$transport.withValue(transport) {
      try await withMockServer { server in
        let proxy = try ForwardProxy(upstreamPort: try #require(server.baseURL.port))
        defer { proxy.stop() }
        // No resolver knows this host: only the proxy can have reached the mock.
        let result = try await CLI.run(
          [
            "lookup", "--base-url", "http://cep.cepis-proxy.invalid", "--proxy", proxy.url,
            "--attempts", "1", "01001000",
          ], env: Self.noProxyVariables)
        #expect(result.status == 0, "\(result.err)")
        #expect(result.out.contains("Praça da Sé"))
        #expect(proxy.relayed == [Self.proxiedForm(transport)])
        #expect(server.requests.map(\.path) == ["/01001000"])
      }
    }
  }

  @Test(
    "http_proxy from the environment is followed, and no_proxy sends a host direct",
    arguments: cliTransports)
  func environmentProxy(transport: Transport.Kind) async throws {
    try await CLI.$transport.withValue(transport) {
      try await withMockServer { server in
        let proxy = try ForwardProxy(upstreamPort: try #require(server.baseURL.port))
        defer { proxy.stop() }
        var env = Self.noProxyVariables
        env["http_proxy"] = proxy.url
        let proxied = try await CLI.run(
          ["health", "--base-url", "http://cep.cepis-proxy.invalid", "--attempts", "1"], env: env)
        #expect(proxied.status == 0, "\(proxied.err)")
        #expect(proxy.relayed.count == 1)

        env["no_proxy"] = "127.0.0.1"
        let direct = try await CLI.run(
          ["health", "--base-url", server.baseURL.absoluteString, "--attempts", "1"], env: env)
        #expect(direct.status == 0, "\(direct.err)")
        #expect(proxy.relayed.count == 1)  // nothing more went through the proxy
        #expect(server.requests.count == 2)
      }
    }
  }

  @Test("https asks the proxy for a CONNECT tunnel", arguments: cliTransports)
  func httpsThroughProxy(transport: Transport.Kind) async throws {
    try await CLI.$transport.withValue(transport) {
      try await withMockServer { server in
        let proxy = try ForwardProxy(upstreamPort: try #require(server.baseURL.port))
        defer { proxy.stop() }
        var env = Self.noProxyVariables
        env["https_proxy"] = proxy.url
        // The test proxy refuses tunnels to port 443: the command fails after asking it.
        let result = try await CLI.run(
          ["health", "--base-url", "https://cep.cepis-proxy.invalid", "--attempts", "1"], env: env)
        #expect(result.status == 3, "\(result.err)")
        #expect(proxy.relayed == ["CONNECT cep.cepis-proxy.invalid:443"])
        #expect(server.requests.isEmpty)
      }
    }
  }

  /// How the transport asks the proxy for `http://cep.cepis-proxy.invalid/01001000`.
  static func proxiedForm(_ transport: Transport.Kind) -> String {
    transport == .asyncHTTPClient
      ? "CONNECT cep.cepis-proxy.invalid:80" : "GET http://cep.cepis-proxy.invalid/01001000"
  }
}
