import CepisMock
import CepisTestSupport
import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#endif

#if canImport(FoundationNetworking)
  /// `--cacert` where it cannot apply.
  @Suite("cepis --cacert with URLSession on Linux")
  struct CACertURLSessionLinuxTests {
    @Test("--cacert with URLSession on Linux is a usage error, not a bundle ignored")
    func urlSessionOnLinux() async throws {
      let directory = try temporaryDirectory()
      defer { try? FileManager.default.removeItem(at: directory) }
      let file = directory.appendingPathComponent("ca.pem")
      try Data("any bundle".utf8).write(to: file)
      let run = try await CLI.run(
        ["--transport", "urlsession", "--cacert", file.path, "lookup", "01001000"])
      #expect(run.status == 2)
      #expect(run.err.contains("need the async-http-client transport on Linux"), "\(run.err)")
    }
  }
#endif

#if AsyncHTTPClient
  @testable import CepisMock

  /// The command line over HTTPS: `--cacert` and `CEPIS_CA_BUNDLE` on AsyncHTTPClient,
  /// `cepis mock --tls`, and URLSession on Linux, which trusts the system's CA bundle only,
  /// proven in a child process that sees a bundle with the test authority bind-mounted over the
  /// system's in a private mount namespace (`unshare -m`; the machine's store is never touched).
  @Suite("cepis over HTTPS")
  struct HTTPSCommandTests {
    @Test("--cacert and CEPIS_CA_BUNDLE: a lookup over HTTPS; without them, an unknown authority")
    func cacert() async throws {
      try await withTLSMock { mock in
        let ca = try mock.authority.writeCertificate()
        defer { try? FileManager.default.removeItem(at: ca) }
        let base = ["--transport", "async-http-client", "--base-url", mock.baseURL.absoluteString]
        let flag = try await CLI.run(base + ["--cacert", ca.path, "lookup", "01001000"])
        #expect(flag.status == 0, "\(flag.err)")
        #expect(flag.out.hasPrefix("01001-000  "), "\(flag.out)")
        let env = try await CLI.run(
          base + ["lookup", "01001000"], env: ["CEPIS_CA_BUNDLE": ca.path])
        #expect(env.status == 0, "\(env.err)")
        #expect(env.out == flag.out)
        let without = try await CLI.run(base + ["lookup", "01001000"])
        #expect(without.status != 0)
        #expect(
          without.err.contains(expectedTLSMessage(.asyncHTTPClient, .valid, trusted: false)),
          "\(without.err)")
        #expect(mock.server.requests.count == 2)
      }
    }

    @Test("a --cacert file that holds no certificate is a usage error")
    func unreadableBundle() async throws {
      let directory = try temporaryDirectory()
      defer { try? FileManager.default.removeItem(at: directory) }
      let file = directory.appendingPathComponent("empty.pem")
      try Data("not a certificate".utf8).write(to: file)
      let run = try await CLI.run(
        ["--transport", "async-http-client", "--cacert", file.path, "lookup", "01001000"])
      #expect(run.status == 2, "\(run.status)")
      #expect(run.err.contains("the CA bundle: no PEM certificate found"), "\(run.err)")
      let missing = try await CLI.run(
        ["--cacert", directory.appendingPathComponent("none.pem").path, "lookup", "01001000"])
      #expect(missing.status == 2)
      #expect(missing.err.contains("cannot read the CA bundle"), "\(missing.err)")
    }

    #if canImport(FoundationNetworking)
      @Test(
        "URLSession on Linux: the system bundle with the test authority, every certificate, direct and through a proxy",
        .enabled(if: PrivateBundle.isUsable, "needs root, unshare, mount and /etc/ssl/certs"),
        arguments: [
          MockCertificateAuthority.Profile.valid, .expired, .otherHost, .clientAuthOnly,
        ], [false, true])
      func urlSessionWithSystemBundle(
        profile: MockCertificateAuthority.Profile, throughProxy: Bool
      ) async throws {
        try await withTLSMock(profile: profile) { mock in
          let proxy = throughProxy ? try ForwardProxy(upstreamPort: mock.relay.port) : nil
          defer { proxy?.stop() }
          let bundle = try PrivateBundle.write(adding: mock.authority.certificatePEM)
          defer { try? FileManager.default.removeItem(at: bundle) }
          var env = [
            "CEPIS_TRANSPORT": "urlsession", "CEPIS_BASE_URL": mock.baseURL.absoluteString,
          ]
          if let proxy { env["https_proxy"] = proxy.url }
          let run = try await PrivateBundle.run(["lookup", "01001000"], bundle: bundle, env: env)
          if profile == .valid {
            #expect(run.status == 0, "\(run.err)")
            #expect(run.out.hasPrefix("01001-000  "), "\(run.out)")
            #expect(mock.server.requests.map(wireTransport) == [.urlSession])
          } else {
            #expect(run.status != 0)
            #expect(
              run.err.contains(expectedTLSMessage(.urlSession, profile, trusted: true)),
              "\(run.err)")
            #expect(mock.server.requests.isEmpty)
          }
          #expect(mock.relay.acceptedConnections == 1)
          if let proxy {
            #expect(proxy.relayed == ["CONNECT localhost:\(mock.relay.port)"])
          }
        }
      }

      @Test(
        "URLSession on Linux over HTTPS: batch, health, both fallbacks and a CPF lookup",
        .enabled(if: PrivateBundle.isUsable, "needs root, unshare, mount and /etc/ssl/certs"),
        arguments: [false, true])
      func urlSessionEveryCommand(throughProxy: Bool) async throws {
        try await withTLSMock(.acceptingTestKey) { mock in
          let proxy = throughProxy ? try ForwardProxy(upstreamPort: mock.relay.port) : nil
          defer { proxy?.stop() }
          let bundle = try PrivateBundle.write(adding: mock.authority.certificatePEM)
          defer { try? FileManager.default.removeItem(at: bundle) }
          let url = mock.baseURL.absoluteString
          var env = ["CEPIS_TRANSPORT": "urlsession", "CEPIS_BASE_URL": url]
          if let proxy { env["https_proxy"] = proxy.url }
          let ceps = Array(mock.server.dataset.sampleCEPs.prefix(3))
          let directory = try temporaryDirectory()
          defer { try? FileManager.default.removeItem(at: directory) }
          let input = directory.appendingPathComponent("ceps.txt")
          try Data((ceps.joined(separator: "\n") + "\n").utf8).write(to: input)
          let batch = try await PrivateBundle.run(["batch", input.path], bundle: bundle, env: env)
          #expect(batch.status == 0, "\(batch.err)")
          #expect(batch.outLines.filter { !$0.isEmpty }.count == 3, "\(batch.out)")
          let health = try await PrivateBundle.run(["health"], bundle: bundle, env: env)
          #expect(health.status == 0, "\(health.err)")
          mock.server.setMode(.cep, [.status(503)])
          for provider in ["viacep", "brasilapi"] {
            let run = try await PrivateBundle.run(
              ["lookup", "--attempts", "1", "--fallback", "\(provider)=\(url)", ceps[0]],
              bundle: bundle, env: env)
            #expect(run.status == 0, "\(provider): \(run.err)")
          }
          #expect(requests(mock.server, on: .viaCEP).count == 1)
          #expect(requests(mock.server, on: .brasilAPI).count == 1)
          let person = knownPerson(mock.server)
          let cpf = try await PrivateBundle.run(
            ["cpf", "lookup", "--cpfhub-url", url, person.cpf], bundle: bundle,
            env: env.merging(["CPFHUB_API_KEY": testKey]) { $1 })
          #expect(cpf.status == 0, "\(cpf.err)")
          #expect(cpf.out.contains(person.name), "\(cpf.out)")
          #expect(mock.server.requests.allSatisfy { wireTransport($0) == .urlSession })
          if let proxy {
            let tunnel = "CONNECT localhost:\(mock.relay.port)"
            #expect(!proxy.relayed.isEmpty)
            #expect(proxy.relayed.allSatisfy { $0 == tunnel }, "\(proxy.relayed)")
          }
        }
      }
    #endif

    @Test("cepis mock --tls: an https URL and the authority's certificate that trusts it")
    func mockTLS() async throws {
      let mock = try CLI.start(["mock", "--tls"])
      defer { mock.signal(SIGTERM) }
      var lines: [String] = []
      let deadline = Date().addingTimeInterval(30)
      while lines.count < 2, Date() < deadline {
        try await Task.sleep(nanoseconds: 50_000_000)
        let text = (try? String(contentsOf: mock.stdoutURL, encoding: .utf8)) ?? ""
        lines = text.split(separator: "\n").map(String.init)
      }
      try #require(lines.count >= 2, "\(lines)")
      #expect(lines[0].hasPrefix("https://localhost:"))
      #expect(FileManager.default.fileExists(atPath: lines[1]))
      let run = try await CLI.run(
        ["--transport", "async-http-client", "--base-url", lines[0], "--cacert", lines[1]]
          + ["lookup", "01001000"])
      #expect(run.status == 0, "\(run.err)")
      #expect(run.out.hasPrefix("01001-000  "), "\(run.out)")
      mock.signal(SIGTERM)
      _ = try await mock.wait(timeout: 30)
      #expect(!FileManager.default.fileExists(atPath: lines[1]))
    }
  }

  /// Runs `cepis` where the system's CA bundle includes a test authority: in a private mount
  /// namespace (`unshare -m`, mounts private by default) with a copy of the bundle plus the
  /// authority bind-mounted over it. The test process and the machine keep their own bundle.
  enum PrivateBundle {
    static let systemBundle = "/etc/ssl/certs/ca-certificates.crt"
    static let unshare = "/usr/bin/unshare"

    /// Whether this machine can: root, `unshare` and `mount`, and a system bundle where
    /// libcurl reads it.
    static var isUsable: Bool {
      #if canImport(Glibc)
        let files = FileManager.default
        return geteuid() == 0 && files.isExecutableFile(atPath: unshare)
          && ["/usr/bin/mount", "/bin/mount"].contains { files.isExecutableFile(atPath: $0) }
          && files.fileExists(atPath: systemBundle)
      #else
        return false
      #endif
    }

    /// The system bundle with `pem` appended, in a new temporary file.
    static func write(adding pem: String) throws -> URL {
      var bundle = try Data(contentsOf: URL(fileURLWithPath: systemBundle))
      bundle.append(contentsOf: Array(("\n" + pem).utf8))
      let url = FileManager.default.temporaryDirectory
        .appendingPathComponent("cepis-bundle-\(UUID().uuidString).crt")
      try bundle.write(to: url)
      return url
    }

    /// Runs `cepis arguments` seeing `bundle` as the system's.
    static func run(
      _ arguments: [String], bundle: URL, env: [String: String]
    ) async throws -> RunResult {
      let cepis = try CLI.requireBinary()
      let script = "mount --bind \"$0\" \(systemBundle) && exec \"$@\""
      let running = try CLI.start(
        ["-m", "sh", "-c", script, bundle.path, cepis.path] + arguments, env: env,
        executable: URL(fileURLWithPath: unshare))
      return try await running.wait(timeout: 60)
    }
  }
#endif
