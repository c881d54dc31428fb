#if AsyncHTTPClient
  import AsyncHTTPClient
  import Foundation
  import NIOCore
  import NIOPosix
  import NIOSSL

  /// The AsyncHTTPClient transport: one attempt on a SwiftNIO `HTTPClient`, the body streamed
  /// in under its cap, stopped at once when cancelled or out of time.
  ///
  /// AsyncHTTPClient's own deadline covers the exchange only until the response head arrives;
  /// the body is not bounded by it. So the attempt runs in a task of its own, and the shared
  /// ``withAttemptDeadline(_:_:)`` gate resumes the caller at its deadline or cancellation and
  /// cancels that task, which closes the connection.
  ///
  /// Redirects: an `HTTPClient` follows them by its own configuration (`HTTPClient.shared`
  /// follows up to 20, to any origin, keeping custom headers such as an API key). Each request
  /// therefore carries an empty body that AsyncHTTPClient documents as not replayable, which
  /// makes it hand a redirect back instead of following it; for a `GET` with an empty body
  /// nothing extra goes on the wire (no `Content-Length`, no `Transfer-Encoding`). The 3xx
  /// reaches ``HTTPExecutor``, which applies the same-origin rule, whatever the client's
  /// configuration.
  package struct AsyncHTTPClientTransport: HTTPTransport {
    /// The client behind `Transport.default` in a build with the trait: one per process, on
    /// SwiftNIO's shared event loops, never shut down (as `HTTPClient.shared` is not).
    ///
    /// It differs from `HTTPClient.shared` where Cepis's contract needs it to: a connection that
    /// cannot be made fails the attempt at once ("connection refused", "host not found")
    /// instead of being retried inside the pool until the deadline, so the retry loop above
    /// decides, as on every transport; and redirects are never followed by the client itself.
    package static let cepisShared: HTTPClient = {
      var configuration = HTTPClient.Configuration(
        redirectConfiguration: .disallow,
        timeout: .init(connect: .seconds(30)))
      configuration.connectionPool.retryConnectionEstablishment = false
      configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 16
      return HTTPClient(
        eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }()

    /// The client requests go through.
    package let client: HTTPClient
    private let owner: Owner?

    /// A transport on `client`, which Cepis never shuts down.
    package init(client: HTTPClient) {
      self.client = client
      self.owner = nil
    }

    /// A transport on a client Cepis creates with `configuration` and shuts down when the last
    /// copy of this transport is released.
    package init(configuration: HTTPClient.Configuration) {
      let client = HTTPClient(
        eventLoopGroupProvider: .singleton, configuration: configuration)
      self.client = client
      self.owner = Owner(client: client)
    }

    /// Sends `request` once (see ``HTTPTransport``).
    package func send(_ request: HTTPRequest, timeout: TimeInterval) async throws -> HTTPResponse {
      var outgoing = HTTPClientRequest(url: request.url.absoluteString)
      outgoing.method = .GET
      for (name, value) in request.headers { outgoing.headers.add(name: name, value: value) }
      outgoing.body = .bytes(NoBytes(), length: .known(Int64(0)))
      let prepared = outgoing
      let client = self.client
      let limit = request.maxBodyBytes
      return try await withAttemptDeadline(timeout) { gate in
        let work = Task {
          let outcome: Result<HTTPResponse, Error>
          do {
            let deadline = NIODeadline.now() + .nanoseconds(Int64(min(timeout, 86_400) * 1e9))
            outcome = .success(
              try await Self.exchange(prepared, on: client, deadline: deadline, limit: limit))
          } catch let failure as HTTPFailure {
            outcome = .failure(failure)
          } catch {
            outcome = .failure(Self.map(error, timeout: timeout))
          }
          gate.finish(outcome)
        }
        gate.setAbort { work.cancel() }
      }
    }

    private static func exchange(
      _ request: HTTPClientRequest, on client: HTTPClient, deadline: NIODeadline, limit: Int
    ) async throws -> HTTPResponse {
      let response = try await client.execute(request, deadline: deadline)
      var headers: [String: String] = [:]
      for (name, value) in response.headers {
        let key = name.lowercased()
        // Repeated fields fold into one, as RFC 9110 allows (and as URLSession reports them).
        if let existing = headers[key] {
          headers[key] = existing + ", " + value
        } else {
          headers[key] = value
        }
      }
      if let declared = response.headers.first(name: "content-length"),
        let length = Int(declared.trimmingCharacters(in: .whitespaces)), length > limit
      {
        throw HTTPFailure.bodyTooLarge(limit: limit)
      }
      var body = Data()
      for try await buffer in response.body {
        if body.count + buffer.readableBytes > limit {
          throw HTTPFailure.bodyTooLarge(limit: limit)
        }
        buffer.withUnsafeReadableBytes { body.append(contentsOf: $0) }
      }
      return HTTPResponse(status: Int(response.status.code), headers: headers, body: body)
    }

    /// A short, secret-free description of what went wrong on the connection.
    private static func map(_ error: Error, timeout: TimeInterval) -> Error {
      if error is CancellationError { return error }
      if let error = error as? HTTPClientError {
        switch error {
        case .deadlineExceeded: return AttemptTimedOut(seconds: timeout)
        case .cancelled: return CancellationError()
        case .connectTimeout: return HTTPFailure.network("connect timed out")
        case .remoteConnectionClosed: return HTTPFailure.network("connection closed early")
        case .tlsHandshakeTimeout: return HTTPFailure.network("TLS handshake failed")
        case .readTimeout: return HTTPFailure.network("timed out")
        case .invalidURL, .emptyHost, .emptyScheme: return HTTPFailure.network("invalid URL")
        // A caller's client that follows redirects checks for cycles before it hands the
        // redirect back (a URL redirecting to itself).
        case .redirectCycleDetected, .redirectLimitReached: return HTTPFailure.redirectLoop
        default: return HTTPFailure.network("connection failed")
        }
      }
      if error is NIOSSLError || error is NIOSSLExtraError || error is BoringSSLError {
        return HTTPFailure.network("TLS handshake failed")
      }
      if let error = error as? NIOConnectionError {
        if error.connectionErrors.isEmpty { return HTTPFailure.network("host not found") }
        return HTTPFailure.network(
          error.connectionErrors.map { describe($0.error) }.first ?? "connection failed")
      }
      if error is SocketAddressError { return HTTPFailure.network("host not found") }
      return HTTPFailure.network(describe(error))
    }

    private static func describe(_ error: Error) -> String {
      if let error = error as? IOError {
        switch error.errnoCode {
        case ECONNREFUSED: return "connection refused"
        case ECONNRESET, EPIPE: return "connection reset"
        case ETIMEDOUT: return "timed out"
        case ENETUNREACH, EHOSTUNREACH: return "network unreachable"
        default: return "I/O error \(error.errnoCode)"
        }
      }
      if error is ChannelError { return "connection closed early" }
      if error is NIOSSLError || error is BoringSSLError { return "TLS handshake failed" }
      return "connection failed"
    }
  }

  /// An empty request body that AsyncHTTPClient cannot replay (it is a `Sequence` without
  /// contiguous storage), so that it returns a redirect instead of following it.
  private struct NoBytes: Sequence, Sendable {
    func makeIterator() -> EmptyCollection<UInt8>.Iterator { EmptyCollection().makeIterator() }
  }

  /// Shuts down a client Cepis created once nothing uses it any more.
  private final class Owner: Sendable {
    let client: HTTPClient

    init(client: HTTPClient) {
      self.client = client
    }

    deinit {
      let client = self.client
      client.shutdown { _ in }
    }
  }
#endif
