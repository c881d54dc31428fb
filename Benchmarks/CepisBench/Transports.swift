// The transport half of cepis-bench: `--transport` for the client measures, and the bare
// AsyncHTTPClient loops that are the ceiling of the AsyncHTTPClient rows.

import Cepis
import Foundation

#if AsyncHTTPClient
  import AsyncHTTPClient
  import NIOCore
#endif

/// The transport `--transport NAME` names, or the build's default.
func benchTransport(_ args: Arguments) -> Transport {
  if let cacert = args.options["cacert"] {
    // Over HTTPS to the TLS relay of `serve --tls`: a transport that trusts its authority.
    let kind = args.options["transport"].flatMap(Transport.Kind.init) ?? Transport.availableKinds[0]
    guard let pem = FileManager.default.contents(atPath: cacert),
      let made = try? Transport.make(kind, trustRoots: pem)
    else { fail("cannot trust --cacert \(cacert) on \(kind)") }
    return made
  }
  guard let name = args.options["transport"] else { return .default }
  #if AsyncHTTPClient
    // The README's idiom for a server: its own client, here SwiftNIO's shared one.
    if name == "ahc-shared" { return .asyncHTTPClient(.shared) }
  #endif
  guard let kind = Transport.Kind(rawValue: name), let transport = Transport.make(kind) else {
    fail("this cepis-bench has no transport '\(name)' (it has: \(availableTransportNames))")
  }
  return transport
}

let availableTransportNames = Transport.availableKinds.map(\.rawValue).joined(separator: ",")

/// Runs the transport-only commands; `false` for any other command.
func runTransportCommand(_ command: String, _ args: Arguments) async -> Bool {
  switch command {
  case "transports":
    report("transports", availableTransportNames)
    report("observability", hasObservability ? "yes" : "no")
    return true
  #if AsyncHTTPClient
    case "ahc-single":
      await bareAsyncHTTPClientSingle(args)
      return true
    case "ahc-bulk":
      await bareAsyncHTTPClientBulk(args)
      return true
  #endif
  default:
    return false
  }
}

#if AsyncHTTPClient
  /// A bare AsyncHTTPClient: the same connection limit as the client behind
  /// `Transport.default` (16 per host), no redirects, nothing of Cepis.
  func bareHTTPClient() -> HTTPClient {
    var configuration = HTTPClient.Configuration()
    configuration.redirectConfiguration = .disallow
    configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 16
    return HTTPClient(
      eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
  }

  /// One GET, body collected, as an AsyncHTTPClient user writes it.
  func bareGet(_ client: HTTPClient, _ url: String) async throws -> Int {
    let response = try await client.execute(HTTPClientRequest(url: url), timeout: .seconds(30))
    let body = try await response.body.collect(upTo: 16 << 20)
    return body.readableBytes
  }

  /// The ceiling under `single --transport async-http-client`: the same URL and concurrency.
  func bareAsyncHTTPClientSingle(_ args: Arguments) async {
    let base = args.string("base-url")
    let concurrency = args.int("concurrency", 1)
    let seconds = args.double("seconds", 5)
    let url = base + "/" + (args.options["cep"] ?? "10000000")
    let client = bareHTTPClient()
    await reportRequestLoop(concurrency: concurrency, seconds: seconds) {
      _ = try await bareGet(client, url)
    }
    try? await client.shutdown()
  }

  /// The ceiling under `bulk --transport async-http-client`: the same /csv URLs, 4 in flight,
  /// bodies collected but not decoded.
  func bareAsyncHTTPClientBulk(_ args: Arguments) async {
    let base = args.string("base-url")
    let inputs = bulkWorkload(count: args.int("ceps", 1_000_000))
    let urls = batchURLs(base: base, inputs: inputs)
    let client = bareHTTPClient()
    await reportBulkFetch(urls: urls, ceps: inputs.count) { url in
      (try? await bareGet(client, url)) ?? 0
    }
    try? await client.shutdown()
  }
#endif
