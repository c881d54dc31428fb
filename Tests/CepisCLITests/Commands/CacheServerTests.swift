import CepisMock
import CepisTestSupport
import Foundation
import Testing

/// `--cache redis://…`: the address cache in a Valkey or Redis server, through the `cepis`
/// binary.
@Suite("cepis binary: the address cache in a server")
struct CacheServerTests {
  #if Valkey
    @Test(
      "through redis-server as an ACL user: a repeated lookup costs no request, info counts it, clear removes only the prefix, and the password is never shown",
      .enabled(if: RedisServer.isAvailable, "redis-server is not installed"))
    func throughServer() async throws {
      // An ACL user of its own; the default user is off.
      let redis = try RedisServer(arguments: [
        "--user", "cepis", "on", ">s3cr3t-pw", "~*", "&*", "+@all", "--user", "default", "off",
      ])
      defer { redis.stop() }
      let cache = ["--cache", "redis://cepis:s3cr3t-pw@127.0.0.1:\(redis.port)/0"]
      try await withMockServer { server in
        let url = server.baseURL.absoluteString
        let first = try await CLI.run(["lookup", "--base-url", url, "01001000"] + cache)
        #expect(first.status == 0, "\(first.err)")
        let second = try await CLI.run(["lookup", "--base-url", url, "01001-000"] + cache)
        #expect(second.status == 0 && second.out == first.out)
        #expect(CacheCommandTests.lookups(server) == 1)
        #expect(server.requests.filter { $0.path == "/health" }.count == 1)

        let info = try await CLI.run(
          ["cache", "info", "--base-url", url, "--format", "json"] + cache)
        #expect(info.status == 0, "\(info.err)")
        #expect(info.out.contains(#""entries":1"#), "\(info.out)")
        #expect(info.out.contains("127.0.0.1:\(redis.port)"))

        // Another program's key beside the prefix's.
        let user = (name: "cepis", password: "s3cr3t-pw")
        _ = try redis.send(["SET", "someone-else:key", "kept"], as: user)
        let cleared = try await CLI.run(["cache", "clear", "--base-url", url] + cache)
        #expect(cleared.status == 0, "\(cleared.err)")
        let after = try await CLI.run(
          ["cache", "info", "--base-url", url, "--format", "json"] + cache)
        #expect(after.out.contains(#""entries":0"#), "\(after.out)")
        #expect(try redis.send(["EXISTS", "someone-else:key"], as: user).hasSuffix(":1\r\n"))
        #expect(try redis.send(["DBSIZE"], as: user).hasSuffix(":1\r\n"))
        for run in [first, second, info, cleared, after] {
          #expect(!run.out.contains("s3cr3t-pw") && !run.err.contains("s3cr3t-pw"))
        }
      }
    }

    @Test(
      "four enrich processes started together on one file through one server: one /health and each chunk asked about once in all, every row right",
      .enabled(if: RedisServer.isAvailable, "redis-server is not installed"))
    func fourProcessesOneServer() async throws {
      let redis = try RedisServer()
      defer { redis.stop() }
      try await withMockServer { server in
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        // 6,000 rows, 2,000 distinct CEPs (each three times, spread out): four chunks' worth,
        // small enough that four processes beside the rest of the suite stay light.
        let distinct = EnrichCacheTests.existing(0..<2_000)
        let ceps = distinct + distinct.reversed() + distinct
        let input = directory.appendingPathComponent("in.csv")
        try Data(EnrichCacheTests.csv(ceps).utf8).write(to: input)
        let url = server.baseURL.absoluteString
        let outputs = (0..<4).map { directory.appendingPathComponent("out-\($0).csv") }
        let running = try outputs.map { output in
          try CLI.start(
            [
              "enrich", input.path, "-o", output.path, "--base-url", url,
              "--cache", "redis://127.0.0.1:\(redis.port)",
            ])
        }
        for (process, run) in running.enumerated() {
          let result = try await run.wait(timeout: 120)
          #expect(result.status == 0, "process \(process): \(result.err)")
          #expect(!result.err.contains("warning"), "process \(process): \(result.err)")
        }
        for output in outputs { try EnrichCacheTests.check(output, ceps: ceps, server: server) }
        let minimum = (distinct.count + 499) / 500
        let sent = EnrichCacheTests.count(server, "/csv")
        #expect(sent >= minimum)
        #expect(
          Double(sent) <= 1.25 * Double(minimum), "\(sent) /csv requests for \(minimum) chunks")
        // A fresh fleet: the four check the edition at once, and ask /health once in all.
        #expect(EnrichCacheTests.count(server, "/health") == 1)
      }
    }

    #if AsyncHTTPClient
      @Test(
        "rediss:// with --cacert: the chain and host name verified against a CA made here; without it, a warning and no row lost",
        .enabled(if: RedisServer.isAvailable, "redis-server is not installed"))
      func overTLS() async throws {
        let authority = try MockCertificateAuthority()
        let identity = try authority.issue(.valid)
        let redis = try RedisServer(
          tls: .init(certificatePEM: identity.certificatePEM, privateKeyPEM: identity.privateKeyPEM)
        )
        defer { redis.stop() }
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let bundle = directory.appendingPathComponent("ca.pem")
        try Data(authority.certificatePEM.utf8).write(to: bundle)
        let cache = ["--cache", "rediss://localhost:\(redis.port)"]
        try await withMockServer { server in
          let url = server.baseURL.absoluteString
          let trusting = ["--cacert", bundle.path, "--transport", "async-http-client"]
          let first = try await CLI.run(
            ["lookup", "--base-url", url, "01001000"] + cache + trusting)
          #expect(first.status == 0 && !first.err.contains("warning"), "\(first.err)")
          let second = try await CLI.run(
            ["lookup", "--base-url", url, "01001000"] + cache + trusting)
          #expect(second.status == 0 && second.out == first.out)
          #expect(CacheCommandTests.lookups(server) == 1)

          // The system's roots alone do not know the authority: the cache steps aside.
          let untrusted = try await CLI.run(["lookup", "--base-url", url, "01001000"] + cache)
          #expect(untrusted.status == 0, "\(untrusted.err)")
          #expect(untrusted.err.contains("warning: address cache"), "\(untrusted.err)")
          #expect(CacheCommandTests.lookups(server) == 2)
        }
      }
    #endif

    @Test(
      "a wrong password costs no row: the lookup answers from the network, with a warning that does not show it",
      .enabled(if: RedisServer.isAvailable, "redis-server is not installed"))
    func wrongPassword() async throws {
      let redis = try RedisServer(arguments: ["--requirepass", "right-pw"])
      defer { redis.stop() }
      try await withMockServer { server in
        let run = try await CLI.run(
          [
            "lookup", "--base-url", server.baseURL.absoluteString, "01001000",
            "--cache", "redis://:wrong-pw@127.0.0.1:\(redis.port)",
          ])
        #expect(run.status == 0, "\(run.err)")
        #expect(run.out.contains("01001-000") || run.out.contains("01001000"))
        #expect(run.err.contains("warning: address cache"), "\(run.err)")
        #expect(!run.err.contains("wrong-pw") && !run.out.contains("wrong-pw"))
      }
    }
  #else
    @Test("without the Valkey trait, --cache redis://… is a usage error that names the trait")
    func withoutTheTrait() async throws {
      for given in ["redis://127.0.0.1:6379", "rediss://user:pw@cache.internal/1"] {
        let run = try await CLI.run(["lookup", "01001000", "--cache", given])
        #expect(run.status != 0)
        #expect(run.err.contains("Valkey package trait"), "\(run.err)")
        #expect(!run.err.contains("pw@"))
      }
      let fromEnvironment = try await CLI.run(
        ["lookup", "01001000"], env: ["CEPIS_CACHE": "valkey://127.0.0.1"])
      #expect(fromEnvironment.err.contains("Valkey package trait"))
    }
  #endif
}
