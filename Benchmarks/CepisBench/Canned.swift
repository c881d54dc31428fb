// `bulk --transport canned`: the engine and the decoder alone, with no network. Every `/csv`
// answer of the workload is fetched from the mock once, before the clock starts; the client
// then runs over a transport that hands each request its stored answer at once. What the
// client spends then is what it spends on its own, whatever the transport.

import CepisHTTP
import Foundation

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif

/// Answers each request with the response fetched for its URL beforehand; 404 for any other.
struct CannedTransport: HTTPTransport {
  let responses: [String: HTTPResponse]

  func send(_ request: HTTPRequest, timeout: TimeInterval) async throws -> HTTPResponse {
    responses[request.url.absoluteString]
      ?? HTTPResponse(status: 404, headers: [:], body: Data())
  }

  /// The answers of `urls`, fetched through the build's default transport, 4 at a time.
  static func fetching(_ urls: [String]) async -> CannedTransport {
    let base = Transport.default.base
    var responses: [String: HTTPResponse] = [:]
    await forEachFourInFlight(urls) { url -> HTTPResponse? in
      guard let parsed = URL(string: url) else { return nil }
      let request = HTTPRequest(url: parsed, headers: [], maxBodyBytes: 64 << 20)
      return try? await base.send(request, timeout: 60)
    } _: { url, response in
      guard let response, response.status == 200 else { fail("could not fetch \(url)") }
      responses[url] = response
    }
    return CannedTransport(responses: responses)
  }
}
