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
  guard let name = args.options["transport"] else { return .default }
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
    for _ in 0..<concurrency { _ = try? await bareGet(client, url) }
    let cpu0 = processCPUSeconds()
    let start = nowNanos()
    let deadline = start + UInt64(seconds * 1e9)
    let perTask: [[Double]] = await withTaskGroup(of: [Double].self) { group in
      for _ in 0..<concurrency {
        group.addTask {
          var latencies: [Double] = []
          latencies.reserveCapacity(1 << 16)
          while nowNanos() < deadline {
            let t0 = nowNanos()
            do { _ = try await bareGet(client, url) } catch { fail("ahc: \(error)") }
            latencies.append(Double(nowNanos() - t0) / 1e6)
          }
          return latencies
        }
      }
      var all: [[Double]] = []
      for await latencies in group { all.append(latencies) }
      return all
    }
    let elapsed = Double(nowNanos() - start) / 1e9
    let cpu = processCPUSeconds() - cpu0
    try? await client.shutdown()
    let latencies = perTask.flatMap { $0 }.sorted()
    report("requests", latencies.count)
    report("rps", format(Double(latencies.count) / elapsed, 1))
    report("p50_ms", format(percentile(latencies, 50), 3))
    report("p99_ms", format(percentile(latencies, 99), 3))
    report("cpu_us_per_request", format(cpu / Double(max(1, latencies.count)) * 1e6, 1))
  }

  /// The ceiling under `bulk --transport async-http-client`: the same /csv URLs, 4 in flight,
  /// bodies collected but not decoded.
  func bareAsyncHTTPClientBulk(_ args: Arguments) async {
    let base = args.string("base-url")
    let inputs = bulkWorkload(count: args.int("ceps", 1_000_000))
    let urls = batchURLs(base: base, inputs: inputs)
    let client = bareHTTPClient()
    _ = try? await bareGet(client, urls[0])
    let cpu0 = processCPUSeconds()
    let t0 = nowNanos()
    let bodyBytes: Int = await withTaskGroup(of: Int.self) { group in
      var next = 0
      var total = 0
      for _ in 0..<min(4, urls.count) {
        let url = urls[next]
        next += 1
        group.addTask { (try? await bareGet(client, url)) ?? 0 }
      }
      while let bytes = await group.next() {
        total += bytes
        if next < urls.count {
          let url = urls[next]
          next += 1
          group.addTask { (try? await bareGet(client, url)) ?? 0 }
        }
      }
      return total
    }
    let wall = Double(nowNanos() - t0) / 1e9
    let cpu = processCPUSeconds() - cpu0
    try? await client.shutdown()
    report("requests", urls.count)
    report("body_bytes", bodyBytes)
    report("wall_s", format(wall))
    report("cpu_s", format(cpu))
    report("cpu_us_per_cep", format(cpu / Double(inputs.count) * 1e6, 3))
  }
#endif
